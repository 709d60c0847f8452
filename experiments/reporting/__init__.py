"""Reading finished points back: report.py runs the sections of sections/ (each computes a
result for analysis.json, renders Markdown, draws its figures) on lib/'s statistics."""

"""Reading finished points back: statistics, tables, plots and the comparison figure."""

"""Scoring generators: classifiers, IS/FID/KID and recognisability metrics, reference
statistics, and the protocol record that travels with every score."""

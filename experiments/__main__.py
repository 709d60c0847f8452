"""python -m experiments: the study's command line (see experiments/cli.py)."""
from experiments.cli import run

if __name__ == "__main__":
    run()

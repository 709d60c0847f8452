"""matplotlib's pyplot for writing figure files: the Agg backend (no display needed, none
opened) is chosen here, once, before pyplot is first imported. Every module that draws takes
`plt` from here."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["plt"]

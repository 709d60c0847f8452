"""The one family of user errors: bad input, missing data or weights, unusable hardware.

The command line prints such an error as one line (what went wrong, why, what to do) and exits
with code 2; any other exception is a bug and keeps its traceback.
"""


class UserError(Exception):
    """Base of every error a user can fix; subclasses also derive from the builtin they refine
    (ValueError, RuntimeError, FileNotFoundError), so library callers can catch either."""


class WeightsError(UserError, ValueError):
    """Model weights are missing, corrupt, or do not match their recorded SHA-256."""

"""The one error type of the data layer: what was missing or broken, and how to get it."""

from common.errors import UserError


class DatasetError(UserError, RuntimeError):
    """A dataset is missing, unprepared or corrupt.

    The message always names the path that was tried and how to obtain the data, because the
    suite never downloads at run time (the study machines are offline by design).
    """

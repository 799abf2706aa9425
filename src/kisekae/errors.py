"""Errors raised at kisekae's input boundaries.

Every error a user can trigger with bad input is a :class:`KisekaeError`. The command line
prints it as one line (``error: <source>: <problem>``) and exits with status 2, without a
traceback.
"""

from __future__ import annotations


class KisekaeError(ValueError):
    """Bad input, with the file (or argument) it came from.

    Parameters
    ----------
    message : str
        What is wrong, in plain words.
    source : str or os.PathLike, optional
        The file, argument or array name the problem was found in.
    """

    def __init__(self, message: str, source=None):
        self.message = str(message)
        self.source = None if source is None else str(source)
        super().__init__(f"{self.source}: {self.message}" if self.source else self.message)

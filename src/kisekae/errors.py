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


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-:| ")


def quote_name(value, limit: int = 64) -> str:
    """A name read from a file, quoted for an error message only when it looks like a name.

    Error messages never echo file content: a file that is not what it claims to be (a system
    file named by a hostile asset, say) must not have its text copied into a terminal, a log or
    a result store. A short identifier (ASCII letters, digits and ``_ . - : |`` and spaces, at
    most ``limit`` characters) is shown as ``repr``; anything else only by its type and length.

    Parameters
    ----------
    value : object
        The name as read (a bone name, a keyword).
    limit : int
        Longest name shown, in characters.

    Returns
    -------
    str
        ``'thigh_l'``, or for example ``a 120-character name`` / ``a list``.
    """
    if isinstance(value, str):
        if value and len(value) <= limit and set(value) <= _NAME_CHARS:
            return repr(value)
        return f"a {len(value)}-character name"
    return f"a {type(value).__name__}"


def unexpected_error_text(exc: BaseException) -> str:
    """One line for an exception that is not a :class:`KisekaeError`, without its message.

    The message of an arbitrary exception may quote the file being read (``could not convert
    string to float: '...'``), so it is left out: the line names the exception type and the
    innermost place it was raised (``module:line``). An ``OSError`` keeps its file name and the
    system's message, and an ``ArithmeticError`` (a numerical failure) its message; neither
    quotes file content.

    Parameters
    ----------
    exc : BaseException

    Returns
    -------
    str
        For example ``internal error (IndexError at kisekae.fit.exact:412)`` or
        ``PermissionError: /data/x.obj: Permission denied``.
    """
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return f"{type(exc).__name__}: {where}{exc.strerror}"
    if isinstance(exc, ArithmeticError) and str(exc):  # raised by computation, never quotes input text
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    tb = exc.__traceback__
    place = ""
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "?")
        place = f" at {module}:{tb.tb_lineno}"
        tb = tb.tb_next
    return f"internal error ({type(exc).__name__}{place})"

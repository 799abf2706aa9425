"""JSON files read from users: one-line errors for every way a file can be wrong.

Pose files, wound sidecars and other JSON inputs go through :func:`read_json`, so a missing,
binary, malformed, huge or absurdly nested file, duplicate keys and the non-standard constants
``NaN``/``Infinity`` all end in a :class:`~kisekae.errors.KisekaeError` naming the file, never in
a traceback. Messages give positions, never the file's text.
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import KisekaeError, quote_name

#: Refuse JSON files larger than this many bytes.
MAX_JSON_BYTES = 64 * 1024 * 1024


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"a duplicate key {quote_name(k)} in one object")
        out[k] = v
    return out


def _no_constant(name):
    raise ValueError(f"{name}, which is not a JSON number")


def parse_json(text: str, source) -> object:
    """Decode JSON ``text`` (see :func:`read_json`); ``source`` names it in errors."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        # JSONDecodeError's own message is a fixed phrase and a position; it never quotes the text.
        raise KisekaeError(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", source) from None
    except RecursionError:
        raise KisekaeError("JSON arrays or objects nested too deeply to read", source) from None
    except ValueError as exc:  # raised by the hooks above: duplicate keys, NaN/Infinity
        raise KisekaeError(f"JSON with {exc}", source) from None


def read_json(path, *, max_bytes: int = MAX_JSON_BYTES) -> object:
    """Read a JSON file given by a user.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    max_bytes : int
        Largest accepted file size, bytes.

    Returns
    -------
    object
        The decoded document (dicts, lists, str, int, float, bool, None).

    Raises
    ------
    KisekaeError
        The file is missing, a directory, over ``max_bytes``, not UTF-8, not JSON, nested too
        deeply for Python to decode, has a key twice in one object, or uses ``NaN``/``Infinity``.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise KisekaeError("is a directory, expected a JSON file", path)
        if size > max_bytes:
            raise KisekaeError(f"file is {size} bytes, over the {max_bytes} byte limit", path)
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise KisekaeError("file not found", path) from None
    except UnicodeDecodeError as exc:
        raise KisekaeError(f"not a UTF-8 text file (byte {exc.start})", path) from None
    return parse_json(text, path)

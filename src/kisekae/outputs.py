"""The one overwrite policy for everything kisekae writes.

A command lists every path it is going to write and calls :func:`check_outputs` *before* it
writes anything (folders included). Nothing that exists is overwritten unless the user passed
``--force``; a refusal names the first existing file and how many more there are, and leaves the
disk exactly as it was. Some problems are refused even with ``--force``, because no overwrite can
fix them: an output that is a folder, an output folder that is a file, and two outputs of one
command with the same path.

This module sits beside :mod:`kisekae.errors` and :mod:`kisekae.validate` at the bottom of the
package, so library writers (``batch``, ``wound``) and the command line share it.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import KisekaeError

#: What every refusal tells the user to do.
FORCE_HINT = "pass --force to overwrite"


def check_outputs(files=(), *, force: bool = False, folders=(), whole_folders=()) -> list:
    """Refuse, before anything is written, to overwrite existing outputs.

    Parameters
    ----------
    files : iterable of str or os.PathLike
        Every file the command will write. Each must not exist (or ``force``), must not be a
        folder, and its parent must be an existing folder or lie inside one of ``folders`` or
        ``whole_folders``.
    force : bool
        Allow existing *files* to be overwritten (``--force``).
    folders : iterable of str or os.PathLike
        Folders the command creates (with parents) when missing and writes the ``files`` into.
        They may exist and hold other files; an existing non-folder is refused.
    whole_folders : iterable of str or os.PathLike
        Folders the command fills with files whose names depend on what it computes (the demo
        report). Each must be missing or empty, or ``force``.

    Returns
    -------
    list of Path
        ``files`` as paths, in order.

    Raises
    ------
    KisekaeError
        One line naming the path and the problem: an existing file without ``force`` (with the
        number of further existing outputs), a folder where a file goes, a file where a folder
        goes, a missing parent folder, or two outputs with the same path.
    """
    files = [Path(f) for f in files]
    made = [Path(d) for d in folders] + [Path(d) for d in whole_folders]
    for d in made:
        _folder_or_missing(d)
    for d in whole_folders:
        d = Path(d)
        if d.is_dir() and not force and any(d.iterdir()):
            raise KisekaeError(f"the output folder is not empty; {FORCE_HINT} the files in it", d)
    seen = {}
    existing = []
    for f in files:
        key = os.path.normcase(os.path.abspath(f))
        if key in seen:
            raise KisekaeError("two outputs of this command have the same path (a name given twice?)", f)
        seen[key] = f
        if f.is_dir():
            raise KisekaeError("is a folder; an output file goes here", f)
        parent = f.parent
        if not any(parent == d or d in parent.parents for d in made):
            if not parent.is_dir():
                _folder_or_missing(parent)
                raise KisekaeError("the output's folder does not exist", f)
        else:
            _folder_or_missing(parent)
        if os.path.lexists(f):
            existing.append(f)
    if existing and not force:
        more = f" (and {len(existing) - 1} more of this command's outputs)" if len(existing) > 1 else ""
        raise KisekaeError(f"file exists{more}; {FORCE_HINT}", existing[0])
    return files


def _folder_or_missing(path: Path) -> None:
    """Raise when ``path`` or one of its parents exists but is not a folder."""
    for p in (path, *path.parents):
        if os.path.lexists(p):
            if not p.is_dir():
                raise KisekaeError("is a file, not a folder; outputs cannot go inside it", p)
            return


"""A disk cache for bakes that take seconds and depend only on their inputs (the garments' surface candidates).

A bake is stored as one ``.npz`` file named by the SHA-256 of everything it was made from (arrays with their
dtype and shape, strings, numbers), so a changed input is a new file, never a stale hit. Where the cache lives:

- ``KISEKAE_CACHE_DIR``: that folder;
- otherwise ``$XDG_CACHE_HOME/kisekae`` or ``~/.cache/kisekae``;
- ``KISEKAE_CACHE_DIR=off`` (or ``0``, ``none``, an empty value): no disk cache, every process bakes again.

Files are written to a temporary name and renamed into place, so two processes baking the same thing at once (batch
workers, pytest-xdist) both end with one complete file. A file that cannot be read back (cut short, another
format) is baked again and replaced, with a note on stderr; a folder that cannot be written leaves the bake in
memory only. Deleting the folder is always safe.

Example::

    from kisekae.bake_cache import cached_arrays
    out = cached_arrays("surface-candidates", [rest_vertices, faces, "k=16"], lambda: {"triangles": bake()})
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

#: Values of ``KISEKAE_CACHE_DIR`` that turn the disk cache off.
OFF = ("", "0", "off", "none", "false", "no")


def cache_dir() -> Path | None:
    """The cache folder (see the module docstring), or None when the disk cache is off."""
    value = os.environ.get("KISEKAE_CACHE_DIR")
    if value is not None:
        return None if value.strip().lower() in OFF else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kisekae"


def input_hash(parts) -> str:
    """SHA-256 hex digest of ``parts``: arrays (dtype, shape and bytes), strings, numbers, None, nested sequences.

    Raises
    ------
    TypeError
        For any other kind of value (a key must say exactly what the bake depends on).
    """
    h = hashlib.sha256()

    def add(value) -> None:
        if isinstance(value, np.ndarray):
            a = np.ascontiguousarray(value)
            h.update(f"array:{a.dtype.str}:{a.shape}:".encode())
            h.update(a.tobytes())
        elif isinstance(value, str):
            h.update(f"str:{len(value)}:{value}".encode())
        elif isinstance(value, (bool, int, float, np.integer, np.floating)) or value is None:
            h.update(f"{type(value).__name__}:{value!r};".encode())
        elif isinstance(value, (list, tuple)):
            h.update(f"seq:{len(value)}(".encode())
            for v in value:
                add(v)
            h.update(b")")
        else:
            raise TypeError(f"cannot hash a {type(value).__name__} into a cache key")

    add(list(parts))
    return h.hexdigest()


def cache_path(kind: str, parts) -> Path | None:
    """Where the bake of ``kind`` from ``parts`` is stored (None when the disk cache is off)."""
    root = cache_dir()
    return None if root is None else root / kind / f"{input_hash(parts)}.npz"


def cached_arrays(kind: str, parts, make) -> dict:
    """``make()`` (a dict of NumPy arrays), read from the disk cache when it was baked before from the same ``parts``.

    Parameters
    ----------
    kind : str, the bake's name (a subfolder of the cache)
    parts : sequence, everything the bake depends on (see :func:`input_hash`)
    make : callable () -> dict str -> ndarray, the bake

    Returns
    -------
    dict str -> ndarray, the same arrays ``make()`` returned (read back bit for bit)
    """
    path = cache_path(kind, parts)
    if path is not None and path.exists():
        try:
            with np.load(path, allow_pickle=False) as data:
                return {k: data[k] for k in data.files}
        except Exception as exc:  # noqa: BLE001 - any unreadable file is baked again
            print(f"kisekae: {path}: unreadable cached bake ({type(exc).__name__}); baking it again",
                  file=sys.stderr)
    arrays = make()
    if path is not None:
        _write(path, arrays)
    return arrays


def _write(path: Path, arrays: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".bake-", suffix=".npz", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        pass  # a read-only or full disk: the bake stays in memory

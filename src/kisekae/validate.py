"""Small input checks shared by every public function (shapes, dtypes, finiteness, paths inside assets)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from .errors import KisekaeError


def as_points(a, name: str = "points", *, dtype=np.float64, finite: bool = True) -> np.ndarray:
    """Return ``a`` as a C-contiguous ``(N, 3)`` float array, or raise :class:`KisekaeError`."""
    try:
        arr = np.ascontiguousarray(a, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise KisekaeError(f"cannot read as numbers: {exc}", name) from None
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise KisekaeError(f"expected shape (N, 3), got {arr.shape}", name)
    if finite and not np.all(np.isfinite(arr)):
        bad = int(np.argmax(~np.isfinite(arr).all(axis=1)))
        raise KisekaeError(f"non-finite value (NaN or inf) at row {bad}", name)
    return arr


def as_faces(f, n_vertices: int, name: str = "faces", *, corners: int = 3) -> np.ndarray:
    """Return ``f`` as a C-contiguous ``(F, corners)`` int32 array with indices in range."""
    try:
        arr = np.asarray(f)
    except (TypeError, ValueError) as exc:
        raise KisekaeError(f"cannot read as integers: {exc}", name) from None
    if arr.ndim != 2 or arr.shape[1] != corners:
        raise KisekaeError(f"expected shape (F, {corners}), got {arr.shape}", name)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise KisekaeError("indices must be integers", name)
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= n_vertices):
        raise KisekaeError(
            f"index out of range: found {arr.min()}..{arr.max()}, mesh has {n_vertices} vertices", name
        )
    return arr.astype(np.int32)


def as_nonnegative(a, n: int, name: str, *, what: str = "lengths", unit: str = "m") -> np.ndarray:
    """``a`` as ``(n,)`` float64 finite values >= 0 (per-vertex lengths, curvatures), or a KisekaeError naming
    ``name`` that says what was wanted (``what``, ``unit``) and how many values came."""
    arr = np.asarray(a, dtype=np.float64).reshape(-1)
    if arr.shape != (n,) or not np.all(np.isfinite(arr)) or (arr.size and arr.min() < 0):
        raise KisekaeError(f"need {n} finite {what} >= 0 ({unit}), got {len(arr)}", name)
    return arr


def as_per_vertex(a, n: int, name: str, *, dtype=np.float64, finite: bool = True) -> np.ndarray:
    """Return a per-vertex array whose first dimension is ``n``."""
    arr = np.ascontiguousarray(a, dtype=dtype)
    if arr.shape[:1] != (n,):
        raise KisekaeError(f"expected {n} entries (one per vertex), got shape {arr.shape}", name)
    if finite and not np.all(np.isfinite(arr)):
        raise KisekaeError("non-finite value (NaN or inf)", name)
    return arr


def positive(value: float, name: str, *, allow_zero: bool = False) -> float:
    """Return ``float(value)`` if it is finite and positive (or zero when allowed)."""
    v = float(value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise KisekaeError(f"must be {'>= 0' if allow_zero else '> 0'} and finite, got {value!r}", name)
    return v


def inside_folder(name, folder, source, what: str, *, allow_outside: bool = False) -> Path:
    """The file that an asset names, which must lie inside the asset's own folder.

    Every path read from inside a file (an ``.mhclo``'s ``obj_file``, a wound sidecar's texture,
    a catalogue's garment) goes through here before anything opens it, so a hostile asset cannot
    make kisekae read (and then quote) a file elsewhere, such as a system file.

    Parameters
    ----------
    name : str
        The path as the asset writes it, relative to ``folder``.
    folder : str or os.PathLike
        The asset's own folder (the folder of the file that names ``name``).
    source : str or os.PathLike
        The asset file, named in the error.
    what : str
        Where in the asset the path was found (``"obj_file"``, ``"garments[2].path"``), named in
        the error.
    allow_outside : bool
        Accept absolute paths and paths outside ``folder`` (an explicit opt-in, never the default).

    Returns
    -------
    Path
        The absolute path, links followed.

    Raises
    ------
    KisekaeError
        ``name`` is not a non-empty string, holds a NUL character, is absolute, has a ``..``
        segment, or resolves (after following links) outside ``folder``.
    """
    if not isinstance(name, str) or not name.strip():
        raise KisekaeError(f"{what} must be a non-empty path", source)
    if "\x00" in name:
        raise KisekaeError(f"{what} contains a NUL character", source)
    root = Path(folder).resolve()
    if allow_outside:
        return (root / Path(name).expanduser()).resolve()
    shown = name[:80]
    if name.startswith(("/", "\\")) or os.path.isabs(name) or re.match(r"^[A-Za-z]:", name):
        raise KisekaeError(f"{what} {shown!r} is an absolute path; only paths inside the asset folder are allowed",
                           source)
    if ".." in re.split(r"[/\\]", name):
        raise KisekaeError(f"{what} {shown!r} leaves the asset folder ('..')", source)
    target = (root / name).resolve()
    if target != root and root not in target.parents:
        raise KisekaeError(f"{what} {shown!r} resolves outside the asset folder", source)
    return target

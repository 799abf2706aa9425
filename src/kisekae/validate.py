"""Small input checks shared by every public function (shapes, dtypes, finiteness)."""

from __future__ import annotations

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

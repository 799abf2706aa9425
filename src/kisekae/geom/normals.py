"""Face and vertex normals of a triangle mesh.

A face normal is ``(b − a) × (c − a)`` for triangle abc; its length is twice the triangle's area
(m²), so summing unnormalised face normals at a vertex weights them by area. A vertex normal is
that sum, normalised. With a *weld* map (see :mod:`kisekae.geom.weld`) the sums are made over
welded representatives, so copies of one position split along a UV seam get the same normal.

Edge cases (both implementations):

- a vertex on no face, or only on degenerate faces (zero sum), gets ``fallback``
  (default ``(0, 0, 0)``);
- both validate the weld map; :func:`vertex_normals` also validates vertices and faces.

:func:`vertex_normals_numpy` is the reference (``np.add.at``); :func:`vertex_normals` runs the
Numba kernels :func:`_vertex_normals_kernel`, which accumulates in the same order (face by face,
corner by corner, one pass), and :func:`_normalize_kernel`, which multiplies by the same reciprocal length: both give
the same values to the last bit (tested). :func:`vertex_normals` validates its inputs and can write
into a given buffer, so it serves per frame.
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import KisekaeError
from ..validate import as_faces, as_points
from .weld import as_weld


def face_normals(vertices, faces, *, unit: bool = True) -> np.ndarray:
    """Per-triangle normals.

    Parameters
    ----------
    vertices : (N, 3) float, metres
    faces : (F, 3) int
    unit : bool
        True: unit length (degenerate triangles get ``(0, 0, 0)``); False: length is twice the
        area, m².

    Returns
    -------
    (F, 3) float64
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces)
    n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    if unit:
        ln = np.linalg.norm(n, axis=1, keepdims=True)
        n = np.divide(n, ln, out=np.zeros_like(n), where=ln > 0)
    return n


def _finish(acc, weld, fallback, dtype):
    if weld is not None:
        acc = acc[weld]
    ln = np.linalg.norm(acc, axis=1, keepdims=True)
    out = np.multiply(acc, np.divide(1.0, ln, out=np.zeros_like(ln), where=ln > 0))  # times 1/|n|, as the kernel
    if fallback is not None and np.any(fallback):
        out[ln[:, 0] <= 0] = fallback
    return out.astype(dtype, copy=False)


def vertex_normals_numpy(vertices, faces, weld=None, *, fallback=None, dtype=np.float32) -> np.ndarray:
    """Area-weighted unit vertex normals, NumPy reference of :func:`vertex_normals`.

    Parameters
    ----------
    vertices : (N, 3) float, metres
    faces : (F, 3) int, counter-clockwise seen from outside
    weld : (N,) int, optional
        Representative vertex of each position; vertices with one representative share a normal.
    fallback : (3,) float, optional
        Normal of vertices whose area-weighted sum is zero; ``(0, 0, 0)`` when omitted.
    dtype : numpy dtype
        Output type (float32 by default, as vertex attributes are).

    Returns
    -------
    (N, 3) ``dtype``
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    w = None if weld is None else as_weld(weld, len(v))
    fn = face_normals(v, f, unit=False)
    target = f if w is None else w[f]
    acc = np.zeros((len(v), 3))
    np.add.at(acc, target.ravel(), np.repeat(fn, 3, axis=0))  # face by face, corner by corner
    return _finish(acc, w, fallback, dtype)


@numba.njit(cache=True)
def _vertex_normals_kernel(v, f, weld, use_weld, acc):
    """Add each face's area vector (``(b − a) × (c − a)``) to its corners (their representatives with
    ``use_weld``), face by face, corner by corner: the order of :func:`vertex_normals_numpy`."""
    for t in range(f.shape[0]):
        a = f[t, 0]
        b = f[t, 1]
        d = f[t, 2]
        e1x = v[b, 0] - v[a, 0]
        e1y = v[b, 1] - v[a, 1]
        e1z = v[b, 2] - v[a, 2]
        e2x = v[d, 0] - v[a, 0]
        e2y = v[d, 1] - v[a, 1]
        e2z = v[d, 2] - v[a, 2]
        nx = e1y * e2z - e1z * e2y
        ny = e1z * e2x - e1x * e2z
        nz = e1x * e2y - e1y * e2x
        for c in range(3):
            k = weld[f[t, c]] if use_weld else f[t, c]
            acc[k, 0] += nx
            acc[k, 1] += ny
            acc[k, 2] += nz


@numba.njit(cache=True)
def _normalize_kernel(acc, weld, use_weld, fallback, out):
    """``out[i] = acc[k] * (1 / |acc[k]|)`` with ``k = weld[i]`` or ``i`` (``fallback`` where the length is 0),
    cast to out's type: the same operations as :func:`vertex_normals_numpy`, so the same values."""
    for i in range(out.shape[0]):
        k = weld[i] if use_weld else i
        x = acc[k, 0]
        y = acc[k, 1]
        z = acc[k, 2]
        ln = np.sqrt(x * x + y * y + z * z)
        if ln > 0.0:
            s = 1.0 / ln
            out[i, 0] = x * s
            out[i, 1] = y * s
            out[i, 2] = z * s
        else:
            out[i, 0] = fallback[0]
            out[i, 1] = fallback[1]
            out[i, 2] = fallback[2]


def _checked_inputs(vertices, faces):
    """Vertices as C-contiguous float64 and faces as C-contiguous int32 or int64 (no copy when they already
    are), finite and in range; :class:`KisekaeError` naming ``vertices`` or ``faces`` otherwise."""
    v = vertices
    if not (type(v) is np.ndarray and v.dtype == np.float64 and v.flags.c_contiguous and v.ndim == 2
            and v.shape[1] == 3):
        v = as_points(vertices, "vertices")
    elif not np.isfinite(v).all():
        raise KisekaeError("non-finite value (NaN or inf)", "vertices")
    f = faces
    if not (type(f) is np.ndarray and f.dtype in (np.int32, np.int64) and f.flags.c_contiguous and f.ndim == 2
            and f.shape[1] == 3):
        f = as_faces(faces, len(v), "faces")
    elif f.size and (f.min() < 0 or f.max() >= len(v)):
        raise KisekaeError(f"index out of range: found {f.min()}..{f.max()}, mesh has {len(v)} vertices", "faces")
    return v, f


_NO_WELD = np.zeros(0, np.int64)


def vertex_normals(vertices, faces, weld=None, *, fallback=None, dtype=np.float32, out=None) -> np.ndarray:
    """Area-weighted unit vertex normals ``(N, 3)`` (Numba), for rest meshes and per frame.

    Same contract and the same values as :func:`vertex_normals_numpy`, plus:

    - the inputs are validated (finite vertices, face indices in range: :class:`KisekaeError`);
      float64 vertices and int32/int64 faces in C order are not copied;
    - ``out`` : (N, 3) writeable C-contiguous array of ``dtype``, optional, is written and
      returned (no allocation for the result per frame).
    """
    v, f = _checked_inputs(vertices, faces)
    n = len(v)
    w = _NO_WELD if weld is None else as_weld(weld, n)
    acc = np.zeros((n, 3))
    if len(f):
        _vertex_normals_kernel(v, f, w, weld is not None, acc)
    if out is None:
        out = np.empty((n, 3), dtype)
    elif not (type(out) is np.ndarray and out.dtype == np.dtype(dtype) and out.flags.c_contiguous
              and out.flags.writeable and out.shape == (n, 3)):
        raise KisekaeError(f"must be a writeable C-contiguous {np.dtype(dtype).name} array of shape ({n}, 3)", "out")
    fb = np.zeros(3) if fallback is None else np.asarray(fallback, dtype=np.float64).reshape(3)
    _normalize_kernel(acc, w, weld is not None, fb, out)
    return out

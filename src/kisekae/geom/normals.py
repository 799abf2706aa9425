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
Numba kernels :func:`_vertex_normals_kernel`, which accumulates in the same order (corner by
corner, face by face), and :func:`_normalize_kernel`, which divides by the same length: both give
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
    out = np.divide(acc, ln, out=np.zeros_like(acc), where=ln > 0)
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
    for c in range(3):
        np.add.at(acc, target[:, c], fn)
    return _finish(acc, w, fallback, dtype)


@numba.njit(cache=True)
def _vertex_normals_kernel(v, f, target, acc):
    """Add each face's area vector (``(b − a) × (c − a)``) to ``acc[target[face, corner]]``."""
    for c in range(3):
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
            k = target[t, c]
            acc[k, 0] += e1y * e2z - e1z * e2y
            acc[k, 1] += e1z * e2x - e1x * e2z
            acc[k, 2] += e1x * e2y - e1y * e2x


@numba.njit(cache=True)
def _normalize_kernel(acc, weld, fallback, out):
    """``out[i] = acc[weld[i]] / |acc[weld[i]]|`` (``fallback`` where the length is 0), cast to out's type:
    the same operations as :func:`vertex_normals_numpy`, so the same values."""
    for i in range(out.shape[0]):
        k = weld[i]
        x = acc[k, 0]
        y = acc[k, 1]
        z = acc[k, 2]
        ln = np.sqrt(x * x + y * y + z * z)
        if ln > 0.0:
            out[i, 0] = x / ln
            out[i, 1] = y / ln
            out[i, 2] = z / ln
        else:
            out[i, 0] = fallback[0]
            out[i, 1] = fallback[1]
            out[i, 2] = fallback[2]


def vertex_normals(vertices, faces, weld=None, *, fallback=None, dtype=np.float32, out=None) -> np.ndarray:
    """Area-weighted unit vertex normals ``(N, 3)`` (Numba), for rest meshes and per frame.

    Same contract and the same values as :func:`vertex_normals_numpy`, plus:

    - the inputs are validated (finite vertices, face indices in range: :class:`KisekaeError`);
    - ``out`` : (N, 3) writeable C-contiguous array of ``dtype``, optional, is written and
      returned (no allocation for the result per frame).
    """
    v = np.ascontiguousarray(as_points(vertices, "vertices"))
    n = len(v)
    f = as_faces(faces, n, "faces").astype(np.int64)
    w = np.arange(n) if weld is None else as_weld(weld, n)
    target = f if weld is None else np.ascontiguousarray(w[f])
    acc = np.zeros((n, 3))
    if len(f):
        _vertex_normals_kernel(v, f, target, acc)
    if out is None:
        out = np.empty((n, 3), dtype)
    elif not (type(out) is np.ndarray and out.dtype == np.dtype(dtype) and out.flags.c_contiguous
              and out.flags.writeable and out.shape == (n, 3)):
        raise KisekaeError(f"must be a writeable C-contiguous {np.dtype(dtype).name} array of shape ({n}, 3)", "out")
    fb = np.zeros(3) if fallback is None else np.asarray(fallback, dtype=np.float64).reshape(3)
    _normalize_kernel(acc, w, fb, out)
    return out

"""Face and vertex normals of a triangle mesh.

A face normal is ``(b − a) × (c − a)`` for triangle abc; its length is twice the triangle's area
(m²), so summing unnormalised face normals at a vertex weights them by area. A vertex normal is
that sum, normalised. With a *weld* map (see :mod:`kisekae.geom.weld`) the sums are made over
welded representatives, so copies of one position split along a UV seam get the same normal.

Edge cases (both implementations):

- a vertex on no face, or only on degenerate faces (zero sum), gets ``fallback``
  (default ``(0, 0, 0)``);
- a weld map is validated (:func:`kisekae.geom.weld.as_weld`); faces are not, callers validate
  them at their boundary (:mod:`kisekae.validate`).

:func:`vertex_normals_numpy` is the reference (``np.add.at``); :func:`vertex_normals` runs the
Numba kernel :func:`_vertex_normals_kernel`, which accumulates in the same order (corner by
corner, face by face), so both agree to the last bit in float64.
"""

from __future__ import annotations

import numba
import numpy as np

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


def vertex_normals(vertices, faces, weld=None, *, fallback=None, dtype=np.float32) -> np.ndarray:
    """Area-weighted unit vertex normals ``(N, 3)`` (Numba; same contract as :func:`vertex_normals_numpy`)."""
    v = np.ascontiguousarray(vertices, dtype=np.float64).reshape(-1, 3)
    f = np.ascontiguousarray(faces, dtype=np.int64).reshape(-1, 3)
    w = None if weld is None else as_weld(weld, len(v))
    target = f if w is None else np.ascontiguousarray(w[f])
    acc = np.zeros((len(v), 3))
    if len(f):
        _vertex_normals_kernel(v, f, target, acc)
    return _finish(acc, w, fallback, dtype)

"""One-ring adjacency of a mesh in CSR form, and Jacobi smoothing of a displacement over it.

:func:`one_ring` lists each vertex's neighbours (seam duplicates share their representative's list);
:func:`smooth_push` spreads a per-vertex displacement to the one-ring, pass by pass, without ever shrinking one
(:func:`smooth_push_numpy` is its reference). The garment's per-frame path (:mod:`kisekae.fit.surface`) and the
body's part contact (:mod:`kisekae.avatar.part_contact`) both smooth their pushes this way; the HLSL core's
``KisekaeSmoothPush`` is one pass.
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import KisekaeError

#: Default one-ring smoothing passes of :func:`smooth_push`.
SMOOTH_PASSES = 10


def welded_csr(owner, values, n: int, weld=None) -> tuple:
    """CSR lists of ``n`` vertices: ``(ptr (n+1,), idx)`` int64, vertex v's entries ``idx[ptr[v]:ptr[v + 1]]``.

    Parameters
    ----------
    owner : (M,) int vertex of each entry (ids below ``n``)
    values : (M,) int the entries, in the order they keep within their vertex's list
    n : int, vertices
    weld : (n,) int or None, representative of each vertex (``Mesh.weld``): a seam duplicate gets its
        representative's list, so both copies of a position move alike
    """
    owner = np.asarray(owner, dtype=np.int64).reshape(-1)
    values = np.asarray(values, dtype=np.int64).reshape(-1)
    rep = np.arange(n) if weld is None else np.asarray(weld, dtype=np.int64)
    if len(rep) != n:
        raise KisekaeError(f"weld has {len(rep)} entries for {n} vertices", "weld")
    values = values[np.argsort(owner, kind="stable")]
    count = np.bincount(owner, minlength=n)[:n]
    start = np.concatenate([[0], np.cumsum(count)])
    lengths = count[rep]
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    # entry j of output vertex v reads entry start[rep[v]] + j of the sorted values
    at = np.repeat(start[rep] - ptr[:-1], lengths) + np.arange(ptr[-1])
    return ptr, values[at].astype(np.int64)


def vertex_faces(faces, n: int, weld=None, source: str = "garment faces") -> tuple:
    """CSR of the faces around each vertex: ``(ptr (n+1,), idx (M,))`` int64, face ids increasing.

    Parameters
    ----------
    faces : (F, 3) int triangles
    n : int, vertices
    weld : (n,) representative of each vertex (``Mesh.weld``) or None: a seam copy gets the faces of every copy of
        its position (the faces around the welded vertex), so both copies move alike
    source : str, named in errors
    """
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if f.size and (f.min() < 0 or f.max() >= n):
        raise KisekaeError(f"face corner ids must lie in 0..{n - 1}", source)
    rep = np.arange(n) if weld is None else np.asarray(weld, dtype=np.int64)
    if len(rep) != n:
        raise KisekaeError(f"weld has {len(rep)} entries for {n} vertices", "weld")
    # (welded corner, face) pairs, sorted; a face touching one welded vertex twice (degenerate) is listed once
    pairs = np.stack([rep[f].reshape(-1), np.repeat(np.arange(len(f)), 3)], axis=1)
    pairs = np.unique(pairs, axis=0) if len(pairs) else pairs
    return welded_csr(pairs[:, 0], pairs[:, 1], n, rep)


def one_ring(n: int, edges, weld=None) -> tuple:
    """CSR one-ring of ``n`` vertices: ``(ptr (n+1,), idx)`` int64 (:func:`welded_csr` of the edges both ways).

    Parameters
    ----------
    n : int, vertices
    edges : (E, 2) unique edges between welded vertices (``Mesh.edges``)
    weld : (n,) int or None, representative of each vertex (``Mesh.weld``): a seam duplicate gets its
        representative's ring, so both sides of a UV seam move alike
    """
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return welded_csr(np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([e[:, 1], e[:, 0]]), n, weld)


def smooth_push_numpy(displacement, ring, passes: int = SMOOTH_PASSES) -> np.ndarray:
    """Spread pushes to the one-ring, NumPy reference.

    Each pass (Jacobi: all vertices from the previous pass) replaces a vertex's displacement ``d`` by
    ``(d + a) / 2``, where ``a`` is the mean displacement of its one-ring, if ``|a| > |d|``: a push spreads
    to the neighbours, fading, and no push ever shrinks, so what the push solved stays solved.

    Parameters
    ----------
    displacement : (N, 3) corrected minus skinned positions, metres
    ring : :func:`one_ring` of the garment
    passes : int

    Returns
    -------
    (N, 3) float64
    """
    d = np.array(displacement, dtype=np.float64)
    ptr, idx = ring
    count = np.diff(ptr)
    owner = np.repeat(np.arange(len(d)), count)
    for _ in range(passes):
        acc = np.zeros_like(d)
        np.add.at(acc, owner, d[idx])
        avg = acc / np.maximum(count, 1)[:, None]
        grow = np.einsum("ij,ij->i", avg, avg) > np.einsum("ij,ij->i", d, d)
        d = np.where(grow[:, None], 0.5 * (d + avg), d)
    return d


@numba.njit(cache=True)
def _smooth_kernel(d, ptr, idx, passes, tmp, near):  # pragma: no cover - compiled
    """Jacobi passes of :func:`smooth_push_numpy` over the vertices ``near`` a non-zero displacement only.

    A vertex whose own displacement and whose one-ring's are all zero keeps its zero (its ring mean is zero, which
    does not grow it), so each pass visits the vertices marked ``near`` (non-zero, or next to one), and marks the ring
    of each vertex it turned non-zero for the next pass: the same numbers as visiting every vertex, for the price of
    the region the displacement has reached (a push's displacement covers a fraction of the garment). ``tmp`` must
    be zero, ``near`` the mark of ``d``'s non-zero vertices and their rings.
    """
    n = d.shape[0]
    grew = np.empty(n, dtype=np.int64)
    for _ in range(passes):
        count = 0
        for i in range(n):
            if not near[i]:
                continue
            ax = ay = az = 0.0
            c = ptr[i + 1] - ptr[i]
            for e in range(ptr[i], ptr[i + 1]):
                j = idx[e]
                ax += d[j, 0]
                ay += d[j, 1]
                az += d[j, 2]
            if c > 0:
                ax /= c
                ay /= c
                az /= c
            if ax * ax + ay * ay + az * az > d[i, 0] * d[i, 0] + d[i, 1] * d[i, 1] + d[i, 2] * d[i, 2]:
                if d[i, 0] == 0.0 and d[i, 1] == 0.0 and d[i, 2] == 0.0:
                    grew[count] = i
                    count += 1
                tmp[i, 0] = 0.5 * (d[i, 0] + ax)
                tmp[i, 1] = 0.5 * (d[i, 1] + ay)
                tmp[i, 2] = 0.5 * (d[i, 2] + az)
            else:
                tmp[i, 0] = d[i, 0]
                tmp[i, 1] = d[i, 1]
                tmp[i, 2] = d[i, 2]
        for k in range(count):
            i = grew[k]
            for e in range(ptr[i], ptr[i + 1]):
                near[idx[e]] = True
        d, tmp = tmp, d
    return d


@numba.njit(cache=True)
def _near_nonzero(d, ptr, idx):  # pragma: no cover - compiled
    """(N,) bool: the vertices with a non-zero displacement and their one-rings."""
    near = np.zeros(d.shape[0], dtype=np.bool_)
    for i in range(d.shape[0]):
        if d[i, 0] != 0.0 or d[i, 1] != 0.0 or d[i, 2] != 0.0:
            near[i] = True
            for e in range(ptr[i], ptr[i + 1]):
                near[idx[e]] = True
    return near


def smooth_push(displacement, ring, passes: int = SMOOTH_PASSES) -> np.ndarray:
    """:func:`smooth_push_numpy` as a Numba kernel (one core), over the vertices the displacement has reached."""
    d = np.array(displacement, dtype=np.float64)
    ptr, idx = (np.asarray(a, dtype=np.int64) for a in ring)
    return _smooth_kernel(d, ptr, idx, int(passes), np.zeros_like(d), _near_nonzero(d, ptr, idx))


@numba.njit(cache=True)
def nonzero_rows(d) -> np.ndarray:  # pragma: no cover - compiled
    """Indices of the rows of ``d`` (N, 3) with any non-zero entry, increasing: ``np.flatnonzero(d.any(axis=1))``
    in one pass (NumPy's reduction over an axis of three takes 20 times longer on a 13,380-vertex body)."""
    out = np.empty(d.shape[0], dtype=np.int64)
    count = 0
    for i in range(d.shape[0]):
        if d[i, 0] != 0 or d[i, 1] != 0 or d[i, 2] != 0:
            out[count] = i
            count += 1
    return out[:count]

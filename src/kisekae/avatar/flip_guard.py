"""The flip guard: take back the moves of a body step where they turn a triangle over.

A per-vertex step that moves a small part against a big one (a heavy body's hand pressed into its hip, the wrist
beside it staying where skinning put it) can turn the body's triangles between what moved and what did not: a flipped
triangle reads as a dark shard, worse by eye than the overlap the step was for. The guard compares each triangle
after the step with the body the step started from. A triangle turned by more than ``acos(GUARD_COS)`` (90
degrees: turned over) is *turned*; each vertex with a turned triangle around it (around any copy of its position: the
faces of its welded vertex, so seam copies stay together) has its move halved, :data:`GUARD_HALVINGS` times, then undone,
:data:`GUARD_REVERTS` times. Each pass reads the moves of the one before (Jacobi), so a GPU runs it as one thread a
vertex over the faces around it. A pass with no turned triangle changes nothing, so the passes stop there; a
triangle of zero area before the step is never turned. Where nothing turns, the step's result is returned bit for
bit.

Measured on the part contact (:mod:`kisekae.avatar.part_contact`, which ends with it; 40 held-out range-of-motion
poses and four named ones, buried body vertices / self-crossings / flipped triangles against the planes body):
heavy shape ``gender=0.9,weight=0.9,muscle=0.2`` 9,292 / 4,063 / 37 -> 9,290 / 4,036 / 0 (docs/contact.md). At 60
degrees it also took back the flattening where two feet press together (their crossings 14 -> 26).

NumPy reference :func:`flip_guard_numpy` and Numba :func:`flip_guard` agree within 1e-12 m; the HLSL core's
``KisekaePartGuard`` (``kisekae_part_contact.hlsl``) is one pass for one vertex.
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import KisekaeError
from ..geom.ring import nonzero_rows

#: Cosine of the turn (against the body the step started from) past which a triangle counts as turned: 90 degrees.
GUARD_COS = 0.0
#: Passes that halve the moves around turned triangles, then passes that undo them.
GUARD_HALVINGS = 3
GUARD_REVERTS = 6  # each undoing pass can turn a neighbour over: six cleared every case measured (docs/contact.md)


def check_face_table(faces, vertex_faces, n: int, source: str) -> tuple:
    """``(faces (F, 3), ptr (n + 1,), idx)`` as contiguous int64, or :class:`KisekaeError` naming ``source`` where
    the triangles' corners or the CSR of the faces around each vertex (:func:`kisekae.geom.ring.vertex_faces`) do not
    fit a body of ``n`` vertices."""
    f = np.ascontiguousarray(faces, dtype=np.int64).reshape(-1, 3)
    ptr, idx = (np.ascontiguousarray(a, dtype=np.int64) for a in vertex_faces)
    if len(ptr) != n + 1 or ptr[0] != 0 or ptr[-1] != len(idx) or np.any(np.diff(ptr) < 0) \
            or (idx.size and (idx.min() < 0 or idx.max() >= len(f))) or (f.size and (f.min() < 0 or f.max() >= n)):
        raise KisekaeError("faces or the faces around each vertex do not fit the body", source)
    return f, ptr, idx


def _inputs(start, moved, faces, vertex_faces) -> tuple:
    x = np.asarray(start, dtype=np.float64)
    y = np.asarray(moved, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 2 or x.shape[1:] != (3,):
        raise KisekaeError(f"start and moved bodies must be (N, 3) alike, got {x.shape} and {y.shape}", "flip guard")
    return (x, y, *check_face_table(faces, vertex_faces, len(x), "flip guard"))


def turned_faces_numpy(start, moved, faces, cos_min: float = GUARD_COS) -> np.ndarray:
    """(F,) bool: triangles whose normal in ``moved`` is turned from their normal in ``start`` by more than
    ``acos(cos_min)``; never a triangle of zero area in ``start``."""
    x, p = np.asarray(start, dtype=np.float64), np.asarray(moved, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    nb = np.cross(x[f[:, 1]] - x[f[:, 0]], x[f[:, 2]] - x[f[:, 0]])
    na = np.cross(p[f[:, 1]] - p[f[:, 0]], p[f[:, 2]] - p[f[:, 0]])
    dot = nb[:, 0] * na[:, 0] + nb[:, 1] * na[:, 1] + nb[:, 2] * na[:, 2]
    return dot < cos_min * np.sqrt((nb * nb).sum(axis=1)) * np.sqrt((na * na).sum(axis=1))


def flip_guard_numpy(start, moved, faces, vertex_faces, *, cos_min: float = GUARD_COS,
                     halvings: int = GUARD_HALVINGS, reverts: int = GUARD_REVERTS) -> np.ndarray:
    """The step's result with the moves around turned triangles halved, then undone (NumPy reference).

    Parameters
    ----------
    start : (N, 3) the body before the step, metres
    moved : (N, 3) the body after it, metres
    faces : (F, 3) int triangles
    vertex_faces : (ptr (N + 1,), idx) the faces around each (welded) vertex,
        :func:`kisekae.geom.ring.vertex_faces`
    cos_min : float, :data:`GUARD_COS`
    halvings, reverts : int >= 0

    Returns
    -------
    (N, 3) float64
    """
    x, y, f, ptr, idx = _inputs(start, moved, faces, vertex_faces)
    move = y - x
    owner = np.repeat(np.arange(len(x)), np.diff(ptr))
    for r in range(halvings + reverts):
        turned = turned_faces_numpy(x, x + move, f, cos_min)
        if not turned.any():
            break
        near = np.bincount(owner, weights=turned[idx].astype(np.float64), minlength=len(x)) > 0
        move[near] *= 0.5 if r < halvings else 0.0
    return x + move


@numba.njit(cache=True, error_model="numpy")
def _guard_kernel(x, move, f, ptr, idx, cos_min, halvings, reverts):  # pragma: no cover - compiled
    """:func:`flip_guard_numpy`'s passes over the vertices that move and the faces around them: a vertex that does
    not move keeps its zero move, and a triangle none of whose corners moves is not turned, so the others need no
    visit."""
    moving = nonzero_rows(move)
    count = len(moving)
    listed = np.zeros(len(f), dtype=np.bool_)
    faces = np.empty(len(f), dtype=np.int64)
    nf = 0
    for k in range(count):
        v = moving[k]
        for e in range(ptr[v], ptr[v + 1]):
            if not listed[idx[e]]:
                listed[idx[e]] = True
                faces[nf] = idx[e]
                nf += 1
    turned = np.zeros(len(f), dtype=np.bool_)
    for r in range(halvings + reverts):
        some = False
        for q in range(nf):
            t = faces[q]
            a, b, c = f[t, 0], f[t, 1], f[t, 2]
            u0, u1, u2 = x[b, 0] - x[a, 0], x[b, 1] - x[a, 1], x[b, 2] - x[a, 2]
            v0, v1, v2 = x[c, 0] - x[a, 0], x[c, 1] - x[a, 1], x[c, 2] - x[a, 2]
            n0, n1, n2 = u1 * v2 - u2 * v1, u2 * v0 - u0 * v2, u0 * v1 - u1 * v0
            pa0, pa1, pa2 = x[a, 0] + move[a, 0], x[a, 1] + move[a, 1], x[a, 2] + move[a, 2]
            u0 = x[b, 0] + move[b, 0] - pa0
            u1 = x[b, 1] + move[b, 1] - pa1
            u2 = x[b, 2] + move[b, 2] - pa2
            v0 = x[c, 0] + move[c, 0] - pa0
            v1 = x[c, 1] + move[c, 1] - pa1
            v2 = x[c, 2] + move[c, 2] - pa2
            m0, m1, m2 = u1 * v2 - u2 * v1, u2 * v0 - u0 * v2, u0 * v1 - u1 * v0
            dot = n0 * m0 + n1 * m1 + n2 * m2
            turned[t] = dot < cos_min * np.sqrt(n0 * n0 + n1 * n1 + n2 * n2) * np.sqrt(m0 * m0 + m1 * m1 + m2 * m2)
            some = some or turned[t]
        if not some:
            break
        scale = 0.5 if r < halvings else 0.0
        hit = np.zeros(count, dtype=np.bool_)
        for k in range(count):  # every decision from this pass's moves (Jacobi), then the moves scaled
            v = moving[k]
            for e in range(ptr[v], ptr[v + 1]):
                if turned[idx[e]]:
                    hit[k] = True
                    break
        for k in range(count):
            if hit[k]:
                v = moving[k]
                move[v, 0] *= scale
                move[v, 1] *= scale
                move[v, 2] *= scale
    return move


def flip_guard(start, moved, faces, vertex_faces, *, cos_min: float = GUARD_COS, halvings: int = GUARD_HALVINGS,
               reverts: int = GUARD_REVERTS) -> np.ndarray:
    """:func:`flip_guard_numpy` as a Numba kernel (one core): (N, 3) float64."""
    x, y, f, ptr, idx = _inputs(start, moved, faces, vertex_faces)
    move = _guard_kernel(x, y - x, f, ptr, idx, float(cos_min), int(halvings), int(reverts))
    return x + move

"""Unflip: turn back garment faces that the per-frame correction turned over.

Pushes along diverging body normals (the two sides of a crease, a thin sliver between a lifted vertex and one
that stayed) can turn a garment triangle over: its normal then points more than 90 degrees away from the skinned
triangle's. A flipped face reads as a dark shard, the worst defect by eye (docs/fit.md).

One Jacobi pass (:func:`unflip`): every garment face's target displacement is the mean of its three corners'
displacements (corrected minus skinned): with that displacement at all three corners the face is its skinned self
moved rigidly, so it faces the way skinning put it. A face turned more than 90 degrees from its skinned normal
takes the whole way to its target; one turned by less, but past ``acos(TURN_START)`` (about 87 degrees), a share
growing linearly to 1 at 90 degrees (:func:`turn_weights`), so the operator is continuous. A vertex moves by the
weighted sum of its faces' ``weight * (target - own displacement)``, divided by the sum of weights where that
exceeds 1 (a vertex on one flipped face goes to its target; on two, half-way to each). Faces of zero skinned area
are left alone. The surface push of the moved vertices follows in :func:`kisekae.fit.surface.surface_runtime`, so
the push keeps the last word.

NumPy reference (:func:`unflip_numpy`) and Numba kernels (:func:`unflip`, :class:`UnflipPass`) agree to 1e-12 m. In
the HLSL core: ``KisekaeUnflip`` (one thread per vertex over the faces around it, :func:`vertex_faces`); on the CPU
each face is done once, then the vertices gather (:class:`UnflipPass`), with the same arithmetic.
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import KisekaeError
from .bound import _f64
from ..geom.ring import vertex_faces  # noqa: F401  (moved to kisekae.geom.ring; kept here)

#: Unflip passes (each followed by the push of the vertices it moved) at the very end of the per-frame correction.
UNFLIP_PASSES = 2
#: Cosine between a face's corrected and skinned normals below which the unflip starts to turn it back (about 87
#: degrees): the share of the way back grows linearly to 1 at 90 degrees, so the operator is continuous (a face at
#: the threshold in one frame, or 10 m away in float32, is not treated all or nothing).
TURN_START = 0.05


def _unflip_inputs(points, skinned, faces, table):
    p = _f64(points, (len(points), 3), "garment vertices")
    x = _f64(skinned, p.shape, "skinned garment vertices")
    f = np.ascontiguousarray(faces, dtype=np.int64).reshape(-1, 3)
    if f.size and (f.min() < 0 or f.max() >= len(p)):
        raise KisekaeError(f"face corner ids must lie in 0..{len(p) - 1}", "garment faces")
    ptr, idx = (np.ascontiguousarray(a, dtype=np.int64) for a in table)
    if len(ptr) != len(p) + 1:
        raise KisekaeError(f"vertex face table of {len(ptr) - 1} vertices for {len(p)}", "vertex faces")
    return p, x, f, ptr, idx


def flipped_faces(points, skinned, faces) -> np.ndarray:
    """(F,) bool: corrected normal at a non-positive dot product with the skinned one (skinned area > 0)."""
    return turn_weights(points, skinned, faces, 0.0) >= 1.0


def turn_weights(points, skinned, faces, start: float = None) -> np.ndarray:
    """(F,) float64 share of each face's way back to its rigid target, from the cosine ``c`` between its corrected
    and skinned normals: ``clip((start - c) / start, 0, 1)`` (1 from 90 degrees on, 0 while ``c >= start``); with
    ``start`` 0: 1 where ``c <= 0``, else 0. A face of zero skinned area gets 0; one of zero corrected area has
    ``c = 0``. ``start`` defaults to :data:`TURN_START`."""
    start = TURN_START if start is None else float(start)
    p = np.asarray(points, dtype=np.float64)
    x = np.asarray(skinned, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    ns = np.cross(x[f[:, 1]] - x[f[:, 0]], x[f[:, 2]] - x[f[:, 0]])
    na = np.cross(p[f[:, 1]] - p[f[:, 0]], p[f[:, 2]] - p[f[:, 0]])
    ls = np.linalg.norm(ns, axis=1)
    la = np.linalg.norm(na, axis=1)
    dot = np.einsum("ij,ij->i", ns, na)
    both = (la > 0) & (ls > 0)
    cos = np.where(both, dot / np.where(both, ls * la, 1.0), 0.0)
    if start <= 0:
        w = (cos <= 0).astype(np.float64)
    else:
        w = np.clip((start - cos) / start, 0.0, 1.0)
    return np.where(ls > 0, w, 0.0)


def unflip_numpy(points, skinned, faces, table, turn_start: float | None = None):
    """One unflip pass, NumPy reference.

    Parameters
    ----------
    points : (N, 3) corrected garment vertices, metres
    skinned : (N, 3) the same vertices skinned, metres
    faces : (F, 3) int garment triangles
    table : :func:`vertex_faces` of the garment
    turn_start : float >= 0 or None (:data:`TURN_START`), see :func:`turn_weights`

    Returns
    -------
    new_points : (N, 3) float64; moved : (N,) bool, the vertices on a face with a turn weight above 0
    """
    p, x, f, ptr, idx = _unflip_inputs(points, skinned, faces, table)
    w = turn_weights(p, x, f, turn_start)
    d = p - x
    target = d[f].mean(axis=1)  # (F, 3)
    owner = np.repeat(np.arange(len(p)), np.diff(ptr))
    wf = w[idx]
    acc = np.zeros_like(p)
    np.add.at(acc, owner, wf[:, None] * (target[idx] - d[owner]))
    total = np.bincount(owner, weights=wf, minlength=len(p))
    moved = total > 0
    out = p.copy()
    out[moved] += acc[moved] / np.maximum(total[moved], 1.0)[:, None]
    return out, moved


@numba.njit(cache=True)
def _skinned_normals(x, f, out):
    """(F, 3) unnormalised skinned face normals into ``out``: the same for every unflip pass of a frame."""
    for t in range(f.shape[0]):
        i, j, k = f[t, 0], f[t, 1], f[t, 2]
        s1x, s1y, s1z = x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2]
        s2x, s2y, s2z = x[k, 0] - x[i, 0], x[k, 1] - x[i, 1], x[k, 2] - x[i, 2]
        out[t, 0] = s1y * s2z - s1z * s2y
        out[t, 1] = s1z * s2x - s1x * s2z
        out[t, 2] = s1x * s2y - s1y * s2x


@numba.njit(cache=True, error_model="numpy")
def _face_turns(p, x, f, ns, start, w, target) -> bool:
    """Each face's turn weight into ``w`` (F,) and, where it is above 0, its rigid target displacement into
    ``target`` (F, 3); ``ns``: :func:`_skinned_normals`. True if any face turns."""
    turning = False
    for t in range(f.shape[0]):
        w[t] = 0.0
        i, j, k = f[t, 0], f[t, 1], f[t, 2]
        nsx, nsy, nsz = ns[t, 0], ns[t, 1], ns[t, 2]
        a1x, a1y, a1z = p[j, 0] - p[i, 0], p[j, 1] - p[i, 1], p[j, 2] - p[i, 2]
        a2x, a2y, a2z = p[k, 0] - p[i, 0], p[k, 1] - p[i, 1], p[k, 2] - p[i, 2]
        nax, nay, naz = a1y * a2z - a1z * a2y, a1z * a2x - a1x * a2z, a1x * a2y - a1y * a2x
        dot = nsx * nax + nsy * nay + nsz * naz
        ls2 = nsx * nsx + nsy * nsy + nsz * nsz
        la2 = nax * nax + nay * nay + naz * naz
        # most faces turned by less than acos(start): c >= start without a root (same weight 0 below)
        if ls2 <= 0.0 or (dot > 0.0 and dot * dot >= start * start * ls2 * la2):
            continue
        ls = np.sqrt(ls2)
        la = np.sqrt(la2)
        cos = dot / (ls * la) if la > 0.0 else 0.0
        if start <= 0.0:
            wt = 1.0 if cos <= 0.0 else 0.0
        else:
            wt = min(max((start - cos) / start, 0.0), 1.0)
        if wt <= 0.0:
            continue
        w[t] = wt
        turning = True
        tx = ty = tz = 0.0
        for q in (i, j, k):
            tx += (p[q, 0] - x[q, 0]) / 3.0
            ty += (p[q, 1] - x[q, 1]) / 3.0
            tz += (p[q, 2] - x[q, 2]) / 3.0
        target[t, 0] = tx
        target[t, 1] = ty
        target[t, 2] = tz
    return turning


@numba.njit(cache=True)
def _gather_turns(p, x, ptr, idx, w, target, out, moved):
    """Each vertex moved by the weighted pulls of its turning faces (:func:`_face_turns`)."""
    for v in range(p.shape[0]):
        ax = ay = az = 0.0
        total = 0.0
        dvx, dvy, dvz = p[v, 0] - x[v, 0], p[v, 1] - x[v, 1], p[v, 2] - x[v, 2]
        for e in range(ptr[v], ptr[v + 1]):
            t = idx[e]
            wt = w[t]
            if wt <= 0.0:
                continue
            ax += wt * (target[t, 0] - dvx)
            ay += wt * (target[t, 1] - dvy)
            az += wt * (target[t, 2] - dvz)
            total += wt
        moved[v] = total > 0.0
        scale = 1.0 / max(total, 1.0)
        out[v, 0] = p[v, 0] + ax * scale
        out[v, 1] = p[v, 1] + ay * scale
        out[v, 2] = p[v, 2] + az * scale


class UnflipPass:
    """One garment's unflip passes within a frame: the skinned face normals are made once, then each call is a
    face pass (turn weights and targets) and, where a face turns, a vertex pass over :func:`vertex_faces`.
    Equal, bit for bit, to one thread a vertex over its faces (the HLSL core's ``KisekaeUnflip``): each face's weight
    and target are the same arithmetic wherever they are computed. The face-first order does each face once
    instead of once per corner (``benchmarks/bench_frame.py``: about 3x faster on 50,000 vertices).

    Parameters
    ----------
    skinned : (N, 3) float64 skinned garment vertices, metres (validated)
    faces : (F, 3) int64 triangles; table : ``(ptr, idx)`` int64 :func:`vertex_faces`
    turn_start : float, :data:`TURN_START` or another start (see :func:`turn_weights`)
    """

    def __init__(self, skinned, faces, table, turn_start: float):
        self.x, self.f = skinned, faces
        self.ptr, self.idx = table
        self.start = float(turn_start)
        self.ns = np.empty((len(faces), 3))
        _skinned_normals(skinned, faces, self.ns)
        self.w = np.empty(len(faces))
        self.target = np.empty((len(faces), 3))

    def __call__(self, points, out, moved) -> None:
        """One pass from ``points`` (N, 3) float64 into ``out`` (N, 3) and ``moved`` (N,) bool."""
        if _face_turns(points, self.x, self.f, self.ns, self.start, self.w, self.target):
            _gather_turns(points, self.x, self.ptr, self.idx, self.w, self.target, out, moved)
        else:
            out[:] = points
            moved[:] = False


def unflip(points, skinned, faces, table, turn_start: float | None = None):
    """:func:`unflip_numpy` as a Numba kernel (one core)."""
    p, x, f, ptr, idx = _unflip_inputs(points, skinned, faces, table)
    out = np.empty_like(p)
    moved = np.empty(len(p), dtype=np.bool_)
    UnflipPass(x, f, (ptr, idx), TURN_START if turn_start is None else float(turn_start))(p, out, moved)
    return out, moved

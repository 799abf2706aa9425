"""Edge lift: keep the garment's long edges, not only its vertices, outside the body.

The surface push (:mod:`kisekae.fit.surface`) keeps every garment *vertex* a margin outside the body. A cloth
edge 4-9 cm long between two such vertices can still pass through the body where the skin bulges between them:
a hip crease folding up in a raised leg, the flesh above a bent knee. Measured on the built-in tights after the
per-frame push, every remaining edge crossing in leg_raise, knee_bend, sit and lunge had both ends 1-15 mm
outside and the crossing 30-75 % of the way along an edge of 34-90 mm (docs/fit.md). The chord allowance
(``kappa L^2 / 8``, capped at 3 mm) covers a smooth limb under short edges, not a crease under long ones.

So the per-frame correction also pushes *points on the edges*:

- **Samples** (:func:`edge_samples`, once per garment): an edge of rest length ``L`` gets
  ``n = ceil(L / spacing) - 1`` samples at ``t = k / (n + 1)``, k = 1..n (default spacing
  :data:`SAMPLE_SPACING`, 2 cm: an edge shorter than that has none, and the chord allowance covers it). The
  built-in tights get 3,583 samples on 5,325 edges, the skirt 2,125 on 1,404; a garment subdivided to edges
  under 2 cm gets none, and this stage then costs nothing.
- **Candidates** (:func:`bake_sample_candidates`): each sample, skinned as the blend of its edge's ends, gets its
  own candidate body triangles over the same range-of-motion poses as the vertices
  (:func:`kisekae.fit.surface.bake_surface_candidates`).
- **Per frame** (:func:`edge_lift`): each sample at ``p_s = (1 - t) p_a + t p_b`` is pushed by the surface push's
  law (clearance to the nearest candidate along its blended normal, margin, stiffness, maxPush, skirt bias, masks
  blended from the ends, chord allowance of its sub-segment ``L / (n + 1)``), giving a lift ``d_s``. Moving the
  ends by ``u_a = w_a d_s``, ``u_b = w_b d_s`` with ``w_a = (1 - t) / ((1 - t)^2 + t^2)`` and
  ``w_b = t / ((1 - t)^2 + t^2)`` moves the sample by exactly ``d_s`` with the least motion of the two ends. Each
  vertex blends the lifts its samples ask of it with weights ``|u|^2`` (Jacobi), each lift first faded by its
  length (:func:`lift_fade`: whole up to :data:`LIFT_REACH`, 4 mm, nothing from twice that: a sample deep in another
  part marks a fold of the body, not a chord over it): one ask is taken whole, the
  largest dominates several, and unlike picking the largest the blend is continuous, so a body 10 m away (float32
  skinning's noise) gives the same result. One smoothing pass spreads the lift to the one-ring
  (:data:`LIFT_SMOOTH`), and the surface push of the moved vertices follows, so the push keeps the last word.

NumPy reference (:func:`edge_lift_numpy`) and Numba version (:func:`edge_lift`) agree to 1e-9 m. In the HLSL
core: ``KisekaeSamplePush`` (one thread per sample) and ``KisekaeEdgeLift`` (one thread per vertex over the
samples on its edges, :func:`vertex_samples`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..errors import KisekaeError
from .pushout import PushParams
from .surface import CANDIDATES, SurfaceCandidates, _body_frame, _inputs, _push, surface_push_numpy, welded_csr

#: Largest spacing of the samples along an edge, metres (rest length): an edge of length L gets ceil(L / s) - 1.
SAMPLE_SPACING = 0.02
#: Rounds of (edge lift, push of the lifted vertices, unflip, push) at the end of the per-frame correction.
LIFT_PASSES = 3
#: Stretch-limit passes (:func:`kisekae.fit.surface.stretch_limit`, each followed by the push of what it moved) after
#: the lift rounds and unflips: a lift can still stretch a short edge beside a long one, and these pull it back.
LIFT_LIMIT_PASSES = 2
#: One-ring smoothing passes (:func:`kisekae.fit.surface.smooth_push`) over each round's lift, so that the
#: neighbours of a lifted vertex rise with it and short edges beside it do not stretch.
LIFT_SMOOTH = 1
#: Lift of a sample (metres) above which it asks less, linearly down to nothing at twice it (:func:`lift_fade`). A
#: chord over a bulge of the skin asks for millimetres; a sample centimetres inside another part (the other leg, the
#: calf folded onto the thigh) would carry its vertex across the fold, and the push after it would make a spike.
LIFT_REACH = 0.004
#: A vertex is pushed again after a lift round only when it was lifted more than this, metres: the push law is not
#: idempotent inside the margin band, so pushing again the vertices that float32 noise lifted by 1e-15 m would
#: move them by up to a millimetre, and a body 10 m away would not give the same cloth.
LIFT_EPS = 1e-9


@dataclass
class EdgeSamples:
    """Points on a garment's long edges, made once per garment (:func:`edge_samples`).

    Attributes
    ----------
    a, b : (S,) int64 welded vertex ids of each sample's edge ends
    t : (S,) float64 position along the edge, 0 < t < 1 (the sample is ``(1 - t) p_a + t p_b``)
    chord : (S,) float64 rest length of the edge's sub-segments, metres (the sample's chord allowance)
    n_vertices : int, garment vertices
    """

    a: np.ndarray
    b: np.ndarray
    t: np.ndarray
    chord: np.ndarray
    n_vertices: int

    def __len__(self) -> int:
        return len(self.t)

    def points(self, vertices) -> np.ndarray:
        """(S, 3) float64 sample positions on garment positions ``vertices`` (N, 3)."""
        v = np.asarray(vertices, dtype=np.float64)
        if v.shape != (self.n_vertices, 3):
            raise KisekaeError(f"samples made for {self.n_vertices} garment vertices, got {v.shape}",
                               "edge samples")
        t = self.t[:, None]
        return (1.0 - t) * v[self.a] + t * v[self.b]

    def weights(self) -> tuple:
        """``(w_a, w_b)`` (S,) float64: the least-motion share of a sample's lift at each end."""
        den = (1.0 - self.t) ** 2 + self.t ** 2
        return (1.0 - self.t) / den, self.t / den


def edge_samples(vertices, edges, spacing: float = SAMPLE_SPACING) -> EdgeSamples:
    """Samples on the edges longer than ``spacing``.

    Parameters
    ----------
    vertices : (N, 3) rest garment vertices, metres
    edges : (E, 2) int unique edges between welded vertices (``Mesh.edges``)
    spacing : float, metres, > 0

    Returns
    -------
    EdgeSamples, ordered by edge, then by t
    """
    if not (isinstance(spacing, (int, float, np.floating)) and np.isfinite(spacing) and spacing > 0):
        raise KisekaeError(f"must be a finite number > 0, got {spacing!r}", "edge sample spacing")
    v = np.asarray(vertices, dtype=np.float64)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    length = np.linalg.norm(v[e[:, 0]] - v[e[:, 1]], axis=1)
    n = np.maximum(np.ceil(length / spacing - 1e-9) - 1, 0).astype(np.int64)
    edge = np.repeat(np.arange(len(e)), n)
    first = np.repeat(np.cumsum(n) - n, n)
    k = np.arange(len(edge)) - first + 1
    parts = (n + 1)[edge]
    return EdgeSamples(e[edge, 0].copy(), e[edge, 1].copy(), k / parts, length[edge] / parts, len(v))


def garment_edge_samples(mesh, spacing: float = SAMPLE_SPACING) -> EdgeSamples:
    """:func:`edge_samples` of a garment :class:`~kisekae.avatar.mesh.Mesh` (its welded edges)."""
    return edge_samples(mesh.vertices, mesh.edges, spacing)


def bake_sample_candidates(avatar, name: str, samples: EdgeSamples, poses=None, k: int = CANDIDATES, **kwargs):
    """The candidate body triangles of each sample of garment ``name``: as
    :func:`kisekae.fit.surface.bake_surface_candidates`, with the samples skinned as the blend of their edge's
    skinned ends. Returns a :class:`~kisekae.fit.surface.SurfaceCandidates` with one row per sample."""
    from .surface import bake_surface_candidates

    return bake_surface_candidates(avatar, name, poses, k, points_of=samples.points, **kwargs)


def vertex_samples(samples: EdgeSamples, weld=None) -> tuple:
    """CSR of the samples on each vertex's edges: ``(ptr (N+1,), idx (M,))`` int64, ``idx`` holding
    ``2 s + side`` (side 0: the vertex is the sample's end a, 1: end b), by increasing sample id.

    ``weld`` : (N,) representative of each vertex (``Mesh.weld``), or None: a seam copy gets its representative's
    list, so both copies of a seam vertex move alike.
    """
    ids = np.arange(len(samples), dtype=np.int64)
    ends = np.concatenate([samples.a, samples.b])
    code = np.concatenate([2 * ids, 2 * ids + 1])
    order = np.argsort(code)  # each vertex's list by increasing sample id
    return welded_csr(ends[order], code[order], samples.n_vertices, weld)


def _sample_masks(samples: EdgeSamples, mask, n: int) -> np.ndarray:
    m = np.broadcast_to(np.asarray(mask, dtype=np.float64), (n,))
    return (1.0 - samples.t) * m[samples.a] + samples.t * m[samples.b]


def _check(samples: EdgeSamples, cand: SurfaceCandidates, table, n: int) -> None:
    if samples.n_vertices != n:
        raise KisekaeError(f"made for {samples.n_vertices} garment vertices, got {n}", "edge samples")
    if len(cand.triangles) != len(samples):
        raise KisekaeError(f"{len(cand.triangles)} candidate rows for {len(samples)} samples", "sample candidates")
    ptr = np.asarray(table[0])
    if len(ptr) != n + 1:
        raise KisekaeError(f"vertex sample table of {len(ptr) - 1} vertices for {n}", "vertex samples")


def lift_fade(size, reach: float = LIFT_REACH) -> np.ndarray:
    """Share of a sample's lift that it asks for, by the lift's length ``size`` (metres): 1 up to ``reach``, falling
    linearly to 0 at ``2 reach`` (:data:`LIFT_REACH`)."""
    return np.clip(2.0 - np.asarray(size, dtype=np.float64) / reach, 0.0, 1.0)


def _choose_numpy(lift, samples: EdgeSamples, table, n: int):
    """Per vertex, the asks of its samples (each lift faded by :func:`lift_fade`) blended with weights ``|ask|^2``:
    new displacements, moved."""
    lift = np.asarray(lift, dtype=np.float64)
    lift = lift * lift_fade(np.linalg.norm(lift, axis=1))[:, None]
    wa, wb = samples.weights()
    ptr, idx = (np.asarray(x, dtype=np.int64) for x in table)
    s, side = idx // 2, idx % 2
    ask = lift[s] * np.where(side == 0, wa[s], wb[s])[:, None]
    size = np.einsum("ij,ij->i", ask, ask)
    owner = np.repeat(np.arange(n), np.diff(ptr))
    acc = np.zeros((n, 3))
    np.add.at(acc, owner, size[:, None] * ask)
    total = np.bincount(owner, weights=size, minlength=n)
    moved = total > 0
    acc[moved] /= total[moved, None]
    return acc, moved


def edge_lift_numpy(points, samples: EdgeSamples, sample_candidates: SurfaceCandidates, table, body, body_normals,
                    body_faces, params: PushParams | None = None, tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0),
                    chord: bool = True):
    """One edge lift, NumPy reference.

    Parameters
    ----------
    points : (N, 3) garment vertices, metres
    samples : EdgeSamples of the garment
    sample_candidates : SurfaceCandidates, one row per sample (:func:`bake_sample_candidates`)
    table : :func:`vertex_samples` of the garment
    body, body_normals, body_faces, params, tightness, softness, up : as :func:`kisekae.fit.surface.surface_push`
    chord : bool, give each sample the chord allowance of its sub-segment (``samples.chord``)

    Returns
    -------
    new_points : (N, 3) float64; moved : (N,) bool, the vertices a sample lifted
    """
    params = params or PushParams()
    p = np.asarray(points, dtype=np.float64)
    n = len(p)
    _check(samples, sample_candidates, table, n)
    ps = samples.points(p)
    pushed = surface_push_numpy(ps, sample_candidates, body, body_normals, body_faces, params,
                                _sample_masks(samples, tightness, n), _sample_masks(samples, softness, n), up,
                                chord=samples.chord if chord else None)[0]
    lift, moved = _choose_numpy(pushed - ps, samples, table, n)
    return p + lift, moved


@numba.njit(cache=True, error_model="numpy")
def _choose_kernel(lift, wa, wb, ptr, idx, points, reach, out, moved):
    for v in range(points.shape[0]):
        total = 0.0
        bx = by = bz = 0.0
        for e in range(ptr[v], ptr[v + 1]):
            s = idx[e] // 2
            w = wa[s] if idx[e] % 2 == 0 else wb[s]
            fade = 2.0 - np.sqrt(lift[s, 0] ** 2 + lift[s, 1] ** 2 + lift[s, 2] ** 2) / reach
            w *= min(max(fade, 0.0), 1.0)
            x, y, z = w * lift[s, 0], w * lift[s, 1], w * lift[s, 2]
            size = x * x + y * y + z * z
            bx += size * x
            by += size * y
            bz += size * z
            total += size
        moved[v] = total > 0.0
        if total > 0.0:
            bx /= total
            by /= total
            bz /= total
        out[v, 0] = points[v, 0] + bx
        out[v, 1] = points[v, 1] + by
        out[v, 2] = points[v, 2] + bz


def lift_frame(samples: EdgeSamples, tightness, softness, n: int) -> tuple:
    """What every edge lift of one frame reads besides positions: ``(masks (S,) x2, weights (S,) x2)``."""
    wa, wb = samples.weights()
    return (np.ascontiguousarray(_sample_masks(samples, tightness, n)),
            np.ascontiguousarray(_sample_masks(samples, softness, n)), wa, wb)


def _lift(p, samples, cand, table, v, nb, frame, sframe, params, up):
    """Numba edge lift of validated float64 inputs: new points, moved."""
    ts, ss, wa, wb = sframe
    ps = samples.points(p)
    pushed = _push(ps, np.arange(len(ps), dtype=np.int64), cand, v, nb, frame, samples.chord, ts, ss, params, up,
                   None)[0]
    out = np.empty_like(p)
    moved = np.empty(len(p), dtype=np.bool_)
    ptr, idx = table
    _choose_kernel(pushed - ps, wa, wb, ptr, idx, p, LIFT_REACH, out, moved)
    return out, moved


def edge_lift(points, samples: EdgeSamples, sample_candidates: SurfaceCandidates, table, body, body_normals,
              body_faces, params: PushParams | None = None, tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0)):
    """:func:`edge_lift_numpy` with the Numba surface push kernel and a Numba gather (one core)."""
    params = params or PushParams()
    p, v, nb, f, t, s = _inputs(points, None, body, body_normals, body_faces, tightness, softness)
    _check(samples, sample_candidates, table, len(p))
    sample_candidates.check(len(samples), f)
    frame = _body_frame(v, nb, f, True)
    table = tuple(np.ascontiguousarray(x, dtype=np.int64) for x in table)
    return _lift(p, samples, sample_candidates, table, v, nb, frame, lift_frame(samples, t, s, len(p)), params,
                 np.asarray(up, dtype=np.float64))

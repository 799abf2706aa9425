"""Edge lift: keep the garment's long edges, not only its vertices, outside the body.

The surface push (:mod:`kisekae.fit.surface`) keeps every garment *vertex* a margin outside the body. A cloth
edge 4-9 cm long between two such vertices can still pass through the body where the skin bulges between them:
a hip crease folding up in a raised leg, the flesh above a bent knee. Measured on the built-in tights after the
per-frame push, every remaining edge crossing in leg_raise, knee_bend, sit and lunge had both ends 1-15 mm
outside and the crossing 30-75 % of the way along an edge of 34-90 mm (docs/fit.md). The chord allowance
(``kappa L^2 / 8``, capped at 3 mm) covers a smooth limb under short edges, not a crease under long ones.

So the per-frame correction also pushes *points on the edges* and *inside the faces*:

- **Samples** (once per garment): an edge of rest length ``L`` gets ``n = ceil(L / spacing) - 1`` samples at
  ``t = k / (n + 1)``, k = 1..n (:func:`edge_samples`; default spacing :data:`SAMPLE_SPACING`, 2 cm: an edge
  shorter than that has none, and the chord allowance covers it). A face whose longest rest edge ``L`` exceeds twice
  the spacing also gets the interior points of a barycentric grid of ``ceil(L / spacing)`` parts a side
  (:func:`face_samples`): the body can bulge through the inside of a coarse face with every vertex and edge point
  outside (the crouch skirt's 4-16 cm^2 faces let the thigh through, docs/fit.md). Every sample is a barycentric
  blend of up to three vertices (:class:`EdgeSamples`). With the longest lengths skinning gives the edges, an edge
  too short at rest that skinning stretches past :data:`STRETCHED_SPACING` spacings gets samples too. The built-in
  tights get 3,600 edge and 1,702 face samples, the skirt 2,207 and 2,316; a garment finer than 2 cm that skinning
  does not stretch gets none, and this stage then costs nothing.
- **Candidates** (:func:`bake_sample_candidates`): each sample, skinned as the blend of its corners, gets its
  own candidate body triangles over the same range-of-motion poses as the vertices
  (:func:`kisekae.fit.surface.bake_surface_candidates`); its free slots then take its corners' candidates
  (:func:`with_corner_candidates`).
- **Per frame** (:func:`edge_lift`): each sample at ``p_s = sum_k w_k p_k`` is pushed by the surface push's law
  (clearance to the nearest candidate along its blended normal, margin, stiffness, maxPush, skirt bias, masks
  blended from its corners, chord allowance of the spacing around it), giving a lift ``d_s``. Moving corner k by
  ``u_k = w_k / |w|^2 d_s`` moves the sample by exactly ``d_s`` with the least motion of its corners (on an edge:
  ``(1 - t) / ((1 - t)^2 + t^2)`` at end a, ``t / (...)`` at end b). Each
  vertex blends the lifts its samples ask of it with weights ``|u|^2`` (Jacobi), each lift first faded by its
  length (:func:`lift_fade`: whole up to :data:`LIFT_REACH`, 4 mm, nothing from twice that: a sample deep in another
  part marks a fold of the body, not a chord over it): one ask is taken whole, the
  largest dominates several, and unlike picking the largest the blend is continuous, so a body 10 m away (float32
  skinning's noise) gives the same result. One smoothing pass spreads the lift to the one-ring
  (:data:`LIFT_SMOOTH`), and the surface push of the moved vertices follows, so the push keeps the last word.

NumPy reference (:func:`edge_lift_numpy`) and Numba version (:func:`edge_lift`) agree to 1e-9 m. In the HLSL
core: ``KisekaeSamplePush`` (one thread per sample) and ``KisekaeEdgeLift`` (one thread per vertex over the
samples it takes part in, :func:`vertex_samples`).
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
#: With the stretched lengths, an edge also gets samples at least every ``STRETCHED_SPACING`` times the spacing of the
#: longest length skinning gives it (0: by the rest length alone).
STRETCHED_SPACING = 3.0
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
    """Points on a garment's long edges and inside its large faces, made once per garment (:func:`edge_samples`,
    :func:`face_samples`, :func:`garment_edge_samples`).

    Every sample is a barycentric blend of up to three garment vertices: ``p_s = sum_k bary[s, k] p[ends[s, k]]``.
    An edge sample at ``t`` along the edge from a to b has ``ends = (a, b, b)`` and ``bary = (1 - t, t, 0)``; a face
    sample has the face's three corners and weights that are all > 0. A corner with weight 0 takes no part.

    Attributes
    ----------
    ends : (S, 3) int64 welded garment vertex ids
    bary : (S, 3) float64 barycentric weights, each row >= 0 and summing to 1
    chord : (S,) float64 rest spacing of the samples around this one, metres (its chord allowance)
    n_vertices : int, garment vertices
    """

    ends: np.ndarray
    bary: np.ndarray
    chord: np.ndarray
    n_vertices: int

    def __len__(self) -> int:
        return len(self.chord)

    def points(self, vertices) -> np.ndarray:
        """(S, 3) float64 sample positions on garment positions ``vertices`` (N, 3)."""
        v = np.asarray(vertices, dtype=np.float64)
        if v.shape != (self.n_vertices, 3):
            raise KisekaeError(f"samples made for {self.n_vertices} garment vertices, got {v.shape}",
                               "edge samples")
        out = np.empty((len(self.bary), 3))
        _blend_kernel(np.ascontiguousarray(self.bary), np.ascontiguousarray(self.ends, dtype=np.int64),
                      np.ascontiguousarray(v), out)
        return out

    def shares(self) -> np.ndarray:
        """(S, 3) float64: the least-motion share of a sample's lift at each corner, ``bary / |bary|^2``: moving
        corner k by ``shares[s, k] d`` moves the sample by exactly ``d``, with the least total squared motion."""
        return self.bary / np.einsum("sk,sk->s", self.bary, self.bary)[:, None]

    def mask(self, mask) -> np.ndarray:
        """(S,) float64: a per-vertex mask (scalar or (N,)) blended at the samples."""
        m = np.broadcast_to(np.asarray(mask, dtype=np.float64), (self.n_vertices,))
        return np.einsum("sk,sk->s", self.bary, m[self.ends])

    def __add__(self, other: "EdgeSamples") -> "EdgeSamples":
        if other.n_vertices != self.n_vertices:
            raise KisekaeError(f"samples of {self.n_vertices} and {other.n_vertices} vertices", "edge samples")
        return EdgeSamples(np.concatenate([self.ends, other.ends]), np.concatenate([self.bary, other.bary]),
                           np.concatenate([self.chord, other.chord]), self.n_vertices)


def _spacing(spacing) -> float:
    if not (isinstance(spacing, (int, float, np.floating)) and np.isfinite(spacing) and spacing > 0):
        raise KisekaeError(f"must be a finite number > 0, got {spacing!r}", "edge sample spacing")
    return float(spacing)


def edge_samples(vertices, edges, spacing: float = SAMPLE_SPACING, lengths=None) -> EdgeSamples:
    """Samples on the edges longer than ``spacing``.

    Parameters
    ----------
    vertices : (N, 3) rest garment vertices, metres
    edges : (E, 2) int unique edges between welded vertices (``Mesh.edges``)
    spacing : float, metres, > 0
    lengths : (E,) float or None, metres: the longest each edge gets (:func:`skinned_edge_lengths`: under skinning
        over the range of motion). The samples stay where the rest length puts them, but each one's chord allowance
        is the spacing of the *stretched* edge, ``max(L, lengths) / (n + 1)``: the skin bulges between samples that
        skinning pulled apart (an edge stretched 2-5x at a hip crease) by the sagitta of that spacing, not of the
        rest one. Measured over 68 cells of the per-frame path (docs/fit.md), edges through the body 121 -> 108 at
        no cost per frame; spacing the samples by the stretched length too (24-66 % more samples) gave 102.
        An edge too short at rest for a sample but that skinning stretches past ``STRETCHED_SPACING`` spacings gets
        ``ceil(max / (STRETCHED_SPACING spacing)) - 1`` samples: a 19 mm edge of the tights' crotch, 11 cm long in
        the range of motion and 9-11 cm in the crouch, otherwise cuts the crotch corner between its two ends (17 more
        samples for the tights, 82 for the skirt; docs/fit.md "Samples on stretched edges").
        None: the rest lengths

    Returns
    -------
    EdgeSamples, ordered by edge, then by t
    """
    spacing = _spacing(spacing)
    v = np.asarray(vertices, dtype=np.float64)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    length = np.linalg.norm(v[e[:, 0]] - v[e[:, 1]], axis=1)
    longest = length
    if lengths is not None:
        stretched = np.asarray(lengths, dtype=np.float64).reshape(-1)
        if stretched.shape != (len(e),) or not np.all(np.isfinite(stretched)) or np.any(stretched < 0):
            raise KisekaeError(f"expected {len(e)} finite lengths >= 0, got shape {stretched.shape}",
                               "edge sample lengths")
        longest = np.maximum(length, stretched)
    n = np.maximum(np.ceil(length / spacing - 1e-9) - 1, 0)
    if lengths is not None and STRETCHED_SPACING > 0:
        n = np.where(n > 0, n, np.maximum(np.ceil(longest / (STRETCHED_SPACING * spacing) - 1e-9) - 1, 0))
    n = n.astype(np.int64)
    edge = np.repeat(np.arange(len(e)), n)
    first = np.repeat(np.cumsum(n) - n, n)
    k = np.arange(len(edge)) - first + 1
    parts = (n + 1)[edge]
    t = k / parts
    a, b = e[edge, 0], e[edge, 1]
    return EdgeSamples(np.stack([a, b, b], axis=1), np.stack([1.0 - t, t, np.zeros_like(t)], axis=1),
                       longest[edge] / parts, len(v))


def face_samples(vertices, faces, spacing: float = SAMPLE_SPACING) -> EdgeSamples:
    """Samples inside the faces whose longest rest edge exceeds twice ``spacing``.

    A face whose longest edge is ``L`` is cut into ``n = ceil(L / spacing)`` parts along each side; its samples are
    the interior points of that barycentric grid, ``(i, j, k) / n`` with ``i, j, k >= 1`` and ``i + j + k = n``:
    ``(n - 1)(n - 2) / 2`` of them (a face with edges up to 4 cm gets none, one up to 6 cm its centroid). With the
    edge samples they keep the body from bulging through the inside of a coarse face, which no vertex or edge point
    sees (the crouch skirt's 4-16 cm^2 faces, docs/fit.md). Each sample's chord allowance is ``L / n``.

    Parameters
    ----------
    vertices : (N, 3) rest garment vertices, metres
    faces : (F, 3) int garment triangles (welded or not: the samples use the ids given)
    spacing : float, metres, > 0

    Returns
    -------
    EdgeSamples, ordered by face, then by grid point
    """
    spacing = _spacing(spacing)
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    length = np.max(np.linalg.norm(v[f] - v[np.roll(f, 1, axis=1)], axis=2), axis=1) if len(f) else np.zeros(0)
    n = np.ceil(length / spacing - 1e-9).astype(np.int64)
    face, bary, chord = [], [], []
    for parts in np.unique(n[n >= 3]):
        grid = np.array([(i, j, parts - i - j) for i in range(1, parts - 1) for j in range(1, parts - i)],
                        dtype=np.float64) / parts
        which = np.flatnonzero(n == parts)
        face.append(np.repeat(which, len(grid)))
        bary.append(np.tile(grid, (len(which), 1)))
        chord.append(np.repeat(length[which] / parts, len(grid)))
    if not face:
        return EdgeSamples(np.zeros((0, 3), np.int64), np.zeros((0, 3)), np.zeros(0), len(v))
    face, bary, chord = np.concatenate(face), np.concatenate(bary), np.concatenate(chord)
    order = np.argsort(face, kind="stable")
    return EdgeSamples(np.ascontiguousarray(f[face[order]]), bary[order], chord[order], len(v))


def garment_edge_samples(mesh, spacing: float = SAMPLE_SPACING, lengths=None) -> EdgeSamples:
    """The samples of a garment :class:`~kisekae.avatar.mesh.Mesh`: :func:`edge_samples` of its welded edges (with
    ``lengths``, :func:`skinned_edge_lengths`, their chord allowance from the longest each edge gets), then
    :func:`face_samples` of its faces (on the welded ids)."""
    faces = np.asarray(mesh.weld)[np.asarray(mesh.faces)] if getattr(mesh, "weld", None) is not None else mesh.faces
    return edge_samples(mesh.vertices, mesh.edges, spacing, lengths) + face_samples(mesh.vertices, faces, spacing)


def skinned_edge_lengths(part, skin_matrices) -> np.ndarray:
    """The longest each edge of a skinned garment part gets over a set of poses.

    Parameters
    ----------
    part : skinned part (``Avatar.part(name)``: ``mesh.edges``, ``posed(m)``)
    skin_matrices : iterable of (B, 4, 4) skinning matrices, one per pose (the range of motion the candidates are
        baked over, :func:`kisekae.fit.runtime.garment_samples`)

    Returns
    -------
    (E,) float64 metres, at least the rest length
    """
    e = np.asarray(part.mesh.edges, dtype=np.int64)
    v = np.asarray(part.mesh.vertices, dtype=np.float64)
    out = np.linalg.norm(v[e[:, 0]] - v[e[:, 1]], axis=1)
    for m in skin_matrices:
        x = np.asarray(part.posed(m), dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise KisekaeError("skinning gave non-finite positions", "edge sample lengths")
        np.maximum(out, np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1), out=out)
    return out


def bake_sample_candidates(avatar, name: str, samples: EdgeSamples, poses=None, k: int = CANDIDATES, **kwargs):
    """The candidate body triangles of each sample of garment ``name``: as
    :func:`kisekae.fit.surface.bake_surface_candidates`, with the samples skinned as the blend of their corners'
    skinned positions. Returns a :class:`~kisekae.fit.surface.SurfaceCandidates` with one row per sample."""
    from .surface import bake_surface_candidates

    return bake_surface_candidates(avatar, name, poses, k, points_of=samples.points, **kwargs)


def with_corner_candidates(sample_candidates: SurfaceCandidates, vertex_candidates: SurfaceCandidates,
                           samples: EdgeSamples) -> SurfaceCandidates:
    """Each sample's candidates, then its corners' until the row is full.

    A sample's own bake sees the triangles nearest to it over the range of motion. In a pose deeper than those (the
    crouch's thigh lifting the skirt's hem 6 cm) the skin under a sample can be a triangle that only one of its
    corners saw: the sample then finds no triangle there and the edge passes through the body between lifted
    samples. The free slots of each row (a sample has 15 distinct candidates of 32 on average) take its corners'
    candidates, taken in turn from each corner (the largest weight first) in the order of its own bake; a row stays
    padded with its first.
    No cost per frame where a row was full; elsewhere the push tests the added triangles.

    Parameters
    ----------
    sample_candidates : SurfaceCandidates (S, K) of the samples (:func:`bake_sample_candidates`)
    vertex_candidates : SurfaceCandidates (N, K') of the garment's (welded) vertices
    samples : EdgeSamples

    Returns
    -------
    SurfaceCandidates (S, K)
    """
    own = np.asarray(sample_candidates.triangles)
    corner = np.asarray(vertex_candidates.triangles)
    if len(own) != len(samples) or len(corner) != samples.n_vertices:
        raise KisekaeError(f"{len(own)} sample rows and {len(corner)} vertex rows for {len(samples)} samples on "
                           f"{samples.n_vertices} vertices", "sample candidates")
    k = own.shape[1]
    out = np.empty_like(own)
    order = np.argsort(-samples.bary, axis=1, kind="stable")
    for s in range(len(own)):
        row = [own[s, 0]]
        seen = {int(own[s, 0])}
        for t in own[s, 1:]:
            if t == own[s, 0]:
                break
            row.append(t)
            seen.add(int(t))
        lists = [corner[samples.ends[s, c]] for c in order[s] if samples.bary[s, c] > 0]
        for t in np.stack(lists, axis=1).reshape(-1):  # round robin: each corner's most frequent first
            if len(row) >= k:
                break
            if int(t) not in seen:
                row.append(t)
                seen.add(int(t))
        out[s, :len(row)] = row
        out[s, len(row):] = row[0]
    return SurfaceCandidates(out, sample_candidates.n_body_faces)


def vertex_samples(samples: EdgeSamples, weld=None) -> tuple:
    """CSR of the samples that involve each vertex: ``(ptr (N+1,), idx (M,))`` int64, ``idx`` holding
    ``3 s + k`` (the vertex is corner k of sample s, with weight ``bary[s, k] > 0``), by increasing sample id.

    ``weld`` : (N,) representative of each vertex (``Mesh.weld``), or None: a seam copy gets its representative's
    list, so both copies of a seam vertex move alike.
    """
    s, k = np.nonzero(samples.bary > 0)  # row-major: by sample, then corner
    s, k = s.astype(np.int64), k.astype(np.int64)
    return welded_csr(samples.ends[s, k], 3 * s + k, samples.n_vertices, weld)


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
    share = samples.shares()
    ptr, idx = (np.asarray(x, dtype=np.int64) for x in table)
    s, corner = idx // 3, idx % 3
    ask = lift[s] * share[s, corner][:, None]
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
                    chord: bool = True, reach: float | None = None, depth_bound=None):
    """One edge lift, NumPy reference.

    Parameters
    ----------
    points : (N, 3) garment vertices, metres
    samples : EdgeSamples of the garment
    sample_candidates : SurfaceCandidates, one row per sample (:func:`bake_sample_candidates`)
    table : :func:`vertex_samples` of the garment
    body, body_normals, body_faces, params, tightness, softness, up : as :func:`kisekae.fit.surface.surface_push`
    chord : bool, give each sample the chord allowance of its sub-segment (``samples.chord``)
    reach : float or None, metres: candidates farther than this from a sample are ignored (default ``max_push``)
    depth_bound : (Nb,) or None, per body vertex: the samples' pushes trust no candidate beyond it
        (:func:`kisekae.fit.surface.surface_push_numpy`)

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
                                samples.mask(tightness), samples.mask(softness), up, reach=reach,
                                chord=samples.chord if chord else None, depth_bound=depth_bound)[0]
    lift, moved = _choose_numpy(pushed - ps, samples, table, n)
    return p + lift, moved


@numba.njit(cache=True, error_model="numpy")
def _blend_kernel(bary, ends, v, out):  # pragma: no cover - compiled
    """``out[s] = sum_k bary[s, k] v[ends[s, k]]``, summed in corner order (the same bits as the einsum it
    replaced, ten times faster: three lift rounds a frame read the samples' points)."""
    for s in range(bary.shape[0]):
        a, b, c = ends[s, 0], ends[s, 1], ends[s, 2]
        for d in range(3):
            out[s, d] = bary[s, 0] * v[a, d] + bary[s, 1] * v[b, d] + bary[s, 2] * v[c, d]


@numba.njit(cache=True, error_model="numpy")
def _choose_kernel(lift, share, ptr, idx, points, reach, out, moved):
    for v in range(points.shape[0]):
        total = 0.0
        bx = by = bz = 0.0
        for e in range(ptr[v], ptr[v + 1]):
            s = idx[e] // 3
            w = share[s, idx[e] % 3]
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
    """What every edge lift of one frame reads besides positions: ``(masks (S,) x2, shares (S, 3))``."""
    if samples.n_vertices != n:
        raise KisekaeError(f"made for {samples.n_vertices} garment vertices, got {n}", "edge samples")
    return (np.ascontiguousarray(samples.mask(tightness)), np.ascontiguousarray(samples.mask(softness)),
            np.ascontiguousarray(samples.shares()))


def _lift(p, samples, cand, table, v, nb, frame, sframe, params, up, reach=None, previous=None):
    """Numba edge lift of validated float64 inputs: ``(new points, moved, (sample points, pushed samples))``.

    ``previous``: the last element of an earlier call's result against the same body frame and parameters; the
    samples whose points have not changed since (bit for bit) keep their pushed points from it instead of being
    pushed again (each sample's push reads only its own point, so the result is the same: the frame's second and
    third lift rounds push only the samples next to what the rounds before them moved)."""
    ts, ss, share = sframe
    ps = samples.points(p)
    if previous is None:
        ids = np.arange(len(ps), dtype=np.int64)
    else:
        old_points, old_pushed = previous
        same = np.all(ps == old_points, axis=1)
        ids = np.flatnonzero(~same)
    pushed = _push(ps, ids, cand, v, nb, frame, samples.chord, ts, ss, params, up, reach)[0]
    if previous is not None:
        pushed[same] = old_pushed[same]
    out = np.empty_like(p)
    moved = np.empty(len(p), dtype=np.bool_)
    ptr, idx = table
    _choose_kernel(pushed - ps, share, ptr, idx, p, LIFT_REACH, out, moved)
    return out, moved, (ps, pushed)


def edge_lift(points, samples: EdgeSamples, sample_candidates: SurfaceCandidates, table, body, body_normals,
              body_faces, params: PushParams | None = None, tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0),
              reach: float | None = None, depth_bound=None):
    """:func:`edge_lift_numpy` with the Numba surface push kernel and a Numba gather (one core)."""
    params = params or PushParams()
    p, v, nb, f, t, s = _inputs(points, None, body, body_normals, body_faces, tightness, softness)
    _check(samples, sample_candidates, table, len(p))
    sample_candidates.check(len(samples), f)
    frame = _body_frame(v, nb, f, True, depth_bound)
    table = tuple(np.ascontiguousarray(x, dtype=np.int64) for x in table)
    return _lift(p, samples, sample_candidates, table, v, nb, frame, lift_frame(samples, t, s, len(p)), params,
                 np.asarray(up, dtype=np.float64), reach)[:2]

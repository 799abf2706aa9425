"""Offline self-contact solve of the skinned body: a quasi-static continuation from the rest pose.

Linear blend skinning moves each body part on its own, so in a deep pose one part passes into
another (the calf into the thigh, the thigh into the belly). Where two parts overlap deeply, no
per-vertex rule can tell which side of the other part a vertex belongs on: that knowledge is in the
*path* from the rest pose, where nothing overlaps. This solve walks that path:

1. the pose is reached from the rest pose in ``steps`` slerped poses (joint rotations slerped,
   translations lerped, :func:`kisekae.render.animation.inbetween`);
2. at each step the skinned body ``x_t`` gets the correction that the previous step ended with
   (``y = x_t + y_{t-1} − x_{t-1}``);
3. pairs: every (vertex, triangle) closer than ``detect`` in ``y`` or in ``y_{t-1}``, except
   a vertex and the triangles within ``exclude`` of it at rest (its own neighbourhood: a fold of one
   joint is not a contact between two parts);
4. each pair keeps the side it had at the end of the previous step, where the body was free of
   contact: ``side = sign(s_{t-1})``, required clearance ``min(gap, |s_{t-1}|)`` (pairs that were
   already closer than ``gap`` are not pushed apart);
5. ``iters`` rounds of: every violated pair moves its vertex and the triangle apart along the
   triangle's normal, half each, the triangle's share split by the closest point's barycentrics
   (Jacobi: the moves of all pairs are averaged per vertex); then ``smooth_passes`` screened membrane
   passes over the correction ``y − x_t`` (towards ``1 − screen`` times its one-ring mean, weight
   ``smooth``), so the contact forms a smooth surface, no single vertex is pulled out of its skin and
   a push fades within a few rings; finally up to ``FINAL_ROUNDS`` rounds of projection alone.

Pairs where the vertex does not face its triangle (clearance along the normal under ``FACING`` times
the distance) are left out: their side is not defined.

The step is small, so a pair never passes through in one step unseen, and the side it keeps is the
one it had where the body was whole. It is a simulation of the skin alone (no inertia),
deterministic: the same pose gives the same body wherever the body stands (within 1e-6 m).
Without contact the correction is zero: where no pair is violated the membrane has nothing to
spread, so the result equals plain skinning, and the rest pose is unchanged.

Volume (``ContactSolveParams.keep_volume``, off by default; ``kisekae bake-correctives --keep-volume``): at the
start of each step, before its pairs are found, each bone's part gets back the volume that skinning and the contact
took from it, as a bulge along the normals away from the previous step's contact pairs
(:mod:`kisekae.avatar.volume_restore`). The bulge is part of the base the contact correction is measured from,
so the membrane's screening does not wear it away, and a bulge that reaches another part is caught by the
step's pairs. Far from contact a bent joint then keeps its flesh (skinning's own loss is given back too).

It is offline: about a second a pose on one core for the built-in body. The per-frame path
cannot run it; what it is for is a reference body for checks and fixes, and the training data of
pose-space correctives (docs/contact.md, candidate 7).

Functions work on plain arrays: :func:`detect_pairs`, :func:`project_pairs` (Numba) and
:func:`project_pairs_numpy` (the NumPy reference), :func:`smooth_correction`; :class:`ContactSolveTopology`
holds what is made once per body; :func:`solve_contact_path` runs the continuation over a list of
skinned bodies; :func:`pose_path` gives the path to a pose; :func:`body_contact_solve` makes an avatar's
body ``deform`` of it (:class:`BodyContactSolve`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from ..errors import KisekaeError
from ..geom.closest import closest_point_and_normal
from ..geom.grid import (outward_orientation, pair_clearance, point_triangle_pairs, point_triangle_pairs_numpy,
                         union_pairs)
from ..geom.normals import vertex_normals
from ..validate import as_faces, as_points

#: Default slerped steps from the rest pose to the pose.
STEPS = 10
#: Default rounds of (projection, smoothing) per step.
ITERS = 10
#: Default clearance kept between two parts, metres (room for two cloth layers).
GAP = 0.004
#: Default distance below which a (vertex, triangle) pair is a candidate, metres.
DETECT = 0.012
#: Default rest distance below which a triangle is the vertex's own neighbourhood, metres.
EXCLUDE = 0.02
#: Default weight of the ring mean in one membrane pass over the correction.
SMOOTH = 0.5
#: Default screening of the membrane: the fraction of the ring's mean lost per pass (a push fades over a few rings).
SCREEN = 0.1
#: Default membrane passes per round.
SMOOTH_PASSES = 2
#: A pair counts only where the vertex faces its triangle: the clearance along the normal is at least this
#: fraction of the distance (an edge or corner seen from the side gives no side).
FACING = 0.25
#: Rounds of projection without smoothing at the end of each step.
FINAL_ROUNDS = 5
#: Rest distance beyond which a (vertex, triangle) pair that faces each other counts as a crease for the volume
#: bulge's mask (metres; the contact pairs' own ``exclude`` leaves the folds of one joint out).
CREASE_EXCLUDE = 0.003
CREASE_RADIUS = 0.008
#: A crease pair's vertex normal and triangle normal point against each other by at least this cosine.
CREASE_FACING = 0.3
#: A vertex that ``BodyContactSolve.then`` moves further than this (metres) gets no volume bulge after it.
THEN_MOVED = 1e-4


@dataclass
class ContactSolveTopology:
    """What the solve needs of one body, made once: welded vertices, triangles and one-ring.

    Parameters
    ----------
    rest : (N, 3) rest positions, metres
    faces : (F, 3) triangles
    weld : (N,) int or None, representative of each vertex (seam duplicates move together)
    orientation : +1 or -1, the sign that turns ``cross(b - a, c - a)`` outward

    Attributes
    ----------
    reps : (M,) representative vertex ids; ``inverse`` (N,) maps every vertex to its row in ``reps``
    tri : (T, 3) int64 triangles on the rows of ``reps`` (degenerate ones after welding dropped)
    ring_ptr, ring_idx : CSR one-ring of the welded vertices
    """

    rest: np.ndarray
    faces: np.ndarray
    weld: np.ndarray | None = None
    orientation: float = 1.0
    reps: np.ndarray = field(init=False)
    inverse: np.ndarray = field(init=False)
    tri: np.ndarray = field(init=False)
    ring_ptr: np.ndarray = field(init=False)
    ring_idx: np.ndarray = field(init=False)

    def __post_init__(self):
        self.rest = as_points(self.rest, "body rest vertices").astype(np.float64)
        self.faces = as_faces(self.faces, len(self.rest), "body faces")
        n = len(self.rest)
        weld = np.arange(n) if self.weld is None else np.asarray(self.weld, dtype=np.int64)
        if weld.shape != (n,) or (n and (weld.min() < 0 or weld.max() >= n)):
            raise KisekaeError(f"weld must hold {n} vertex ids", "body weld")
        if self.orientation not in (1, -1, 1.0, -1.0):
            raise KisekaeError(f"orientation must be +1 or -1, got {self.orientation!r}", "body orientation")
        self.reps, self.inverse = np.unique(weld, return_inverse=True)
        t = self.inverse[weld[self.faces]].astype(np.int64)
        ok = (t[:, 0] != t[:, 1]) & (t[:, 1] != t[:, 2]) & (t[:, 0] != t[:, 2])
        self.tri = np.ascontiguousarray(t[ok])
        m = len(self.reps)
        e = np.concatenate([self.tri[:, [0, 1]], self.tri[:, [1, 2]], self.tri[:, [2, 0]]])
        e = np.unique(np.sort(np.concatenate([e, e[:, ::-1]]), axis=1), axis=0)
        src = np.concatenate([e[:, 0], e[:, 1]])
        dst = np.concatenate([e[:, 1], e[:, 0]])
        order = np.lexsort((dst, src))
        self.ring_idx = np.ascontiguousarray(dst[order], dtype=np.int64)
        self.ring_ptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=m))]).astype(np.int64)

    @property
    def rest_welded(self) -> np.ndarray:
        """(M, 3) rest positions of the welded vertices."""
        return self.rest[self.reps]


# ------------------------------------------------------------------------------------------- pairs
def detect_pairs(points, rest, tri, radius: float = DETECT, exclude: float = EXCLUDE):
    """(vertex, triangle) pairs closer than ``radius`` now and farther than ``exclude`` apart at rest.

    Parameters
    ----------
    points, rest : (M, 3) current and rest positions of the welded vertices, metres
    tri : (T, 3) int triangles on those vertices
    radius, exclude : float, metres

    Returns
    -------
    (vertices (P,) int64, triangles (P,) int64), sorted by triangle then vertex; a vertex never pairs
    with a triangle it is a corner of.
    """
    return point_triangle_pairs(points, points, tri, radius, rest_points=rest, rest_tri_vertices=rest,
                                exclude=exclude, skip_corners=True)


def crease_vertices(points, rest, tri, orientation: float = 1.0, radius: float = DETECT,
                    exclude: float = CREASE_EXCLUDE) -> np.ndarray:
    """Vertex ids where the body folds onto itself: (vertex, triangle) pairs closer than ``radius``, farther than
    ``exclude`` apart at rest, whose vertex lies in front of the triangle with its normal turned against the
    triangle's (a crease closed by bending, such as the belly's in a crouch); the vertex and the triangle's corners.
    Flat or curved skin next to a vertex faces the same way and never counts."""
    y = np.asarray(points, dtype=np.float64)
    pv, pt = detect_pairs(y, rest, tri, radius, exclude)
    if len(pv) == 0:
        return np.zeros(0, dtype=np.int64)
    s, n, _, _ = pair_clearance(y, pv, y, tri, pt, orientation)
    nv = vertex_normals(y, tri, dtype=np.float64)[pv] * orientation
    fold = (s > 0.0) & (np.einsum("ij,ij->i", nv, n) < -CREASE_FACING)
    return np.unique(np.concatenate([pv[fold], tri[pt[fold]].ravel()]))


def detect_pairs_numpy(points, rest, tri, radius: float = DETECT, exclude: float = EXCLUDE):
    """:func:`detect_pairs` by brute force over all (vertex, triangle) pairs (NumPy reference; small meshes)."""
    return point_triangle_pairs_numpy(points, points, tri, radius, rest_points=rest, rest_tri_vertices=rest,
                                      exclude=exclude, skip_corners=True)


# ------------------------------------------------------------------------------------------- projection
def signed_clearance(points, pv, pt, tri, orientation: float = 1.0):
    """Signed distance of each pair's vertex from its triangle's closest point, along the triangle's outward normal
    (:func:`kisekae.geom.grid.pair_clearance` of one mesh against itself).

    Returns
    -------
    s : (P,) metres; normals : (P, 3) unit outward face normals; bary : (P, 3) barycentrics of the closest point
    """
    return pair_clearance(points, pv, points, tri, pt, orientation)[:3]


def project_pairs_numpy(points, pv, pt, tri, side, need, orientation: float = 1.0):
    """One Jacobi round of the pair projection, NumPy reference.

    Every pair whose clearance ``side · s`` is below ``need`` moves its vertex by half the shortfall along
    ``side ·`` the face normal and the triangle's corners by the other half the other way, split by the
    closest point's barycentrics; each vertex then moves by its summed moves over its summed shares.

    Parameters
    ----------
    points : (M, 3) welded positions, metres
    pv, pt : (P,) pairs (vertex, triangle)
    tri : (T, 3) triangles
    side : (P,) +1 or -1, the side each pair keeps
    need : (P,) metres, the clearance each pair keeps
    orientation : +1 or -1 (outward normals)

    Returns
    -------
    (M, 3) float64 new positions; number of violated pairs
    """
    y = np.array(points, dtype=np.float64)
    if not len(pv):
        return y, 0
    s, nrm, bary = signed_clearance(y, pv, pt, tri, orientation)
    short = need - side * s
    act = short > 0
    if not act.any():
        return y, 0
    va, ta, sa = pv[act], pt[act], short[act]
    dirn = nrm[act] * side[act, None]
    acc = np.zeros_like(y)
    cnt = np.zeros(len(y))
    np.add.at(acc, va, 0.5 * sa[:, None] * dirn)
    np.add.at(cnt, va, 1.0)
    for k in range(3):
        w = bary[act, k]
        np.add.at(acc, tri[ta, k], -0.5 * (sa * w)[:, None] * dirn)
        np.add.at(cnt, tri[ta, k], w)
    return y + acc / np.maximum(cnt, 1.0)[:, None], int(act.sum())


@numba.njit(cache=True)
def _project_kernel(y, pv, pt, tri, side, need, orientation, acc, cnt):
    acc[:] = 0.0
    cnt[:] = 0.0
    hits = 0
    for i in range(pv.shape[0]):
        v, t = pv[i], pt[i]
        a, b, c = tri[t, 0], tri[t, 1], tri[t, 2]
        u, w1, w2, qx, qy, qz, nx, ny, nz = closest_point_and_normal(y[v, 0], y[v, 1], y[v, 2], y, a, b, c,
                                                                     orientation)
        s = (y[v, 0] - qx) * nx + (y[v, 1] - qy) * ny + (y[v, 2] - qz) * nz
        short = need[i] - side[i] * s
        if short <= 0.0:
            continue
        hits += 1
        dx, dy, dz = nx * side[i], ny * side[i], nz * side[i]
        acc[v, 0] += 0.5 * short * dx
        acc[v, 1] += 0.5 * short * dy
        acc[v, 2] += 0.5 * short * dz
        cnt[v] += 1.0
        for k, wk in ((a, u), (b, w1), (c, w2)):
            acc[k, 0] -= 0.5 * short * wk * dx
            acc[k, 1] -= 0.5 * short * wk * dy
            acc[k, 2] -= 0.5 * short * wk * dz
            cnt[k] += wk
    for i in range(y.shape[0]):
        m = cnt[i] if cnt[i] > 1.0 else 1.0
        y[i, 0] += acc[i, 0] / m
        y[i, 1] += acc[i, 1] / m
        y[i, 2] += acc[i, 2] / m
    return hits


def project_pairs(points, pv, pt, tri, side, need, orientation: float = 1.0):
    """:func:`project_pairs_numpy` as a Numba kernel (one core); same contract."""
    y = np.array(points, dtype=np.float64)
    acc, cnt = np.empty_like(y), np.empty(len(y))
    hits = _project_kernel(y, np.ascontiguousarray(pv, dtype=np.int64), np.ascontiguousarray(pt, dtype=np.int64),
                           np.ascontiguousarray(tri, dtype=np.int64), np.ascontiguousarray(side, dtype=np.float64),
                           np.ascontiguousarray(need, dtype=np.float64), float(orientation), acc, cnt)
    return y, int(hits)


@numba.njit(cache=True)
def _smooth_kernel(c, ptr, idx, passes, weight, keep, tmp):
    n = c.shape[0]
    for _ in range(passes):
        for i in range(n):
            k = ptr[i + 1] - ptr[i]
            if k == 0:
                tmp[i, 0], tmp[i, 1], tmp[i, 2] = c[i, 0], c[i, 1], c[i, 2]
                continue
            ax = ay = az = 0.0
            for e in range(ptr[i], ptr[i + 1]):
                j = idx[e]
                ax += c[j, 0]
                ay += c[j, 1]
                az += c[j, 2]
            tmp[i, 0] = (1.0 - weight) * c[i, 0] + weight * keep * ax / k
            tmp[i, 1] = (1.0 - weight) * c[i, 1] + weight * keep * ay / k
            tmp[i, 2] = (1.0 - weight) * c[i, 2] + weight * keep * az / k
        c[:, :] = tmp
    return c


def smooth_correction(correction, ring_ptr, ring_idx, passes: int = SMOOTH_PASSES, weight: float = SMOOTH,
                      screen: float = SCREEN):
    """``passes`` screened membrane (Jacobi) passes over a correction field.

    Each vertex's correction moves ``weight`` of the way to ``(1 − screen)`` times its ring's mean: a push spreads
    to the neighbours and fades with every ring, so far from the contacts the correction decays to nothing
    instead of diffusing over the whole body.

    Parameters
    ----------
    correction : (M, 3) metres
    ring_ptr, ring_idx : CSR one-ring
    passes : int; weight, screen : float in [0, 1]
    """
    c = np.array(correction, dtype=np.float64)
    return _smooth_kernel(c, np.asarray(ring_ptr, dtype=np.int64), np.asarray(ring_idx, dtype=np.int64), int(passes),
                          float(weight), 1.0 - float(screen), np.empty_like(c))


def smooth_correction_numpy(correction, ring_ptr, ring_idx, passes: int = SMOOTH_PASSES, weight: float = SMOOTH,
                            screen: float = SCREEN):
    """:func:`smooth_correction`, NumPy reference."""
    c = np.array(correction, dtype=np.float64)
    count = np.diff(ring_ptr)
    owner = np.repeat(np.arange(len(c)), count)
    for _ in range(int(passes)):
        acc = np.zeros_like(c)
        np.add.at(acc, owner, c[ring_idx])
        mean = np.where(count[:, None] > 0, acc / np.maximum(count, 1)[:, None], c)
        c = (1.0 - weight) * c + weight * np.where(count[:, None] > 0, (1.0 - screen) * mean, mean)
    return c


# ------------------------------------------------------------------------------------------- solve
@dataclass
class ContactSolveParams:
    """Settings of the continuation (module docstring); lengths in metres."""

    steps: int = STEPS
    iters: int = ITERS
    gap: float = GAP
    detect: float = DETECT
    exclude: float = EXCLUDE
    smooth: float = SMOOTH
    smooth_passes: int = SMOOTH_PASSES
    screen: float = SCREEN
    keep_volume: bool = False

    def check(self) -> None:
        """Raise :class:`KisekaeError` naming the first setting out of range."""
        for name in ("steps", "iters"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise KisekaeError(f"must be an integer >= 1, got {v!r}", f"contact solve {name}")
        if isinstance(self.smooth_passes, bool) or not isinstance(self.smooth_passes, (int, np.integer)) \
                or self.smooth_passes < 0:
            raise KisekaeError(f"must be an integer >= 0, got {self.smooth_passes!r}", "contact solve smooth_passes")
        for name in ("gap", "detect", "exclude"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise KisekaeError(f"must be a finite length >= 0, got {v!r}", f"contact solve {name}")
        if not self.detect > self.gap:
            raise KisekaeError(f"detect ({self.detect}) must exceed gap ({self.gap})", "contact solve detect")
        for name in ("smooth", "screen"):
            v = getattr(self, name)
            if not (np.isfinite(v) and 0 <= v <= 1):
                raise KisekaeError(f"must lie in [0, 1], got {v!r}", f"contact solve {name}")


def solve_contact_path(topology: ContactSolveTopology, path, params: ContactSolveParams | None = None, *,
                       numpy: bool = False, volume=None) -> np.ndarray:
    """The continuation over a path of skinned bodies that starts at rest.

    Parameters
    ----------
    topology : ContactSolveTopology
    path : sequence of (N, 3) skinned body positions, metres: the steps after the rest pose, the pose last
    params : ContactSolveParams or None (defaults); ``params.steps`` is not used here (the path's length is)
    numpy : bool, run the NumPy references instead of the Numba kernels (pair search included: small meshes only)
    volume : kisekae.avatar.volume_restore.PartVolumes or None, on the welded vertices: at the start of each step,
        give each part back the volume it lost, away from the previous step's contact pairs (the step's pairs are
        then found on the bulged body, so a bulge that reaches another part is pushed back)

    Returns
    -------
    (N, 3) float64 positions of the last step, metres (seam duplicates equal)
    """
    prm = params or ContactSolveParams()
    prm.check()
    topo = topology
    tri = topo.tri
    rest = topo.rest_welded
    project = project_pairs_numpy if numpy else project_pairs
    smooth = smooth_correction_numpy if numpy else smooth_correction
    detect = detect_pairs_numpy if numpy else detect_pairs
    y_prev = rest.copy()
    x_prev = rest.copy()
    n_tri = len(tri)
    contact = np.zeros(0, dtype=np.int64)
    for k, target in enumerate(path):
        x = as_points(target, f"skinned body of step {k + 1}").astype(np.float64)
        if len(x) != len(topo.rest):
            raise KisekaeError(f"{len(x)} vertices for a body of {len(topo.rest)}", f"skinned body of step {k + 1}")
        x = x[topo.reps]
        base = x  # what the contact correction is measured from: the skinned body, bulged when volume is kept
        y = x + (y_prev - x_prev)
        if volume is not None:  # before the pairs are found, so a bulge that reaches another part is caught
            bulged = volume.restore(y, contact)
            base, y = x + (bulged - y), bulged
        a = detect(y, rest, tri, prm.detect, prm.exclude)
        b = detect(y_prev, rest, tri, prm.detect, prm.exclude)
        pv, pt = union_pairs(a, b, n_tri)
        s_prev, _, _, d_prev = pair_clearance(y_prev, pv, y_prev, tri, pt, topo.orientation)
        keep = np.abs(s_prev) >= FACING * d_prev  # the vertex faces the triangle: its side is well defined
        pv, pt, s_prev = pv[keep], pt[keep], s_prev[keep]
        side = np.where(s_prev >= 0.0, 1.0, -1.0)
        need = np.minimum(prm.gap, np.abs(s_prev))
        if volume is not None:
            contact = np.concatenate([pv, tri[pt].ravel()])
        for _ in range(prm.iters):
            y = project(y, pv, pt, tri, side, need, topo.orientation)[0]
            if prm.smooth_passes and prm.smooth > 0:
                y = base + smooth(y - base, topo.ring_ptr, topo.ring_idx, prm.smooth_passes, prm.smooth, prm.screen)
        for _ in range(FINAL_ROUNDS):
            y, hits = project(y, pv, pt, tri, side, need, topo.orientation)
            if not hits:
                break
        y_prev, x_prev = y, base
    return y_prev[topo.inverse]


def local_motion(skeleton, skin_matrices) -> tuple:
    """The pose of ``skin_matrices`` read back as bone-local motion from the rest pose.

    Forward kinematics undone bone by bone: each bone's local rotation relative to its rest orientation and its
    head offset from its rest position in the parent's frame.

    Parameters
    ----------
    skeleton : Skeleton
    skin_matrices : (B, 4, 4) the pose's skinning matrices

    Returns
    -------
    (rotations (B, 3, 3) orthonormal, offsets (B, 3) metres)
    """
    m = np.asarray(skin_matrices, dtype=np.float64)
    nb = skeleton.n_bones
    if m.shape != (nb, 4, 4) or not np.all(np.isfinite(m)):
        raise KisekaeError(f"expected finite ({nb}, 4, 4) skinning matrices, got {m.shape}", "skinning matrices")
    world = m @ skeleton.rest.astype(np.float64)
    local_rest = skeleton.local_rest
    parents = np.asarray(skeleton.parents)
    local = world.copy()
    child = parents >= 0
    try:
        local[child] = np.linalg.solve(world[parents[child]], world[child])
    except np.linalg.LinAlgError:  # a parent scaled to zero (a hidden bone): its least-squares inverse
        local[child] = np.linalg.pinv(world[parents[child]]) @ world[child]
    rot = np.einsum("bji,bjk->bik", local_rest[:, :3, :3], local[:, :3, :3])
    off = local[:, :3, 3] - local_rest[:, :3, 3]
    # the read-back rotation is orthonormal to rounding; project it so the rotation vector is well defined
    u, _, vt = np.linalg.svd(rot)
    return u @ vt, off


def _relative_rotvecs(skeleton, skin_matrices, start) -> tuple:
    """(start rotations, rotation vectors from the start to the pose per bone, start offsets, end offsets)."""
    from scipy.spatial.transform import Rotation

    r1, o1 = local_motion(skeleton, skin_matrices)
    if start is None:
        r0, o0 = np.tile(np.eye(3), (skeleton.n_bones, 1, 1)), np.zeros_like(o1)
    else:
        r0, o0 = local_motion(skeleton, start)
    rel = Rotation.from_matrix(np.einsum("bji,bjk->bik", r0, r1)).as_rotvec()
    return r0, rel, o0, o1


def pose_path(skeleton, skin_matrices, steps: int = STEPS, start=None) -> list:
    """Skinning matrices of ``steps`` poses from the rest pose (or ``start``) to the pose of ``skin_matrices``.

    Both poses are read back from their skinning matrices (:func:`local_motion`); each step slerps every local
    rotation and interpolates the offsets, so the bones stay joined along the way, as an animator's in-between
    would.

    Parameters
    ----------
    skeleton : Skeleton
    skin_matrices : (B, 4, 4) the pose's skinning matrices
    steps : int >= 1
    start : (B, 4, 4) skinning matrices of the pose the path starts from, or None for the rest pose

    Returns
    -------
    list of ``steps`` (B, 4, 4) float64 arrays, the last equal to ``skin_matrices`` (the start not included)
    """
    from scipy.spatial.transform import Rotation

    from .pose import Pose

    m = np.asarray(skin_matrices, dtype=np.float64)
    r0, rel, o0, o1 = _relative_rotvecs(skeleton, m, start)
    out = []
    for k in range(1, steps):
        t = k / steps
        r = r0 @ Rotation.from_rotvec(rel * t).as_matrix()
        out.append(Pose(r, np.zeros(3), f"step {k}", o0 + (o1 - o0) * t).skinning_matrices(skeleton))
    out.append(m)
    return out


def path_steps(skeleton, skin_matrices, start=None, max_degrees: float = 6.0) -> int:
    """Steps :func:`pose_path` needs so that no bone's local rotation changes more than ``max_degrees`` a step.

    Returns
    -------
    int >= 1
    """
    if not (np.isfinite(max_degrees) and max_degrees > 0):
        raise KisekaeError(f"must be a positive angle, got {max_degrees!r}", "path step degrees")
    _, rel, _, _ = _relative_rotvecs(skeleton, skin_matrices, start)
    angle = float(np.degrees(np.linalg.norm(rel, axis=1).max(initial=0.0)))
    return max(1, int(np.ceil(angle / max_degrees - 1e-9)))


@dataclass
class BodyContactSolve:
    """The continuation as a body's ``deform`` (``deform(points, skin_matrices)``, see
    :class:`kisekae.avatar.avatar.SkinnedMesh`): the points are the skinned body, the path is rebuilt from the
    skinning matrices (:func:`pose_path`). Results of the last few poses are kept, since a check poses the body
    several times.

    Attributes
    ----------
    skeleton : Skeleton
    skin : Skin of the body
    topology : ContactSolveTopology
    params : ContactSolveParams
    volume : kisekae.avatar.volume_restore.PartVolumes or None, the body's parts on the welded vertices (used when
        ``params.keep_volume``)
    then : callable ``then(points, skin_matrices)`` or None, the per-frame step that will follow this body (the
        joint planes after the pose-space correctives learned from it): with a volume, the result also carries the
        bulge that gives back what ``then`` takes, away from the vertices ``then`` moves, so the body that ``then``
        makes of it keeps its volume (:meth:`bulge_after`)
    """

    skeleton: object
    skin: object
    topology: ContactSolveTopology
    params: ContactSolveParams = field(default_factory=ContactSolveParams)
    volume: object = None
    then: object = None
    cache_size: int = 8
    _cache: dict = field(default_factory=dict, init=False, repr=False)

    def check(self) -> None:
        self.params.check()

    def __call__(self, points, skin_matrices) -> np.ndarray:
        from .skinning import lbs

        x = as_points(points, "skinned body").astype(np.float64)
        m = np.asarray(skin_matrices, dtype=np.float64)
        key = (m.tobytes(), x.tobytes())
        if key in self._cache:
            return self._cache[key].copy()
        mats = pose_path(self.skeleton, m, self.params.steps)
        rest = self.topology.rest
        path = [lbs(rest, self.skin.indices, self.skin.weights, mk) for mk in mats[:-1]] + [x]
        keep = self.volume if self.params.keep_volume else None
        y = solve_contact_path(self.topology, path, self.params, volume=keep)
        if keep is not None and self.then is not None:
            y = y + self.bulge_after(y, m)
        if len(self._cache) >= self.cache_size:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = y
        return y.copy()


    def bulge_after(self, y, skin_matrices) -> np.ndarray:
        """(N, 3) the bulge that gives each part back the volume that ``then`` takes from the solved body ``y``:
        zero on the vertices ``then`` moves and on those within ``params.detect`` of another part."""
        topo, prm = self.topology, self.params
        z = np.asarray(self.then(np.asarray(y, dtype=np.float32), skin_matrices), dtype=np.float64)
        moved = np.flatnonzero(np.linalg.norm(z - y, axis=1) > THEN_MOVED)
        w = z[topo.reps]
        pv, pt = detect_pairs(w, topo.rest_welded, topo.tri, prm.detect, prm.exclude)
        contact = np.concatenate([pv, topo.tri[pt].ravel(), topo.inverse[moved]])
        return (self.volume.restore(w, contact) - w)[topo.inverse]


def body_contact_solve(avatar, params: ContactSolveParams | None = None, then=None) -> BodyContactSolve:
    """A :class:`BodyContactSolve` for ``avatar``'s body (its rest mesh, weld, skin, outward orientation and, with
    ``params.keep_volume``, its parts' rest volumes, :class:`kisekae.avatar.volume_restore.PartVolumes`), followed by
    ``then`` if given."""
    from .volume_restore import PartVolumes

    body = avatar.body
    mesh = body.mesh
    prm = params or ContactSolveParams()
    orientation = outward_orientation(mesh.vertices, mesh.faces)
    topo = ContactSolveTopology(mesh.vertices, mesh.faces, mesh.weld, float(orientation))
    volume = None
    if prm.keep_volume:  # the parts and the rest creases cost about a second: made only when the volume is kept
        skin = body.skin
        volume = PartVolumes(topo.rest_welded, topo.tri, skin.indices[topo.reps], skin.weights[topo.reps],
                             avatar.skeleton.n_bones, topo.orientation, topo.ring_ptr, topo.ring_idx,
                             avatar.skeleton.parents,
                             held=crease_vertices(topo.rest_welded, topo.rest_welded, topo.tri, topo.orientation,
                                                  CREASE_RADIUS, CREASE_EXCLUDE))
    solve = BodyContactSolve(avatar.skeleton, body.skin, topo, prm, volume, then)
    solve.check()
    return solve

"""The garment carried along the path from the rest pose: a fix that keeps track of which side of the body it is on.

In a deep pose, skinning leaves garment vertices centimetres inside the body, often inside a *different*
part (the belly over the groin, the calf behind the knee). A fix that looks only at the pose must guess
which way such a vertex goes out, and the guesses of neighbours disagree: the cloth crumples (the exact
solver's flipped faces in the crouch). The rest pose has the answer, since there the cloth lies on the skin.
This fix walks from it:

1. the pose is reached in ``steps`` slerped poses (:func:`kisekae.avatar.contact_solve.pose_path`); at each
   the body is posed as the avatar poses it (its contact step included) and the garment starts from its
   skinned position plus the correction the previous step ended with;
2. **front pairs**: every (garment vertex, body triangle) closer than ``radius`` now or at the previous
   step, where at the previous step the vertex was in front of the triangle (clearance above ``-tol``) and
   faced it (clearance at least a quarter of the distance). The vertex is kept ``need`` in front of it;
3. **behind pairs**: every (body vertex, garment triangle) closer than ``radius``, kept on the side of the
   cloth it was on at the previous step, so a bump of the body does not poke through a long cloth
   triangle between its corners (this is what clears edges through the body, not only vertices);
4. ``iters`` rounds of (both projections, Jacobi-averaged per vertex; ``smooth_passes`` screened membrane
   passes over the correction; one stretch-limit pass against the skinned edge lengths), then ``final``
   rounds of projection alone.

Only the garment moves. The push law's masks and skirt bias are not used here: the carried garment keeps a
plain clearance, and the shape and exact stages that :func:`kisekae.fit.fix.fix_pose` runs after it apply them.
The steps are small, so a vertex never crosses a body surface unseen, and the side
it keeps is the one it had on the skin. It is offline (about a second a garment and pose on one core);
:func:`kisekae.fit.fix.fix_pose` runs it for ``method="path"`` and, in ``auto``, where the shape-preserving solve
leaves clipping; where the carried garment still clips, the shape-preserving and then the exact solver start from
it. Docs: docs/fit.md.

Plain-array functions: :func:`mesh_pairs` (Numba hash grid) and :func:`mesh_pairs_numpy` (brute force),
:func:`project_front` and :func:`project_behind` (Numba) with their NumPy references; :func:`carry_garment`
runs the whole path on arrays; :func:`path_fix_garment` does it for an avatar's garment in a pose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..avatar.contact_solve import pose_path, smooth_correction
from ..errors import KisekaeError
from ..geom.closest import closest_point_and_normal
from ..geom.grid import (outward_orientation, pair_clearance, point_triangle_pairs, point_triangle_pairs_numpy,
                         union_pairs)
from ..validate import as_faces, as_points
from .surface import one_ring, stretch_limit

#: Facing: the clearance along the normal must be at least this fraction of the distance for a pair to count.
FACING = 0.25


@dataclass
class PathParams:
    """Settings of :func:`carry_garment`; lengths in metres."""

    steps: int = 20
    iters: int = 10
    final: int = 10
    radius: float = 0.015
    tol: float = 0.005
    need: float = 0.0015
    smooth_passes: int = 2
    screen: float = 0.05

    def check(self) -> None:
        """Raise :class:`KisekaeError` naming the first setting out of range."""
        for name, low in (("steps", 1), ("iters", 0), ("final", 0), ("smooth_passes", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise KisekaeError(f"must be an integer >= {low}, got {v!r}", f"path fix {name}")
        for name in ("radius", "tol", "need"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise KisekaeError(f"must be a finite length >= 0, got {v!r}", f"path fix {name}")
        if not self.radius > self.need:
            raise KisekaeError(f"radius ({self.radius}) must exceed need ({self.need})", "path fix radius")
        if not (np.isfinite(self.screen) and 0 <= self.screen <= 1):
            raise KisekaeError(f"must lie in [0, 1], got {self.screen!r}", "path fix screen")


# ------------------------------------------------------------------------------------------- pairs
def mesh_pairs(points, tri_vertices, tri, radius: float):
    """(point, triangle) pairs closer than ``radius``, between a point set and another mesh's triangles.

    Parameters
    ----------
    points : (P, 3) metres
    tri_vertices : (V, 3) metres; tri : (T, 3) int triangles on them
    radius : float, metres

    Returns
    -------
    (points (K,) int64, triangles (K,) int64) sorted by triangle, then point
    """
    return point_triangle_pairs(points, tri_vertices, tri, radius)


def mesh_pairs_numpy(points, tri_vertices, tri, radius: float):
    """:func:`mesh_pairs` by brute force (NumPy reference; small meshes)."""
    return point_triangle_pairs_numpy(points, tri_vertices, tri, radius)


# ------------------------------------------------------------------------------------------- projections
def project_front_numpy(garment, pv, body, body_tri, pt, need, orientation, acc, cnt):
    """Front pairs, NumPy reference: add to ``acc`` each garment vertex's shortfall ``need − s`` along the body
    triangle's outward normal and 1 to ``cnt`` (only pairs short of ``need``)."""
    if not len(pv):
        return
    s, n, _, _ = pair_clearance(garment, pv, body, body_tri, pt, orientation)
    short = need - s
    act = short > 0
    np.add.at(acc, pv[act], short[act, None] * n[act])
    np.add.at(cnt, pv[act], 1.0)


def project_behind_numpy(body, bv, garment, garment_tri, bt, side, need, acc, cnt):
    """Behind pairs, NumPy reference: each body vertex short of ``need`` on its ``side`` of a garment triangle moves
    the triangle's corners away from it by the shortfall times their barycentric weight (``cnt`` gets the weight)."""
    if not len(bv):
        return
    s, n, bary, _ = pair_clearance(body, bv, garment, garment_tri, bt, 1.0)
    short = need - side * s
    act = short > 0
    for k in range(3):
        w = bary[act, k]
        np.add.at(acc, garment_tri[bt[act], k], -(short[act] * w * side[act])[:, None] * n[act])
        np.add.at(cnt, garment_tri[bt[act], k], w)


@numba.njit(cache=True)
def _front_kernel(g, pv, body, btri, pt, need, orientation, acc, cnt):
    for i in range(pv.shape[0]):
        v, t = pv[i], pt[i]
        u, w1, w2, qx, qy, qz, nx, ny, nz = closest_point_and_normal(g[v, 0], g[v, 1], g[v, 2], body, btri[t, 0],
                                                                     btri[t, 1], btri[t, 2], orientation)
        short = need - ((g[v, 0] - qx) * nx + (g[v, 1] - qy) * ny + (g[v, 2] - qz) * nz)
        if short > 0.0:
            acc[v, 0] += short * nx
            acc[v, 1] += short * ny
            acc[v, 2] += short * nz
            cnt[v] += 1.0


@numba.njit(cache=True)
def _behind_kernel(body, bv, g, gtri, bt, side, need, acc, cnt):
    for i in range(bv.shape[0]):
        v, t = bv[i], bt[i]
        a, b, c = gtri[t, 0], gtri[t, 1], gtri[t, 2]
        u, w1, w2, qx, qy, qz, nx, ny, nz = closest_point_and_normal(body[v, 0], body[v, 1], body[v, 2], g, a, b, c,
                                                                     1.0)
        short = need[i] - side[i] * ((body[v, 0] - qx) * nx + (body[v, 1] - qy) * ny + (body[v, 2] - qz) * nz)
        if short > 0.0:
            for k, wk in ((a, u), (b, w1), (c, w2)):
                acc[k, 0] -= short * wk * side[i] * nx
                acc[k, 1] -= short * wk * side[i] * ny
                acc[k, 2] -= short * wk * side[i] * nz
                cnt[k] += wk


def project_front(garment, pv, body, body_tri, pt, need, orientation, acc, cnt):
    """:func:`project_front_numpy` as a Numba kernel; ``acc`` and ``cnt`` are float64 arrays it adds to."""
    _front_kernel(np.ascontiguousarray(garment, dtype=np.float64), pv, np.ascontiguousarray(body, dtype=np.float64),
                  body_tri, pt, float(need), float(orientation), acc, cnt)


def project_behind(body, bv, garment, garment_tri, bt, side, need, acc, cnt):
    """:func:`project_behind_numpy` as a Numba kernel (``need`` per pair); same contract."""
    _behind_kernel(np.ascontiguousarray(body, dtype=np.float64), bv, np.ascontiguousarray(garment, dtype=np.float64),
                   garment_tri, bt, np.ascontiguousarray(side, dtype=np.float64),
                   np.ascontiguousarray(need, dtype=np.float64), acc, cnt)


# ------------------------------------------------------------------------------------------- the path
def carry_garment(bodies, body_faces, garments, garment_faces, weld, ring, params: PathParams | None = None,
                  orientation: float = 1.0, *, start=None, numpy: bool = False, on_step=None) -> np.ndarray:
    """Carry a garment along a path of posed bodies (module docstring).

    Parameters
    ----------
    bodies : sequence of (Nb, 3) posed body positions, metres; the first step after the start, the pose last
    body_faces : (F, 3) int body triangles; ``orientation`` +1 or -1 turns their normals outward
    garments : sequence of (N, 3) skinned garment positions at the same steps, metres
    garment_faces : (G, 3) int garment triangles (welded: seam duplicates on their representative)
    weld : (N,) int representative of each garment vertex
    ring : :func:`kisekae.fit.surface.one_ring` of the garment
    params : PathParams
    start : (body (Nb, 3), garment (N, 3)) where the path starts (default: the first step itself)
    numpy : bool, the NumPy references instead of the Numba kernels (pair search included)
    on_step : callable ``(k, positions)`` or None, called after every step with its garment positions (a copy),
        e.g. to follow a clip frame by frame

    Returns
    -------
    (N, 3) float64 garment positions at the last step
    """
    prm = params or PathParams()
    prm.check()
    if len(bodies) != len(garments) or not len(bodies):
        raise KisekaeError(f"{len(bodies)} bodies for {len(garments)} garment steps", "path fix")
    bf = np.ascontiguousarray(body_faces, dtype=np.int64)
    gf = np.ascontiguousarray(garment_faces, dtype=np.int64)
    weld = np.asarray(weld, dtype=np.int64)
    pairs = mesh_pairs_numpy if numpy else mesh_pairs
    front = project_front_numpy if numpy else project_front
    behind = project_behind_numpy if numpy else project_behind
    if start is None:
        b_prev = as_points(bodies[0], "posed body").astype(np.float64)
        y_prev = as_points(garments[0], "skinned garment").astype(np.float64)
    else:
        b_prev = as_points(start[0], "posed body").astype(np.float64)
        y_prev = as_points(start[1], "skinned garment").astype(np.float64)
    x_prev = y_prev.copy()
    origin = y_prev[0].copy() if len(y_prev) else np.zeros(3)

    def snap(p):
        # every round on float32 steps around the start's first vertex: NumPy versions differ in the last bits of
        # their sums, and which pairs act reacts to any change; the grid makes the result the same under every
        # version and wherever the scene stands (as the shape solve does)
        return (p - origin).astype(np.float32).astype(np.float64) + origin

    as_faces(bf, len(b_prev), "body faces")
    as_faces(gf, len(y_prev), "garment faces")
    for k, (body, x) in enumerate(zip(bodies, garments)):
        body = as_points(body, f"posed body of step {k + 1}").astype(np.float64)
        x = as_points(x, f"skinned garment of step {k + 1}").astype(np.float64)
        if body.shape != b_prev.shape or x.shape != y_prev.shape:
            raise KisekaeError(f"step {k + 1} has {len(body)} body and {len(x)} garment vertices, the path "
                               f"{len(b_prev)} and {len(y_prev)}", "path fix")
        y = x + (y_prev - x_prev)
        fv, ft = union_pairs(pairs(y, body, bf, prm.radius), pairs(y_prev, b_prev, bf, prm.radius), len(bf))
        s, _, _, d = pair_clearance(y_prev, fv, b_prev, bf, ft, orientation)
        keep = (s > -prm.tol) & ((s >= FACING * d) | (d < prm.tol))
        fv, ft = fv[keep], ft[keep]
        bv, bt = union_pairs(pairs(body, y, gf, prm.radius), pairs(b_prev, y_prev, gf, prm.radius), len(gf))
        s, _, _, d = pair_clearance(b_prev, bv, y_prev, gf, bt, 1.0)
        keep = np.abs(s) >= FACING * d
        bv, bt = bv[keep], bt[keep]
        side = np.where(s[keep] >= 0, 1.0, -1.0)
        bneed = np.minimum(prm.need, np.abs(s[keep]))
        for it in range(prm.iters + prm.final):
            acc = np.zeros_like(y)
            cnt = np.zeros(len(y))
            front(y, fv, body, bf, ft, prm.need, orientation, acc, cnt)
            behind(body, bv, y, gf, bt, side, bneed, acc, cnt)
            y = (y + acc / np.maximum(cnt, 1.0)[:, None])[weld]
            if it < prm.iters:
                y = x + smooth_correction(y - x, ring[0], ring[1], prm.smooth_passes, 0.5, prm.screen)
                y = stretch_limit(y, x, ring)[0]
            y = snap(y)
        y_prev, x_prev, b_prev = y, x, body
        if on_step is not None:
            on_step(k, y.copy())
    return y_prev


def path_fix_garment(avatar, pose, name: str, params: PathParams | None = None) -> np.ndarray:
    """:func:`carry_garment` for garment ``name`` of ``avatar`` from the rest pose to ``pose``.

    Returns
    -------
    (N, 3) float64 garment positions in ``pose``, metres
    """
    prm = params or PathParams()
    prm.check()
    sk = avatar.skeleton
    part = avatar.part(name)
    mesh = part.mesh
    mats = pose_path(sk, pose.skinning_matrices(sk), prm.steps)
    rest_m = np.tile(np.eye(4), (sk.n_bones, 1, 1))
    faces = avatar.body.mesh.faces
    ring = one_ring(mesh.n_vertices, mesh.edges, mesh.weld)
    return carry_garment([avatar.body.posed(m) for m in mats], faces, [part.posed(m) for m in mats],
                         np.asarray(mesh.weld)[mesh.faces], mesh.weld, ring, prm,
                         outward_orientation(avatar.body.mesh.vertices, faces),
                         start=(avatar.body.posed(rest_m), part.posed(rest_m)))

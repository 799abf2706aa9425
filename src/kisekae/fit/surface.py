"""Surface push: the per-frame garment correction against the posed body surface itself.

Every garment vertex gets, once per (avatar, garment), a short list of body triangles that it may meet in
any pose: its *candidates* (:func:`bake_surface_candidates`). They are the body triangles nearest to the
skinned garment vertex over a range-of-motion sample of poses (:func:`kisekae.avatar.poses.range_of_motion_poses`),
the most frequent first, so the list holds the vertex's own skin and also the skin of the other parts that
fold onto it: the belly over the groin, the back of the thigh over the calf, the chest at the armpit. Each
frame (:func:`surface_push`), with the posed body (skinning, then the body contact) and its vertex normals:

1. the closest point ``q`` of the vertex ``p`` on each candidate triangle; the nearest one within ``reach``
   (default: maxPush) is its surface point, with the normal ``n`` blended from the triangle's vertex normals
   at ``q``;
2. ``s = (p − q) · n − c`` is the signed clearance, less the vertex's chord allowance ``c``
   (:func:`chord_allowance`: a flat cloth triangle between vertices on a curved body dips under it by the
   sagitta κ L² / 8, L the vertex's longest edge and κ the body's curvature at q (:func:`body_curvature`), so
   each vertex keeps that much more room, capped at :data:`CHORD_CAP`); the seed's push law (:func:`kisekae.fit.pushout.push_amount`:
   margin, stiffness, maxPush, skirt bias, tightness and softness masks) moves the vertex along ``n``
   (skirt-biased).

This is the skin-bound clearance of :mod:`kisekae.fit.bound` with the bound point replaced by the nearest of
the candidates, so a vertex bound to the thigh is also kept off the belly when the hip folds.
:func:`surface_runtime` runs it twice with a few passes of :func:`smooth_push` between them (one-ring Jacobi
passes that spread each push to the neighbours, never shrinking one), which is what keeps the cloth's shape:
a compute pass over the one-ring in an engine. The total displacement is capped at maxPush.

NumPy reference (:func:`surface_push_numpy`, :func:`smooth_push_numpy`) and Numba kernels (:func:`surface_push`,
:func:`smooth_push`) agree to 1e-9 m; the HLSL core's ``KisekaeSurfacePush`` ports the per-vertex step.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numba
import numpy as np

from ..errors import KisekaeError
from ..geom.closest import closest_barycentric, closest_point_triangles_numpy
# One-ring smoothing (SMOOTH_PASSES: passes between the two pushes of surface_runtime); re-exported as this module's API.
from ..geom.ring import SMOOTH_PASSES, nonzero_rows, one_ring, smooth_push, smooth_push_numpy, welded_csr  # noqa: F401
from ..validate import as_faces, as_nonnegative, as_points
from .bound import _f64
from .pushout import PushParams, _block_push, bias_direction, block_buffers, cap_displacement, push_amount

#: Candidate triangles per garment vertex.
CANDIDATES = 32
#: Range-of-motion poses sampled for the bake (plus the rest pose).
BAKE_POSES = 300
#: Vertices per block of the Numba kernel.
BLOCK = 64
#: A depth bound this large (metres) is no bound: a body vertex whose inward ray leaves the body
#: (:mod:`kisekae.fit.depth_bound`), or a push without bounds. The shader core reads the same value.
NO_DEPTH_BOUND = 1e30
#: Largest chord allowance, metres (:func:`chord_allowance`): curvature from vertex normals is noisy at creases.
CHORD_CAP = 0.003
#: Stretch limit of :func:`stretch_limit`: an edge may grow to ``1 + STRETCH_LIMIT`` times its skinned length.
STRETCH_LIMIT = 0.1
#: An edge counts as over the stretch limit only when longer than ``1 + LIMIT_TIE`` times it, and as under its floor only
#: when shorter than ``1 - LIMIT_TIE`` times that: a pass leaves edges exactly at a bound, and the next pass must not
#: decide them by rounding, since each vertex a pass moves is pushed again. NumPy and Numba disagreed there at 1e-9;
#: float32 on a GPU rounds at 1e-7 relative, and with 1e-9 the Unity kernels parted from the float64 reference by up
#: to 7 mm in the crouch once the floor (:data:`COMPRESSION_LIMIT`) had left many edges at a bound.
LIMIT_TIE = 1e-5
#: Passes of stretch limiting, each followed by the push of the vertices it moved, at the end of
#: :func:`surface_runtime`.
LIMIT_PASSES = 4
#: Compression limit of the cloth that clings to the body (:func:`shortest_lengths`): a one-ring edge between two such
#: vertices may shrink to ``1 - COMPRESSION_LIMIT`` times its skinned length, no shorter. Loose cloth has no floor:
#: its compression is a fold. Measured over 14 poses x tights and skirt (docs/fit.md): the tights' strain maximum in
#: the crouch 0.64 -> 0.30, with as many flipped faces as without it.
COMPRESSION_LIMIT = 0.15
#: Rest clearance (m, :attr:`kisekae.fit.bound.SkinBinding.rest_offset`) at or under which a garment vertex clings to
#: the body: cloth within 1 cm of the skin at rest has no room to fold when the skin under it folds.
CLING_CLEARANCE = 0.01
#: Default of the per-frame path's finish cap (metres, :func:`surface_runtime`'s ``finish_step`` as
#: :func:`kisekae.fit.runtime.runtime_pose` and ``kisekae check --runtime`` use it): the most the edge lift and unflip
#: move a vertex in one frame. Measured over 17 poses x 4 garments and 1 s motions (docs/fit.md): at 4 mm the lift keeps
#: most of what it clears and the tights' pops stay under 5 mm.
FINISH_STEP = 0.004


@dataclass
class SurfaceCandidates:
    """Body triangles each garment vertex may meet, baked once per (avatar, garment).

    Attributes
    ----------
    triangles : (N, K) int32 body triangle ids per garment vertex, the most frequent nearest first; a vertex
        with fewer than K distinct ones repeats its first
    n_body_faces : int, triangles of the body it was baked on (checked each frame)
    """

    triangles: np.ndarray
    n_body_faces: int

    def check(self, n_points: int, body_faces, source: str = "surface candidates") -> None:
        """Raise :class:`KisekaeError` unless this bake fits ``n_points`` garment vertices and ``body_faces``."""
        if self.triangles.ndim != 2 or len(self.triangles) != n_points:
            raise KisekaeError(f"baked for {len(self.triangles)} garment vertices, got {n_points}", source)
        if len(body_faces) != self.n_body_faces:
            raise KisekaeError(f"baked for a body of {self.n_body_faces} triangles, got {len(body_faces)}", source)


def bake_surface_candidates(avatar, name: str, poses=None, k: int = CANDIDATES, *, n_poses: int = BAKE_POSES,
                            seed: int = 0, progress: bool = False, points_of=None, hits: bool = False, onto=None,
                            arm_poses: int = 0):
    """The candidate body triangles of garment ``name``.

    Parameters
    ----------
    avatar : kisekae.avatar.Avatar, posed as the runtime poses it (with or without the body contact)
    name : str, a garment of ``avatar``
    poses : list of Pose or None
        Poses to sample; None: the rest pose and ``n_poses`` range-of-motion poses
        (:func:`kisekae.avatar.poses.range_of_motion_poses` with ``seed``). Held-out poses need no entry: what
        matters is which skin folds onto which, and the range of motion covers it.
    k : int, candidates per vertex (1 to 64)
    progress : bool, print a line to stderr every 50 poses
    points_of : callable or None, the points to bake from the skinned garment ((N, 3) -> (M, 3)), e.g. the
        samples on its edges (:func:`kisekae.fit.edge_lift.bake_sample_candidates`); None: its vertices
    hits : bool, also return the nearest triangle of every point in every pose
    onto : str or None, a garment of ``avatar`` whose triangles are the candidates instead of the body's (the layer
        push, :func:`kisekae.fit.layer_push.bake_layer_candidates`)
    arm_poses : int >= 0, with ``poses`` None: also this many poses with the arms at the sides
        (:data:`kisekae.avatar.poses.ARMS_AT_SIDES`, seed ``seed + 1``) after the range of motion

    Returns
    -------
    SurfaceCandidates, or with ``hits`` ``(SurfaceCandidates, (P, M) int64 nearest triangle ids, poses)``
    """
    from ..avatar.pose import Pose
    from ..avatar.poses import ARMS_AT_SIDES, range_of_motion_poses
    from ..geom.bvh import build_bvh, refit
    from ..geom.closest import surface_distance

    if not (isinstance(k, (int, np.integer)) and 1 <= k <= 64):
        raise KisekaeError(f"must be an integer from 1 to 64, got {k!r}", "candidates")
    if isinstance(arm_poses, bool) or not (isinstance(arm_poses, (int, np.integer)) and arm_poses >= 0):
        raise KisekaeError(f"must be a whole number of poses, got {arm_poses!r}", "arm poses")
    sk, part = avatar.skeleton, avatar.part(name)
    body = avatar.body if onto is None else avatar.part(onto)
    if poses is None:
        poses = [Pose.rest(sk)] + range_of_motion_poses(sk, n_poses, seed)
        if arm_poses:
            poses += range_of_motion_poses(sk, arm_poses, seed=seed + 1, ranges=ARMS_AT_SIDES)
    faces = body.mesh.faces
    tree = build_bvh(body.mesh.vertices, faces)
    points_of = points_of or (lambda x: x)
    n = len(points_of(part.mesh.vertices))
    found = np.empty((len(poses), n), dtype=np.int64)
    for i, pose in enumerate(poses):
        m = pose.skinning_matrices(sk)
        state = refit(tree, body.posed(m), faces)
        found[i] = surface_distance(points_of(part.posed(m)), tree, state)[1] if n else found[i]
        if progress and (i + 1) % 50 == 0:
            print(f"  surface candidates of {name}{'' if onto is None else ' on ' + onto}: {i + 1}/{len(poses)} "
                  "poses", file=sys.stderr)
    cand = SurfaceCandidates(_most_frequent(found, k), len(faces))
    return (cand, found, poses) if hits else cand


def _most_frequent(hits, k: int) -> np.ndarray:
    """(N, k) int32: per column of ``hits`` (P, N), its values by falling count (ties: smaller id first)."""
    p, n = hits.shape
    out = np.empty((n, k), dtype=np.int32)
    order = np.sort(hits, axis=0)
    for v in range(n):
        vals, counts = np.unique(order[:, v], return_counts=True)
        top = vals[np.lexsort((vals, -counts))][:k]
        out[v, :len(top)] = top
        out[v, len(top):] = top[0]
    return out


def garment_chords(mesh) -> np.ndarray:
    """(N,) float64 longest rest edge at each garment vertex, metres (welded: seam copies share it)."""
    e = np.asarray(mesh.edges, dtype=np.int64)
    v = np.asarray(mesh.vertices, dtype=np.float64)
    length = np.linalg.norm(v[e[:, 0]] - v[e[:, 1]], axis=1)
    out = np.zeros(mesh.n_vertices)
    np.maximum.at(out, e[:, 0], length)
    np.maximum.at(out, e[:, 1], length)
    return out[np.asarray(mesh.weld)]


def body_curvature(body, body_normals, body_faces) -> np.ndarray:
    """(Nb,) float64 curvature estimate at each body vertex, 1/m: the largest ``|n_a − n_b| / |x_a − x_b|`` over
    the triangle edges at it (0 on zero-length edges). Per frame, from the posed body and its unit normals."""
    v = np.asarray(body, dtype=np.float64)
    n = np.asarray(body_normals, dtype=np.float64)
    f = np.asarray(body_faces, dtype=np.int64)
    out = np.zeros(len(v))
    for a, b in ((0, 1), (1, 2), (2, 0)):
        ia, ib = f[:, a], f[:, b]
        dx = np.linalg.norm(v[ia] - v[ib], axis=1)
        k = np.where(dx > 1e-9, np.linalg.norm(n[ia] - n[ib], axis=1) / np.maximum(dx, 1e-9), 0.0)
        np.maximum.at(out, ia, k)
        np.maximum.at(out, ib, k)
    return out


@numba.njit(cache=True, error_model="numpy")
def _curvature_kernel(v, n, f, out):
    out[:] = 0.0
    for t in range(f.shape[0]):
        for e in range(3):
            a, b = f[t, e], f[t, (e + 1) % 3]
            dx = np.sqrt((v[a, 0] - v[b, 0]) ** 2 + (v[a, 1] - v[b, 1]) ** 2 + (v[a, 2] - v[b, 2]) ** 2)
            if dx > 1e-9:
                k = np.sqrt((n[a, 0] - n[b, 0]) ** 2 + (n[a, 1] - n[b, 1]) ** 2 + (n[a, 2] - n[b, 2]) ** 2) / dx
                out[a] = max(out[a], k)
                out[b] = max(out[b], k)


def chord_allowance(chord, kappa, cap: float = CHORD_CAP) -> np.ndarray:
    """Sagitta of the garment's chords over the body near each vertex, metres: ``min(κ L² / 8, cap)``.

    Parameters
    ----------
    chord : (N,) the vertex's longest edge L, metres (:func:`garment_chords`)
    kappa : (N,) body curvature at the vertex's nearest body point, 1/m (:func:`body_curvature` blended with
        the point's barycentrics, so it does not jump where two triangles are equally near)
    cap : float, metres
    """
    return np.minimum(np.asarray(kappa, dtype=np.float64) * np.asarray(chord, dtype=np.float64) ** 2 / 8.0, cap)


def _inputs(points, candidates: SurfaceCandidates, body, body_normals, body_faces, tightness, softness):
    p = as_points(points, "garment vertices").astype(np.float64)
    v = as_points(body, "posed body vertices").astype(np.float64)
    nb = as_points(body_normals, "posed body normals").astype(np.float64)
    f = as_faces(body_faces, len(v), "body faces")
    if len(nb) != len(v):
        raise KisekaeError(f"{len(nb)} normals for {len(v)} body vertices", "posed body normals")
    if candidates is not None:
        candidates.check(len(p), f)
    t = np.broadcast_to(np.asarray(tightness, dtype=np.float64), (len(p),))
    s = np.broadcast_to(np.asarray(softness, dtype=np.float64), (len(p),))
    return p, v, nb, f, np.ascontiguousarray(t), np.ascontiguousarray(s)


def surface_push_numpy(points, candidates: SurfaceCandidates, body, body_normals, body_faces,
                       params: PushParams | None = None, tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0),
                       reach: float | None = None, chord=None, depth_bound=None):
    """One surface push, NumPy reference.

    Parameters
    ----------
    points : (N, 3) garment vertices, metres
    candidates : SurfaceCandidates of this garment on this body
    body, body_normals : (Nb, 3) posed body vertices (metres) and unit vertex normals
    body_faces : (F, 3) body triangles
    params : PushParams (margin, stiffness, max_push, skirt_bias)
    tightness, softness : float or (N,) masks, 0..1
    up : (3,) the skirt bias's up axis
    reach : float, metres: a candidate farther than this from the vertex is ignored (default ``max_push``)
    chord : (N,) longest edge at each vertex, metres (:func:`garment_chords`), or None: no chord allowance
    depth_bound : (Nb,) per body vertex, metres, or None: the deepest a point inside the body can lie below the skin
        there (:func:`kisekae.fit.depth_bound.body_depth_bound`). Where the nearest candidate puts the vertex behind
        its surface (``(p - q) . n < 0``) farther than the bound blended at q (``|p - q| > bound``), that candidate is
        not the vertex's nearest skin (the list misses the skin that is) and the vertex is not pushed, as when no
        candidate is within reach

    Returns
    -------
    new_points : (N, 3) float64; push : (N,) metres; clearance : (N,) signed clearance before the push
    (``inf`` where no candidate is within reach, or where the nearest one is beyond the depth bound)
    """
    params = params or PushParams()
    p, v, nb, f, t, s = _inputs(points, candidates, body, body_normals, body_faces, tightness, softness)
    reach = params.max_push if reach is None else float(reach)
    tri = f[candidates.triangles]  # (N, K, 3)
    n_pts, k = candidates.triangles.shape
    rep = np.repeat(p, k, axis=0)
    q, bary = closest_point_triangles_numpy(rep, *(v[tri[:, :, c]].reshape(-1, 3) for c in range(3)))[:2]
    dist = np.linalg.norm(rep - q, axis=1).reshape(n_pts, k)
    best = np.argmin(dist, axis=1)  # first of equals: the most frequent candidate
    rows = np.arange(n_pts)
    qb = q.reshape(n_pts, k, 3)[rows, best]
    bb = np.asarray(bary).reshape(n_pts, k, 3)[rows, best]
    nrm = np.einsum("nc,ncd->nd", bb, nb[tri[rows, best]])
    nrm /= np.maximum(np.linalg.norm(nrm, axis=1), 1e-12)[:, None]
    sag = 0.0
    if chord is not None:
        kappa = np.einsum("nc,nc->n", bb, body_curvature(v, nb, f)[tri[rows, best]])
        sag = chord_allowance(as_nonnegative(chord, n_pts, "chord"), kappa)
    side = np.einsum("ij,ij->i", p - qb, nrm)
    bound = np.einsum("nc,nc->n", bb, as_depth_bound(depth_bound, len(v))[tri[rows, best]])
    trusted = (dist[rows, best] <= reach) & ~((side < 0.0) & (dist[rows, best] > bound))
    clear = np.where(trusted, side - sag, np.inf)
    amount = np.where(np.isfinite(clear), push_amount(np.where(np.isfinite(clear), clear, 1.0), params.margin,
                                                      params.stiffness, params.max_push, t, s, params.skirt_bias), 0.0)
    direction = bias_direction(nrm, params.skirt_bias, np.asarray(up, dtype=np.float64))
    return p + amount[:, None] * direction, amount, clear


@numba.njit(cache=True, error_model="numpy")
def _triangle_spheres(body, faces, out):
    """Bounds of every body triangle this frame, ``(F, 8)``: its bounding sphere (centroid, largest corner distance
    padded by 1e-9 relative and 1e-12 m) and its plane (unit normal, offset ``n . a``; all 0 for a triangle of no
    area). A point's distance to the triangle is at least its distance to either."""
    for t in range(faces.shape[0]):
        a, b, c = faces[t, 0], faces[t, 1], faces[t, 2]
        cx = (body[a, 0] + body[b, 0] + body[c, 0]) / 3.0
        cy = (body[a, 1] + body[b, 1] + body[c, 1]) / 3.0
        cz = (body[a, 2] + body[b, 2] + body[c, 2]) / 3.0
        r2 = 0.0
        for v in (a, b, c):
            dx, dy, dz = body[v, 0] - cx, body[v, 1] - cy, body[v, 2] - cz
            r2 = max(r2, dx * dx + dy * dy + dz * dz)
        out[t, 0] = cx
        out[t, 1] = cy
        out[t, 2] = cz
        out[t, 3] = np.sqrt(r2) * (1.0 + 1e-9) + 1e-12
        ux, uy, uz = body[b, 0] - body[a, 0], body[b, 1] - body[a, 1], body[b, 2] - body[a, 2]
        wx, wy, wz = body[c, 0] - body[a, 0], body[c, 1] - body[a, 1], body[c, 2] - body[a, 2]
        nx, ny, nz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
        nl = np.sqrt(nx * nx + ny * ny + nz * nz)
        if nl > 0.0:
            nx, ny, nz = nx / nl, ny / nl, nz / nl
        else:
            nx = ny = nz = 0.0
        out[t, 4] = nx
        out[t, 5] = ny
        out[t, 6] = nz
        out[t, 7] = nx * body[a, 0] + ny * body[a, 1] + nz * body[a, 2]


@numba.njit(cache=True, error_model="numpy")
def _surface_kernel(points, active, cand, faces, body, body_normals, spheres, chord, kv, cap, tight, soft, prm, reach2,
                    out, s_out, depth):
    margin, stiffness, max_push, skirt_bias, upx, upy, upz = prm[0], prm[1], prm[2], prm[3], prm[4], prm[5], prm[6]
    n = active.shape[0]
    dd, gx, gy, gz, ct, cs, amt = block_buffers(BLOCK)
    for s0 in range(0, n, BLOCK):
        m = min(BLOCK, n - s0)
        for i in range(m):
            v = active[s0 + i]
            px, py, pz = points[v, 0], points[v, 1], points[v, 2]
            # nothing beyond reach counts: a triangle whose bounding sphere lies beyond it is skipped unread
            best = reach2
            found = False
            kap = 0.0
            bound = np.inf
            qx = qy = qz = 0.0
            nx = ny = nz = 0.0
            for k in range(cand.shape[1]):
                t = cand[v, k]
                if k > 0 and t == cand[v, 0]:
                    break  # the bake pads a short list with its first: the rest are repeats
                # the triangle's bounding sphere and its plane bound its distance from below: skip what cannot be
                # nearer (the plane's distance shrunk by 1e-9 relative and 1e-12 m against rounding)
                ex, ey, ez = px - spheres[t, 0], py - spheres[t, 1], pz - spheres[t, 2]
                lb = np.sqrt(ex * ex + ey * ey + ez * ez) - spheres[t, 3]
                pl = abs(px * spheres[t, 4] + py * spheres[t, 5] + pz * spheres[t, 6] - spheres[t, 7])
                lb = max(lb, pl * (1.0 - 1e-9) - 1e-12)
                if lb > 0.0 and lb * lb > best:
                    continue
                a, b, c = faces[t, 0], faces[t, 1], faces[t, 2]
                u, w1, w2 = closest_barycentric(px, py, pz, body[a, 0], body[a, 1], body[a, 2], body[b, 0], body[b, 1],
                                                body[b, 2], body[c, 0], body[c, 1], body[c, 2])
                cx = u * body[a, 0] + w1 * body[b, 0] + w2 * body[c, 0]
                cy = u * body[a, 1] + w1 * body[b, 1] + w2 * body[c, 1]
                cz = u * body[a, 2] + w1 * body[b, 2] + w2 * body[c, 2]
                d2 = (px - cx) * (px - cx) + (py - cy) * (py - cy) + (pz - cz) * (pz - cz)
                if d2 < best or (d2 == best and not found):
                    best = d2
                    found = True
                    kap = u * kv[a] + w1 * kv[b] + w2 * kv[c]
                    bound = u * depth[a] + w1 * depth[b] + w2 * depth[c]
                    qx, qy, qz = cx, cy, cz
                    nx = u * body_normals[a, 0] + w1 * body_normals[b, 0] + w2 * body_normals[c, 0]
                    ny = u * body_normals[a, 1] + w1 * body_normals[b, 1] + w2 * body_normals[c, 1]
                    nz = u * body_normals[a, 2] + w1 * body_normals[b, 2] + w2 * body_normals[c, 2]
            nl = np.sqrt(nx * nx + ny * ny + nz * nz)
            nl = nl if nl > 1e-12 else 1e-12
            nx /= nl
            ny /= nl
            nz /= nl
            if found:
                dd[i] = (px - qx) * nx + (py - qy) * ny + (pz - qz) * nz
                if dd[i] < 0.0 and np.sqrt(best) > bound:
                    dd[i] = np.inf  # deeper than the body can be there: not this point's skin (depth_bound.py)
                else:
                    dd[i] -= min(kap * chord[v] * chord[v] / 8.0, cap)
            else:
                dd[i] = np.inf
            gx[i] = nx
            gy[i] = ny
            gz[i] = nz
            ct[i] = tight[v]
            cs[i] = soft[v]
        _block_push(dd, gx, gy, gz, ct, cs, m, margin, stiffness, max_push, skirt_bias, upx, upy, upz, True, amt)
        for i in range(m):
            v = active[s0 + i]
            a_ = amt[i] if dd[i] < np.inf else 0.0
            out[v, 0] = points[v, 0] + a_ * gx[i]
            out[v, 1] = points[v, 1] + a_ * gy[i]
            out[v, 2] = points[v, 2] + a_ * gz[i]
            s_out[v] = dd[i]


def surface_push(points, candidates: SurfaceCandidates, body, body_normals, body_faces,
                 params: PushParams | None = None, tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0),
                 reach: float | None = None, only=None, chord=None, depth_bound=None):
    """One surface push, Numba kernel on one core; same contract as :func:`surface_push_numpy`.

    ``only`` : (M,) int vertex ids, or None for all: the other vertices are returned unchanged, with clearance
    ``nan`` (a second push needs only the vertices that moved since the first, see :func:`surface_runtime`).
    Each candidate triangle's bounding sphere is tested first, so a vertex computes the closest point only
    on triangles that can be nearer than the nearest so far; the result is the same.
    """
    params = params or PushParams()
    p, v, nb, f, t, s = _inputs(points, candidates, body, body_normals, body_faces, tightness, softness)
    frame = _body_frame(v, nb, f, chord is not None, depth_bound)
    ch = np.zeros(len(p)) if chord is None else as_nonnegative(chord, len(p), "chord")
    ids = np.arange(len(p), dtype=np.int64) if only is None else np.ascontiguousarray(only, dtype=np.int64)
    out, clear = _push(p, ids, candidates, v, nb, frame, ch, t, s, params, up, reach)
    return out, np.linalg.norm(out - p, axis=1), clear


def _body_frame(v, nb, f, curvature: bool, depth_bound=None) -> tuple:
    """What every push of one frame reads of the posed body: ``(faces int64, triangle bounds (F, 8): spheres and
    planes, curvature (Nb,), depth bound (Nb,))``, the curvature 0 unless asked for (no chord allowance), the depth
    bound ``inf`` unless given (:func:`as_depth_bound`)."""
    f = np.ascontiguousarray(f, dtype=np.int64)
    spheres = np.empty((len(f), 8))
    _triangle_spheres(v, f, spheres)
    kv = np.zeros(len(v))
    if curvature:
        _curvature_kernel(v, nb, f, kv)
    return f, spheres, kv, as_depth_bound(depth_bound, len(v))


def as_depth_bound(depth_bound, n_body: int) -> np.ndarray:
    """(Nb,) float64 depth bound per body vertex (:mod:`kisekae.fit.depth_bound`), checked: lengths >= 0, ``inf``
    (no bound) stored as :data:`NO_DEPTH_BOUND`, so that blending it with a weight of 0 gives 0 and not NaN, as in the
    shader core; None: no bound anywhere (the push trusts every candidate)."""
    if depth_bound is None:
        return np.full(n_body, NO_DEPTH_BOUND)
    b = np.array(depth_bound, dtype=np.float64)
    if b.shape != (n_body,):
        raise KisekaeError(f"expected one depth bound per body vertex ({n_body}), got shape {b.shape}", "depth bound")
    if np.isnan(b).any() or (b < 0).any():
        raise KisekaeError("depth bounds must be lengths >= 0 (inf: no bound), found NaN or a negative value",
                           "depth bound")
    return np.minimum(b, NO_DEPTH_BOUND)


def _push(p, ids, candidates, v, nb, frame, ch, t, s, params, up, reach):
    """The kernel over vertices ``ids`` of validated float64 inputs: :func:`surface_push`'s new points and
    clearance."""
    reach = params.max_push if reach is None else float(reach)
    up = np.asarray(up, dtype=np.float64)
    prm = np.array([params.margin, params.stiffness, params.max_push, params.skirt_bias, *up], dtype=np.float64)
    f, spheres, kv, depth = frame
    out = p.copy()
    clear = np.full(len(p), np.nan)
    _surface_kernel(p, ids, np.ascontiguousarray(candidates.triangles), f, v, nb, spheres, ch, kv, CHORD_CAP, t, s,
                    prm, reach * reach, out, clear, depth)
    return out, clear


def _check_stretch(stretch) -> None:
    if not (np.isfinite(stretch) and stretch >= 0):
        raise KisekaeError(f"must be a finite number >= 0, got {stretch!r}", "stretch limit")


def step_budget(step, n: int):
    """(n,) float64 per-vertex budget of :func:`surface_runtime`'s ``finish_step`` (metres), or None for no cap."""
    if step is None:
        return None
    if isinstance(step, bool) or not (isinstance(step, (int, float, np.integer, np.floating)) and np.isfinite(step)
                                      and step >= 0):
        raise KisekaeError(f"must be a finite number of metres >= 0 or None, got {step!r}", "finish step")
    return np.full(n, float(step))


def clamp_step(step, budget) -> np.ndarray:
    """Shorten each vertex's ``step`` to at most its remaining ``budget`` (metres), and spend the budget.

    Parameters
    ----------
    step : (N, 3) float64, metres
    budget : (N,) float64 metres left to each vertex, reduced in place by the length of its (shortened) step

    Returns
    -------
    (N, 3) float64: ``s * step`` with ``s = min(1, budget / |step|)``
    """
    length = np.sqrt(np.einsum("ij,ij->i", step, step))
    scale = np.where(length > budget, budget / np.maximum(length, 1e-300), 1.0)
    np.maximum(budget - length * scale, 0.0, out=budget)
    return step * scale[:, None]


@numba.njit(cache=True)
def _step_kernel(points, d, is_target, budget, capped, eps2, out, moved):
    """:func:`clamp_step` and the moved test of :func:`_finish`'s rounds in one pass: the step is ``d`` or, with
    ``is_target``, ``d - points``; with ``capped`` it is shortened to ``budget`` (spent in place); ``out`` gets
    ``points`` plus the step (the target itself when uncapped); ``moved`` whether a vertex moved more than
    ``sqrt(eps2)``."""
    for v in range(points.shape[0]):
        if is_target:
            sx, sy, sz = d[v, 0] - points[v, 0], d[v, 1] - points[v, 1], d[v, 2] - points[v, 2]
        else:
            sx, sy, sz = d[v, 0], d[v, 1], d[v, 2]
        if capped:
            length = np.sqrt(sx * sx + sy * sy + sz * sz)
            scale = budget[v] / max(length, 1e-300) if length > budget[v] else 1.0
            budget[v] = max(budget[v] - length * scale, 0.0)
            sx, sy, sz = sx * scale, sy * scale, sz * scale
        if is_target and not capped:
            out[v, 0], out[v, 1], out[v, 2] = d[v, 0], d[v, 1], d[v, 2]
        else:
            out[v, 0], out[v, 1], out[v, 2] = points[v, 0] + sx, points[v, 1] + sy, points[v, 2] + sz
        if is_target:
            sx, sy, sz = out[v, 0] - points[v, 0], out[v, 1] - points[v, 1], out[v, 2] - points[v, 2]
        moved[v] = sx * sx + sy * sy + sz * sz > eps2


def _ring_arrays(ring, n: int) -> tuple:
    """``(ptr, idx)`` int64 of the one-ring ``ring`` of ``n`` vertices."""
    ptr, idx = (np.asarray(a, dtype=np.int64) for a in ring)
    if len(ptr) != n + 1:
        raise KisekaeError(f"one-ring of {len(ptr) - 1} vertices for {n}", "ring")
    return ptr, idx


def _limit_inputs(points, skinned, ring, stretch):
    p = _f64(points, (len(points), 3), "garment vertices")
    x = _f64(skinned, p.shape, "skinned garment vertices")
    _check_stretch(stretch)
    return (p, x, *_ring_arrays(ring, len(p)))


def check_compression(compression) -> float:
    """``compression`` (the stretch limit's compression limit) as a float in [0, 1), or a :class:`KisekaeError`;
    the one check of :func:`shortest_lengths`, :func:`kisekae.fit.runtime.runtime_pose` and ``--compression-limit``
    (0: no floor; 1 would let an edge shrink to nothing, which 0 already says)."""
    if isinstance(compression, bool) or not isinstance(compression, (int, float, np.floating, np.integer)) or not (
            np.isfinite(compression) and 0.0 <= compression < 1.0):
        raise KisekaeError(f"must be a number in [0, 1), got {compression!r}", "compression limit")
    return float(compression)


def shortest_lengths(rest_clearance, compression: float = COMPRESSION_LIMIT,
                     cling: float = CLING_CLEARANCE) -> np.ndarray:
    """(N,) float64 per garment vertex, the shortest its one-ring edges may get as a fraction of their skinned length
    (the ``shortest`` of :func:`stretch_limit`): ``1 - compression`` where the vertex clings to the body (its signed
    rest clearance at most ``cling`` metres, :attr:`kisekae.fit.bound.SkinBinding.rest_offset`), 0 (no floor) where
    the cloth is loose."""
    r = np.asarray(rest_clearance, dtype=np.float64)
    if r.ndim != 1 or not np.all(np.isfinite(r)):
        raise KisekaeError(f"must be (N,) finite metres, got shape {r.shape}", "rest clearance")
    return np.where(r <= cling, 1.0 - check_compression(compression), 0.0)


def as_shortest(shortest, n: int):
    """``shortest`` of :func:`stretch_limit` as (n,) float64 in [0, 1), or None."""
    if shortest is None:
        return None
    f = np.asarray(shortest, dtype=np.float64)
    if f.shape != (n,) or not np.all(np.isfinite(f)) or (n and (f.min() < 0.0 or f.max() >= 1.0)):
        raise KisekaeError(f"must be ({n},) fractions in [0, 1), got shape {f.shape}", "shortest edge lengths")
    return f


def stretch_limit_numpy(points, skinned, ring, stretch: float = STRETCH_LIMIT, shortest=None):
    """One Jacobi pass of stretch limiting (Provot 1995), NumPy reference.

    For every vertex ``i`` and each neighbour ``j`` of its one-ring whose edge is longer than ``1 + stretch`` times
    its skinned length, the correction ``c_ij = (l − (1 + stretch) l0) / (2 l) · (p_j − p_i)`` (half the excess,
    towards ``j``), with ``l = |p_j − p_i|`` and ``l0 = |x_j − x_i|``; likewise, with ``shortest``, each edge
    shorter than ``(1 − LIMIT_TIE) s_ij l0`` with ``s_ij = min(shortest_i, shortest_j)`` gives ``c_ij = (l − s_ij l0) / (2 l) ·
    (p_j − p_i)`` (half the deficit, away from ``j``; an edge of length 0 has no direction and gives none). The
    vertex moves by the mean of its corrections. Both ends of an edge out of its range meet halfway to its bound.

    Parameters
    ----------
    points : (N, 3) garment vertices after the push, metres
    skinned : (N, 3) the same vertices skinned (the edge lengths to keep), metres
    ring : :func:`one_ring` of the garment
    stretch : float, allowed relative stretch (``STRETCH_LIMIT``)
    shortest : (N,) fractions in [0, 1) or None, the shortest a vertex's edges may get against their skinned length
        (:func:`shortest_lengths`); None or 0: edges may shrink freely

    Returns
    -------
    new_points : (N, 3) float64; moved : (N,) bool, True where at least one edge was out of its range
    """
    p, x, ptr, idx = _limit_inputs(points, skinned, ring, stretch)
    f = as_shortest(shortest, len(p))
    count = np.diff(ptr)
    owner = np.repeat(np.arange(len(p)), count)
    dp = p[idx] - p[owner]
    length = np.linalg.norm(dp, axis=1)
    skinned_length = np.linalg.norm(x[idx] - x[owner], axis=1)
    rest = (1.0 + stretch) * skinned_length
    over = length > rest * (1.0 + LIMIT_TIE)
    if f is not None:
        floor = np.minimum(f[owner], f[idx]) * skinned_length
        under = (length < floor * (1.0 - LIMIT_TIE)) & (length > 1e-12)
        rest = np.where(under, floor, rest)
        over = over | under
    k = np.where(over, 0.5 * (length - rest) / np.where(over, length, 1.0), 0.0)
    acc = np.zeros_like(p)
    np.add.at(acc, owner, k[:, None] * dp)
    n_over = np.bincount(owner, weights=over.astype(np.float64), minlength=len(p))
    moved = n_over > 0
    return np.where(moved[:, None], p + acc / np.maximum(n_over, 1.0)[:, None], p), moved


@numba.njit(cache=True, error_model="numpy")
def _limit_rest2(x, ptr, idx, scale, shortest, out, floor_out):
    """Squared stretch limit ``(scale |x_j − x_i|)²`` of every ring entry (i, j), from the skinned positions, and the
    squared floor ``(min(shortest_i, shortest_j) |x_j − x_i|)²``."""
    for i in range(x.shape[0]):
        for e in range(ptr[i], ptr[i + 1]):
            j = idx[e]
            l2 = (x[j, 0] - x[i, 0]) ** 2 + (x[j, 1] - x[i, 1]) ** 2 + (x[j, 2] - x[i, 2]) ** 2
            out[e] = scale * scale * l2
            f = min(shortest[i], shortest[j])
            floor_out[e] = f * f * l2


def _squared_limits(x, ptr, idx, stretch, shortest=None) -> tuple:
    """(E,) float64 squared longest and squared shortest length of every ring entry, from the skinned positions
    ``x`` (the shortest all 0 without ``shortest``)."""
    out, floor = np.empty(len(idx)), np.empty(len(idx))
    f = np.zeros(len(x)) if shortest is None else np.ascontiguousarray(shortest, dtype=np.float64)
    _limit_rest2(x, ptr, idx, 1.0 + float(stretch), f, out, floor)
    return out, floor


@numba.njit(cache=True, error_model="numpy")
def _limit_kernel(p, ptr, idx, rest2, floor2, out, moved):
    tie2 = (1.0 + LIMIT_TIE) ** 2
    under2 = (1.0 - LIMIT_TIE) ** 2
    for i in range(p.shape[0]):
        ax = ay = az = 0.0
        c = 0
        for e in range(ptr[i], ptr[i + 1]):
            j = idx[e]
            dx, dy, dz = p[j, 0] - p[i, 0], p[j, 1] - p[i, 1], p[j, 2] - p[i, 2]
            length2 = dx * dx + dy * dy + dz * dz
            bound2 = rest2[e] if length2 > rest2[e] * tie2 else floor2[e]
            if length2 > rest2[e] * tie2 or (length2 < floor2[e] * under2 and length2 > 1e-24):
                length = np.sqrt(length2)
                k = 0.5 * (length - np.sqrt(bound2)) / length
                ax += k * dx
                ay += k * dy
                az += k * dz
                c += 1
        moved[i] = c > 0
        if c > 0:
            out[i, 0] = p[i, 0] + ax / c
            out[i, 1] = p[i, 1] + ay / c
            out[i, 2] = p[i, 2] + az / c
        else:
            out[i, 0] = p[i, 0]
            out[i, 1] = p[i, 1]
            out[i, 2] = p[i, 2]


def stretch_limit(points, skinned, ring, stretch: float = STRETCH_LIMIT, shortest=None):
    """:func:`stretch_limit_numpy` as a Numba kernel (one core); the squared bounds of the ring's edges are computed
    first (:func:`surface_runtime` does that once for all its passes), so an edge within them costs no root."""
    p, x, ptr, idx = _limit_inputs(points, skinned, ring, stretch)
    rest2, floor2 = _squared_limits(x, ptr, idx, stretch, as_shortest(shortest, len(p)))
    out = np.empty_like(p)
    moved = np.empty(len(p), dtype=np.bool_)
    _limit_kernel(p, ptr, idx, rest2, floor2, out, moved)
    return out, moved


def surface_runtime(points, candidates: SurfaceCandidates, ring, body, body_normals, body_faces,
                    params: PushParams | None = None, tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0),
                    passes: int = SMOOTH_PASSES, numpy: bool = False, chord=None, limit_passes: int = LIMIT_PASSES,
                    stretch: float = STRETCH_LIMIT, start=None, lift=None, faces=None,
                    finish_step: float | None = None, between=None, shortest=None, depth_bound=None,
                    self_layers=None):
    """The per-frame garment correction: surface push, ``passes`` of :func:`smooth_push`, surface push again, then
    ``limit_passes`` times :func:`stretch_limit` with the push of the vertices it moved; then, if given,
    :data:`~kisekae.fit.edge_lift.LIFT_PASSES` rounds of the edge lift (:mod:`kisekae.fit.edge_lift`) and the unflip
    (:mod:`kisekae.fit.unflip`), each followed by the push of the vertices it moved, and
    :data:`~kisekae.fit.unflip.UNFLIP_PASSES` more unflips, and with the edge lift
    :data:`~kisekae.fit.edge_lift.LIFT_LIMIT_PASSES` more stretch-limit passes (each with the push of what it moved);
    the total capped at maxPush.
    The first push starts from ``start`` (default: the skinned ``points``); smoothing, stretch limit and cap measure
    from ``points`` (:mod:`kisekae.fit.carry` starts from the previous frame's correction).

    Parameters
    ----------
    points : (N, 3) skinned garment vertices, metres
    candidates, body, body_normals, body_faces, params, tightness, softness, up : as :func:`surface_push`
    ring : :func:`one_ring` of the garment
    passes : int, smoothing passes (0: the second push finds nothing left); numpy : bool, the NumPy references
    chord : (N,) :func:`garment_chords`, or None: no chord allowance
    limit_passes : int, stretch-limit passes (0: none)
    stretch : float, the stretch limit's allowed relative stretch against the skinned edge lengths
    start : (N, 3) metres or None, where the first push starts (None: ``points``)
    lift : ``(EdgeSamples, sample SurfaceCandidates, vertex_samples table)`` or None: no edge lift
        (:func:`kisekae.fit.edge_lift.edge_lift`)
    faces : ``(faces (F, 3), vertex_faces table)`` of the garment or None: no unflip
        (:func:`kisekae.fit.unflip.unflip`)
    finish_step : float or None, metres: the most that the edge lift and unflip rounds together may move a vertex in
        this call, besides the pushes that follow them (:func:`clamp_step`; what is left over is taken up by the next
        frame, which starts from this one's correction, :mod:`kisekae.fit.carry`); None: no cap. Measured on the
        built-in tights over stand -> lunge at 30 fps with the edge lift: the largest pop 5.14 -> 2.63 mm at 2 mm
        (docs/fit.md)
    between : callable or None, ``(N, 3) -> (N, 3)`` applied after the stretch-limit passes and before the edge lift
        and unflip, e.g. the push out of a garment worn beneath (:func:`kisekae.fit.layer_push.layer_push`), so that
        the stages against the body keep the last word
    shortest : (N,) or None, the stretch limit's floor per vertex (:func:`stretch_limit`, :func:`shortest_lengths`:
        the compression limit of cloth that clings to the body); None: edges may shrink freely
    depth_bound : (Nb,) or None, per body vertex, the deepest a point inside the body can lie below the skin there
        (:func:`kisekae.fit.depth_bound.body_depth_bound`; every push, the edge lift's included: a candidate beyond it
        is not trusted, :func:`surface_push_numpy`); None: every candidate is trusted
    self_layers : ``(SelfLayers, faces)`` or None: after ``between``, the garment's outer sheets kept outside its
        inner ones (:func:`kisekae.fit.self_layers.self_layer_stage`)

    Returns
    -------
    new_points : (N, 3) float64 with ``|new − points| <= max_push``; push : (N,) metres

    Notes
    -----
    Pushes along diverging normals (both sides of a crease, a limb that one vertex leaves on one side and its
    neighbour on the other) stretch single edges to several times their length: spikes. The stretch limit pulls
    the two ends of such an edge back towards each other, and the push that follows keeps each moved vertex out
    of the body, so the push always has the last word.
    """
    params = params or PushParams()
    x = _f64(points, (len(points), 3), "garment vertices")
    limits, budget = _check_limit_passes(limit_passes, stretch, shortest, len(x)), step_budget(finish_step, len(x))
    y0 = x if start is None else _f64(start, x.shape, "start positions")
    if numpy:
        args = (candidates, body, body_normals, body_faces, params, tightness, softness, up)
        new = _runtime_numpy(x, y0, args, {"chord": chord, "depth_bound": depth_bound}, ring, passes, limits,
                             limit_passes, between, lift, faces, budget, self_layers)
    else:
        # made once a frame: the body's spheres and curvature (every push), the squared limits (both limit stages)
        x, v, nb, f, t, s = _inputs(x, candidates, body, body_normals, body_faces, tightness, softness)
        ch = np.zeros(len(x)) if chord is None else as_nonnegative(chord, len(x), "chord")
        push = (candidates, v, nb, _body_frame(v, nb, f, chord is not None, depth_bound), ch, t, s, params, up, None)
        limits = _FrameLimits(x, ring, *limits)
        first = _push(y0, np.arange(len(x), dtype=np.int64), *push)[0]
        if passes > 0:
            first = x + smooth_push(first - x, ring, passes)
        # a vertex neither pushed nor smoothed was found clear by the first push: the second would find it so again
        new = _push(first, nonzero_rows(first - y0), *push)[0]
        new = _own_layers(self_layers, ring, _between(between, _limit_passes(new, push, limits, limit_passes)))
        new = _finish(new, x, push, chord, lift, faces, ring, limits, budget)
    cap_displacement(new, x, params.max_push)
    return new, np.linalg.norm(new - x, axis=1)


def _runtime_numpy(x, y0, args, kw, ring, passes, limits, limit_passes, between, lift, faces, budget,
                   self_layers=None):
    """:func:`surface_runtime` with the NumPy references: ``args`` the pushes' arguments after the points, ``kw`` their
    ``chord`` and ``depth_bound``; the corrected points before the cap."""
    first = surface_push_numpy(y0, *args, **kw)[0]
    if passes > 0:
        first = x + smooth_push_numpy(first - x, ring, passes)
    new = surface_push_numpy(first, *args, **kw)[0]
    new = _between(between, _limit_passes_numpy(new, x, args, kw, ring, limits, limit_passes))
    new = _own_layers(self_layers, ring, new, numpy=True)
    return _finish_numpy(new, x, args, kw, lift, faces, ring, limits, budget)


def _own_layers(self_layers, ring, new, numpy: bool = False):
    """:func:`surface_runtime`'s self-layer stage on ``new`` (N, 3): ``self_layers`` is ``(SelfLayers, faces)`` or None
    (``new`` unchanged)."""
    if self_layers is None:
        return new
    from .self_layers import self_layer_stage

    return self_layer_stage(new, *self_layers, ring, numpy=numpy)


def _check_limit_passes(limit_passes, stretch, shortest=None, n: int = 0) -> tuple:
    """Check :func:`surface_runtime`'s stretch-limit settings; returns ``(stretch, shortest)`` (the floor checked)."""
    if isinstance(limit_passes, bool) or not isinstance(limit_passes, (int, np.integer)) or limit_passes < 0:
        raise KisekaeError(f"must be an integer >= 0, got {limit_passes!r}", "limit passes")
    _check_stretch(stretch)
    return stretch, as_shortest(shortest, n)


def _between(between, new):
    """:func:`surface_runtime`'s ``between`` stage applied to ``new`` (N, 3), its output checked."""
    return new if between is None else _f64(between(new), new.shape, "positions between the stages")


def _finish_numpy(new, x, args, kw, lift, faces, ring, limits, budget=None):
    """:func:`surface_runtime`'s edge lift and unflip rounds and the stretch limit after them, NumPy references;
    ``kw``: the pushes' ``chord`` and ``depth_bound``; ``limits``: ``(stretch, shortest)``; ``budget``:
    :func:`step_budget` of ``finish_step``."""
    from .edge_lift import LIFT_EPS, LIFT_LIMIT_PASSES, LIFT_SMOOTH, edge_lift_numpy
    from .unflip import unflip_numpy

    def push_moved(points, step):
        moved = np.einsum("ij,ij->i", step, step) > LIFT_EPS ** 2
        return np.where(moved[:, None], surface_push_numpy(points, *args, **kw)[0], points)

    def lift_round(points):
        lifted = edge_lift_numpy(points, *lift, *args[1:], chord=kw["chord"] is not None,
                                 depth_bound=kw["depth_bound"])[0]
        lift_d = smooth_push_numpy(lifted - points, ring, LIFT_SMOOTH)
        lift_d = lift_d if budget is None else clamp_step(lift_d, budget)
        return push_moved(points + lift_d, lift_d)

    def unflip_round(points):
        turned = unflip_numpy(points, x, *faces)[0]
        turned = turned if budget is None else points + clamp_step(turned - points, budget)
        return push_moved(turned, turned - points)

    new = _finish_rounds(new, lift_round if lift is not None else None, unflip_round if faces is not None else None)
    return _limit_passes_numpy(new, x, args, kw, ring, limits, LIFT_LIMIT_PASSES if lift is not None else 0)


def _finish_rounds(new, lift_round=None, unflip_round=None):
    """The finish's rounds (:func:`surface_runtime`): :data:`~kisekae.fit.edge_lift.LIFT_PASSES` times the edge lift
    then the unflip, then :data:`~kisekae.fit.unflip.UNFLIP_PASSES` more unflips; a round given as None is left out
    (no lift and no unflip: nothing). Each round maps (N, 3) points to (N, 3) points."""
    from .edge_lift import LIFT_PASSES
    from .unflip import UNFLIP_PASSES

    for _ in range(LIFT_PASSES if lift_round is not None or unflip_round is not None else 0):
        if lift_round is not None:
            new = lift_round(new)
        if unflip_round is not None:
            new = unflip_round(new)
    for _ in range(UNFLIP_PASSES if unflip_round is not None else 0):
        new = unflip_round(new)
    return new


def _limit_passes_numpy(new, x, args, kw, ring, limits, passes: int):
    """``passes`` stretch-limit passes, each followed by the push of the vertices it moved; NumPy references
    (:func:`_limit_passes`); ``args`` as :func:`surface_push_numpy`'s after the points, ``kw`` its ``chord`` and
    ``depth_bound``; ``limits``: ``(stretch, shortest)``."""
    for _ in range(passes):
        limited, moved = stretch_limit_numpy(new, x, ring, *limits)
        new = np.where(moved[:, None], surface_push_numpy(limited, *args, **kw)[0], limited)
    return new


def _finish(new, x, push, chord, lift, faces, ring, limits, budget=None):
    """:func:`surface_runtime`'s edge lift and unflip rounds and the stretch limit after them, with the Numba kernels;
    ``push`` as :func:`_push`'s arguments after the points and ids; ``budget``: :func:`step_budget` of
    ``finish_step``."""
    from .edge_lift import LIFT_EPS, LIFT_LIMIT_PASSES, LIFT_SMOOTH, _lift, lift_frame
    from .unflip import TURN_START, UnflipPass

    if lift is not None:
        samples, cand, table = lift
        cand.check(len(samples), push[3][0])
        table = tuple(np.ascontiguousarray(a, dtype=np.int64) for a in table)
        # the samples' chord allowance follows the vertices': the frame's curvature is 0 without chords
        sframe = lift_frame(samples, push[5], push[6], len(x))
    if faces is not None:
        unflip_pass = UnflipPass(x, np.ascontiguousarray(faces[0], dtype=np.int64),
                                 tuple(np.ascontiguousarray(a, dtype=np.int64) for a in faces[1]), TURN_START)
        turned, moved = np.empty_like(new), np.empty(len(new), dtype=np.bool_)

    spend = np.zeros(0) if budget is None else budget
    stepped, took = np.empty_like(new), np.empty(len(new), dtype=np.bool_)

    def push_moved(points, d, is_target):
        """Take the step (``d``, or to the target ``d``) capped by the budget, then push what it moved."""
        _step_kernel(points, d, is_target, spend, budget is not None, LIFT_EPS ** 2, stepped, took)
        return _push(stepped, np.flatnonzero(took), *push)[0]

    pushed_samples = [None]  # the last round's sample points and pushes: a round pushes only the samples that moved

    def lift_round(points):
        lifted, _moved, pushed_samples[0] = _lift(points, samples, cand, table, push[1], push[2], push[3], sframe,
                                                  push[7], push[8], previous=pushed_samples[0])
        return push_moved(points, smooth_push(lifted - points, ring, LIFT_SMOOTH), False)

    def unflip_round(points):
        unflip_pass(points, turned, moved)
        return push_moved(points, turned, True)

    new = _finish_rounds(new, lift_round if lift is not None else None, unflip_round if faces is not None else None)
    return _limit_passes(new, push, limits, LIFT_LIMIT_PASSES if lift is not None else 0)


class _FrameLimits:
    """The stretch limit of one frame (:func:`surface_runtime`): the skinned garment ``x``, its one-ring, ``stretch``
    and the floor ``shortest``; :meth:`arrays` makes the ring's CSR arrays and the squared limits of each entry on first
    use and keeps them, so the frame's two stretch-limit stages (after the second push, after the lift) share them."""

    def __init__(self, x, ring, stretch, shortest=None):
        self.x, self.ring, self.stretch, self.shortest = x, ring, stretch, shortest
        self._arrays = None

    def arrays(self) -> tuple:
        """``(ptr, idx, rest2, floor2)``."""
        if self._arrays is None:
            ptr, idx = _ring_arrays(self.ring, len(self.x))
            self._arrays = (ptr, idx, *_squared_limits(self.x, ptr, idx, self.stretch, self.shortest))
        return self._arrays


def _limit_passes(new, push, limits, passes: int):
    """``passes`` stretch-limit passes (Numba), each followed by the push of the vertices it moved; ``push`` as
    :func:`_push`'s arguments after the points and ids; ``limits``: the frame's :class:`_FrameLimits` (the skinned
    garment, its ring and the limits)."""
    if passes <= 0:
        return new
    ptr, idx, rest2, floor2 = limits.arrays()
    limited, moved = np.empty_like(new), np.empty(len(new), dtype=np.bool_)
    for _ in range(passes):
        _limit_kernel(new, ptr, idx, rest2, floor2, limited, moved)
        new = _push(limited, np.flatnonzero(moved), *push)[0]
    return new


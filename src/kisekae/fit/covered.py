"""Covered skin: body vertices and triangles hidden under opaque garments in every pose.

Method
------
A body vertex is *covered* in a pose when every ray of a small cone around its outward normal
hits a garment triangle within ``max_distance``. The cone has one ray along the normal and
``cone_rays`` rays tilted by ``cone_angle`` degrees, evenly spaced around it. Rays start
``start_offset`` below the skin (so fabric that touches or slightly clips into the skin still
counts) and only garment triangles are tested (opaque garments occlude; the body does not).
``max_distance`` (default 5 cm) keeps loose fabric far away, such as the inside of a skirt, from
hiding skin that is visible from below. A vertex is covered overall when it is covered in every
pose given; a triangle is covered when its three vertices are. The covered set is meant for
culling: the body triangles under a garment need not be drawn.

Rays are traced against a bounding volume hierarchy over the garment triangles by
:func:`kisekae.geom.raycast.ray_hits` (its brute-force NumPy reference is
:func:`kisekae.geom.raycast.ray_hits_reference`).
"""

from __future__ import annotations

import numpy as np

from ..errors import KisekaeError
from ..geom.bvh import build_bvh
from ..geom.raycast import ray_hits
from ..validate import as_faces, as_points, positive

# --------------------------------------------------------------------------- covered skin
def cone_directions(normals, cone_angle: float = 30.0, cone_rays: int = 6):
    """Unit ray directions around each normal: the normal, then ``cone_rays`` tilted ones.

    Parameters
    ----------
    normals : array_like (N, 3)
        Unit normals.
    cone_angle : float
        Tilt of the side rays from the normal, degrees (0 <= angle < 90).
    cone_rays : int
        Number of side rays, evenly spaced in azimuth.

    Returns
    -------
    ndarray float64 (N, 1 + cone_rays, 3)
    """
    n = as_points(normals, "normals")
    ln = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, ln, out=np.zeros_like(n), where=ln > 0)
    helper = np.where(np.abs(n[:, :1]) < 0.9, np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]]))
    t1 = np.cross(n, helper)
    t1 /= np.maximum(np.linalg.norm(t1, axis=1, keepdims=True), 1e-12)
    t2 = np.cross(n, t1)
    th = np.radians(cone_angle)
    out = [n]
    for j in range(int(cone_rays)):
        phi = 2 * np.pi * j / cone_rays
        out.append(np.cos(th) * n + np.sin(th) * (np.cos(phi) * t1 + np.sin(phi) * t2))
    return np.stack(out, axis=1)


def covered_in_pose(body_vertices, body_normals, garment_vertices, garment_faces, *, max_distance: float = 0.05,
                    cone_angle: float = 30.0, cone_rays: int = 6, start_offset: float = 0.001, bvh=None):
    """Body vertices hidden under the garment in one pose.

    Parameters
    ----------
    body_vertices : array_like (Nb, 3)
        Posed body vertices, metres.
    body_normals : array_like (Nb, 3)
        Outward unit normals (zero rows are never covered).
    garment_vertices : array_like (Ng, 3)
        Posed garment vertices (all opaque garments together), metres.
    garment_faces : array_like int (Fg, 3)
        Garment triangles.
    max_distance : float
        Farthest garment hit that still covers, metres (default 0.05).
    cone_angle : float
        Side-ray tilt, degrees (default 30).
    cone_rays : int
        Side rays per vertex (default 6; 0 = the normal only).
    start_offset : float
        Rays start this far below the skin, metres (default 0.001).
    bvh : kisekae.geom.bvh.BVH, optional
        Tree over ``garment_faces``, reused across poses.

    Returns
    -------
    ndarray bool (Nb,)
    """
    b = as_points(body_vertices, "body_vertices")
    n = as_points(body_normals, "body_normals")
    if n.shape != b.shape:
        raise KisekaeError(f"expected {len(b)} normals (one per body vertex), got {len(n)}", "body_normals")
    positive(start_offset, "start_offset", allow_zero=True)
    positive(max_distance, "max_distance")
    if not 0 <= cone_angle < 90:
        raise KisekaeError(f"must be in [0, 90) degrees, got {cone_angle!r}", "cone_angle")
    if int(cone_rays) < 0:
        raise KisekaeError(f"must be >= 0, got {cone_rays!r}", "cone_rays")
    dirs = cone_directions(n, cone_angle, cone_rays)  # (Nb, R, 3)
    nr = dirs.shape[1]
    valid = np.linalg.norm(n, axis=1) > 0.5
    origins = np.repeat(b - start_offset * dirs[:, 0], nr, axis=0)
    hits = ray_hits(origins, dirs.reshape(-1, 3), max_distance + start_offset, garment_vertices, garment_faces, bvh)
    return hits.reshape(-1, nr).all(axis=1) & valid


def covered_vertices(body_poses, body_faces, garment_poses, garment_faces, **kwargs):
    """Body vertices hidden under the garment in *every* pose given.

    Parameters
    ----------
    body_poses : sequence of array_like (Nb, 3)
        Posed body vertices, one array per pose, metres.
    body_faces : array_like int (Fb, 3)
        Body triangles (used for the normals).
    garment_poses : sequence of array_like (Ng, 3)
        Posed garment vertices, same poses in the same order, metres.
    garment_faces : array_like int (Fg, 3)
        Garment triangles.
    **kwargs
        ``max_distance``, ``cone_angle``, ``cone_rays``, ``start_offset`` as :func:`covered_in_pose`.

    Returns
    -------
    ndarray bool (Nb,)
    """
    from ..geom.normals import vertex_normals

    body_poses = list(body_poses)
    garment_poses = list(garment_poses)
    if not body_poses:
        raise KisekaeError("no poses given", "body_poses")
    if len(garment_poses) != len(body_poses):
        raise KisekaeError(f"{len(garment_poses)} garment poses for {len(body_poses)} body poses", "garment_poses")
    b0 = as_points(body_poses[0], "body_poses[0]")
    bf = as_faces(body_faces, len(b0), "body_faces")
    g0 = as_points(garment_poses[0], "garment_poses[0]")
    gf = as_faces(garment_faces, len(g0), "garment_faces")
    bvh = build_bvh(g0, gf) if len(gf) else None
    covered = np.ones(len(b0), dtype=bool)
    for i, (bp, gp) in enumerate(zip(body_poses, garment_poses)):
        bp = as_points(bp, f"body_poses[{i}]")
        gp = as_points(gp, f"garment_poses[{i}]")
        if bp.shape != b0.shape:
            raise KisekaeError(f"expected {len(b0)} vertices, got {len(bp)}", f"body_poses[{i}]")
        if gp.shape != g0.shape:
            raise KisekaeError(f"expected {len(g0)} vertices, got {len(gp)}", f"garment_poses[{i}]")
        if bvh is None:
            return np.zeros(len(b0), dtype=bool)
        normals = vertex_normals(bp, bf).astype(np.float64)
        covered &= covered_in_pose(bp, normals, gp, gf, bvh=bvh, **kwargs)
    return covered


def covered_triangles(covered, faces):
    """Triangles ``(F,)`` bool whose three vertices are all covered."""
    c = np.asarray(covered, dtype=bool)
    f = as_faces(faces, len(c), "faces")
    return c[f].all(axis=1)


def avatar_covered(avatar, poses, garments, positions=None, **kwargs):
    """Covered body vertices of an avatar under the named garments over a set of poses.

    Parameters
    ----------
    avatar : kisekae.avatar.Avatar
    poses : sequence of kisekae.avatar.Pose
    garments : sequence of str
        Opaque garments (names in ``avatar.garments``), taken together.
    positions : sequence of dict str -> (Ng, 3), optional
        Per pose, fixed garment positions to use instead of the skinned ones.
    **kwargs
        As :func:`covered_in_pose`.

    Returns
    -------
    covered : ndarray bool (Nb,)
        Body vertices hidden in every pose.
    triangles : ndarray bool (Fb,)
        Body triangles whose vertices are all hidden.
    """
    garments = list(garments)
    if not garments:
        raise KisekaeError("no garments given", "garments")
    parts = [avatar.part(g) for g in garments]
    offsets = np.cumsum([0] + [p.mesh.n_vertices for p in parts])
    faces = np.concatenate([p.mesh.faces.astype(np.int64) + o for p, o in zip(parts, offsets[:-1])])
    bodies, clothes = [], []
    for i, pose in enumerate(poses):
        m = pose.skinning_matrices(avatar.skeleton)
        bodies.append(avatar.body.posed(m))
        pos = []
        for g, p in zip(garments, parts):
            if positions is not None and g in positions[i]:
                pos.append(np.asarray(positions[i][g], dtype=np.float64))
            else:
                pos.append(p.posed(m))
        clothes.append(np.concatenate(pos))
    cov = covered_vertices(bodies, avatar.body.mesh.faces, clothes, faces, **kwargs)
    return cov, covered_triangles(cov, avatar.body.mesh.faces)


def agreement(covered, hint):
    """Precision, recall and IoU of a covered-vertex mask against a hint list of vertex ids.

    Parameters
    ----------
    covered : array_like bool (N,)
    hint : array_like int (M,)
        Vertex ids marked covered by someone else (e.g. ``.mhclo`` ``delete_verts``).

    Returns
    -------
    dict
        ``precision`` (covered vertices that are in the hint), ``recall`` (hint vertices found
        covered), ``iou``, ``covered`` and ``hint`` counts.
    """
    c = np.asarray(covered, dtype=bool)
    h = np.zeros(len(c), dtype=bool)
    ids = np.asarray(hint, dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= len(c)):
        raise KisekaeError(f"vertex id out of range 0..{len(c) - 1}", "hint")
    h[ids] = True
    inter = int((c & h).sum())
    union = int((c | h).sum())
    return {
        "precision": inter / max(int(c.sum()), 1),
        "recall": inter / max(int(h.sum()), 1),
        "iou": inter / max(union, 1),
        "covered": int(c.sum()),
        "hint": int(h.sum()),
    }

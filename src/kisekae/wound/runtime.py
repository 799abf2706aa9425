"""Runtime: hits in bone space, ray casting on the posed mesh, the morph parameter p and the morph.

The per-vertex math (what a vertex shader runs) is three small functions:

* :func:`hit_damage` - the damage one hit does to one vertex, the article's
  ``saturate((distance - HoleSize) * HoleIntensity)`` turned round so that 1 means "damaged":
  ``saturate(1 - (distance - HoleSize) * HoleIntensity)``. ``HoleSize`` (metres) is the radius that
  is fully damaged and ``1 / HoleIntensity`` (metres) the width of the fall-off around it.
* :func:`wound_p_vertex` - the article-style loop: ``p = saturate(p + damage)`` over all hits,
  with the body-part mask: a hit on the same body part as the vertex reaches ``part_reach[part]``
  times farther (an arm breaks off with one hit) and every hit's damage is scaled by
  ``part_gain[part]`` (0 makes a part immune).
* :func:`morph_vertex` - ``lerp`` of position and normal by ``p``; at ``p == 0`` the input is returned
  untouched (bit-identical).

(In the article the damaged mesh is the start mesh and p = 1 means intact, so its hits accumulate
"intactness", and a second hit far away undoes the first. Here p is damage; the result is the same
for one hit and correct for many.)

The *loop* mode evaluates the hits every frame in posed world space (cost grows with the number of
hits, as in the article). The *flat-cost* mode accumulates each hit once, when it lands, into a
per-vertex damage mask using bind-pose distances (:func:`accumulate_hit`); each frame then only reads
``p = mask[v]``, so the frame cost does not depend on the number of hits.

Hits are stored in bone space: the bind-pose point on the surface, its dominant bone and the local
position in that bone's rest frame (``inverse(rest[bone]) @ bind``), plus the blended skin weights at
the point, so a hit follows the surface exactly as the skinned vertices around it do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..avatar.skinning import lbs_numpy
from ..errors import KisekaeError
from ..validate import as_faces, as_per_vertex, as_points, positive
from ..geom.raycast import check_ray
from ..geom.raytri import ray_triangles_numba

# --------------------------------------------------------------------------------------------
# per-vertex math (reference for the shader port)
# --------------------------------------------------------------------------------------------


def hit_damage(distance, hole_size, hole_intensity):
    """Damage of one hit at ``distance`` metres: ``saturate(1 - (distance - hole_size) * hole_intensity)``."""
    return np.clip(1.0 - (distance - hole_size) * hole_intensity, 0.0, 1.0)


def wound_p_vertex(position, part, hit_positions, hit_parts, hole_size, hole_intensity, part_reach, part_gain):
    """Morph parameter of one vertex from all hits (the loop a vertex shader runs).

    Parameters
    ----------
    position : (3,) float, vertex position (same space as the hits), metres.
    part : int, the vertex's body part.
    hit_positions : (H, 3) float, metres; hit_parts : (H,) int.
    hole_size : float, metres; hole_intensity : float, 1/metres.
    part_reach, part_gain : (P,) float, per body part.

    Returns
    -------
    float in [0, 1].
    """
    p = 0.0
    for h in range(len(hit_positions)):
        size = hole_size * (part_reach[part] if hit_parts[h] == part else 1.0)
        d = float(np.sqrt(np.sum((np.asarray(position) - hit_positions[h]) ** 2)))
        p = min(max(p + part_gain[part] * hit_damage(d, size, hole_intensity), 0.0), 1.0)
    return p


def morph_vertex(position, normal, target_position, target_normal, p):
    """Morphed position and normal of one vertex; returns the inputs themselves when ``p == 0``."""
    if p == 0.0:
        return position, normal
    pos = position + p * (target_position - position)
    n = normal + p * (target_normal - normal)
    ln = np.sqrt(np.sum(n * n))
    return pos, (n / ln if ln > 0 else normal)


# --------------------------------------------------------------------------------------------
# whole-mesh versions: NumPy reference and Numba kernels
# --------------------------------------------------------------------------------------------


def wound_p_numpy(positions, parts, hit_positions, hit_parts, hole_size, hole_intensity, part_reach, part_gain):
    """All vertices at once, NumPy (sequential over hits, like the shader loop). Returns (N,) float64."""
    x = np.asarray(positions, dtype=np.float64)
    parts = np.asarray(parts, dtype=np.int64)
    reach = np.asarray(part_reach, dtype=np.float64)[parts]
    gain = np.asarray(part_gain, dtype=np.float64)[parts]
    p = np.zeros(len(x))
    for h in range(len(hit_positions)):
        size = hole_size * np.where(parts == hit_parts[h], reach, 1.0)
        d = np.linalg.norm(x - np.asarray(hit_positions[h], dtype=np.float64), axis=1)
        p = np.clip(p + gain * hit_damage(d, size, hole_intensity), 0.0, 1.0)
    return p


@numba.njit(cache=True)
def wound_p_numba(positions, parts, hit_positions, hit_parts, hole_size, hole_intensity, part_reach, part_gain, out):
    """Numba twin of :func:`wound_p_numpy`; writes into ``out`` (N,) float32/float64."""
    for v in range(positions.shape[0]):
        part = parts[v]
        p = 0.0
        for h in range(hit_positions.shape[0]):
            size = hole_size * (part_reach[part] if hit_parts[h] == part else 1.0)
            dx = positions[v, 0] - hit_positions[h, 0]
            dy = positions[v, 1] - hit_positions[h, 1]
            dz = positions[v, 2] - hit_positions[h, 2]
            d = np.sqrt(dx * dx + dy * dy + dz * dz)
            dmg = min(max(1.0 - (d - size) * hole_intensity, 0.0), 1.0)
            p = min(max(p + part_gain[part] * dmg, 0.0), 1.0)
        out[v] = p
    return out


@numba.njit(cache=True)
def accumulate_hit_numba(mask, bind_positions, parts, hit_position, hit_part, hole_size, hole_intensity,
                         part_reach, part_gain):
    """Add one hit into a per-vertex damage ``mask`` (N,) in place (flat-cost mode)."""
    for v in range(bind_positions.shape[0]):
        part = parts[v]
        size = hole_size * (part_reach[part] if hit_part == part else 1.0)
        dx = bind_positions[v, 0] - hit_position[0]
        dy = bind_positions[v, 1] - hit_position[1]
        dz = bind_positions[v, 2] - hit_position[2]
        d = np.sqrt(dx * dx + dy * dy + dz * dz)
        dmg = min(max(1.0 - (d - size) * hole_intensity, 0.0), 1.0)
        mask[v] = min(max(mask[v] + part_gain[part] * dmg, 0.0), 1.0)
    return mask


def morph_numpy(positions, normals, target_positions, target_normals, p):
    """Morph all vertices, NumPy reference. Rows with ``p == 0`` are copied bit for bit.

    Parameters
    ----------
    positions, normals, target_positions, target_normals : (N, 3) float32.
    p : (N,) float.

    Returns
    -------
    (N, 3) positions and (N, 3) unit normals, float32.
    """
    s = np.asarray(positions, dtype=np.float32)
    sn = np.asarray(normals, dtype=np.float32)
    pp = np.asarray(p, dtype=np.float32)[:, None]
    pos = s + pp * (np.asarray(target_positions, np.float32) - s)
    n = sn + pp * (np.asarray(target_normals, np.float32) - sn)
    ln = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, ln, out=sn.copy(), where=ln > 0)
    keep = (pp == 0)
    return np.where(keep, s, pos), np.where(keep, sn, n)


@numba.njit(cache=True)
def morph_numba(positions, normals, target_positions, target_normals, p, out_pos, out_nrm):
    """Numba twin of :func:`morph_numpy`, float32, writing into ``out_pos`` and ``out_nrm``."""
    for v in range(positions.shape[0]):
        t = p[v]
        if t == 0.0:
            for k in range(3):
                out_pos[v, k] = positions[v, k]
                out_nrm[v, k] = normals[v, k]
            continue
        nx = normals[v, 0] + t * (target_normals[v, 0] - normals[v, 0])
        ny = normals[v, 1] + t * (target_normals[v, 1] - normals[v, 1])
        nz = normals[v, 2] + t * (target_normals[v, 2] - normals[v, 2])
        ln = np.float32(np.sqrt(nx * nx + ny * ny + nz * nz))
        for k in range(3):
            out_pos[v, k] = positions[v, k] + t * (target_positions[v, k] - positions[v, k])
        if ln > 0:
            out_nrm[v, 0] = nx / ln
            out_nrm[v, 1] = ny / ln
            out_nrm[v, 2] = nz / ln
        else:
            for k in range(3):
                out_nrm[v, k] = normals[v, k]
    return out_pos, out_nrm


# --------------------------------------------------------------------------------------------
# hits
# --------------------------------------------------------------------------------------------


@dataclass
class Hit:
    """A hit on the skinned surface, stored so that it follows the animation.

    Attributes
    ----------
    face : int, triangle of the runtime mesh; bary : (3,) barycentric coordinates in it.
    bind_position : (3,) float64 metres, the point in the bind (rest) pose.
    bind_normal : (3,) float64 unit, the face normal there in the bind pose.
    bone : int, the dominant bone; local_position / local_normal : (3,) in that bone's rest frame.
    bones : (K,) int32 and weights : (K,) float32, skin weights blended at the point.
    part : int, body part of the hit triangle (the mask value of its corner with most weight).
    """

    face: int
    bary: np.ndarray
    bind_position: np.ndarray
    bind_normal: np.ndarray
    bone: int
    local_position: np.ndarray
    local_normal: np.ndarray
    bones: np.ndarray
    weights: np.ndarray
    part: int

    def world(self, skin_matrices) -> np.ndarray:
        """Posed position (3,) float64: blended skinning of the bind point with ``skin_matrices`` (B,4,4)."""
        return lbs_numpy(self.bind_position[None], self.bones[None], self.weights[None], skin_matrices,
                         dtype=np.float64)[0]

    def world_rigid(self, world_matrices) -> np.ndarray:
        """Posed position using the dominant bone only: ``world_matrices[bone] @ local_position``."""
        m = np.asarray(world_matrices, dtype=np.float64)[self.bone]
        return m[:3, :3] @ self.local_position + m[:3, 3]


def _check_skin(indices, weights, n, n_bones):
    idx = np.asarray(indices)
    w = np.asarray(weights, dtype=np.float64)
    if idx.ndim != 2 or idx.shape[0] != n or w.shape != idx.shape:
        raise KisekaeError(f"expected skin indices and weights of shape ({n}, K), got {idx.shape} and {w.shape}",
                           "skin")
    if idx.size and (idx.min() < 0 or idx.max() >= n_bones):
        raise KisekaeError(f"bone index out of range 0..{n_bones - 1}", "skin indices")
    return idx.astype(np.int64), w


def make_hit(face, bary, bind_vertices, faces, skin_indices, skin_weights, rest_matrices, parts=None,
             max_influences=4) -> Hit:
    """Build a :class:`Hit` at ``bary`` in ``face`` of the runtime mesh.

    Parameters
    ----------
    face : int; bary : (3,) float barycentric coordinates (finite, summing to 1).
    bind_vertices : (N, 3) float, bind-pose positions, metres; faces : (F, 3) int.
    skin_indices, skin_weights : (N, K) bone ids and weights.
    rest_matrices : (B, 4, 4) float, world rest matrices of the bones.
    parts : (N,) int, optional body-part ids.
    max_influences : int, bones kept at the hit (largest blended weights, renormalised).
    """
    bv = as_points(bind_vertices, "bind_vertices")
    f = as_faces(faces, len(bv), "faces")
    rest = np.asarray(rest_matrices, dtype=np.float64)
    if rest.ndim != 3 or rest.shape[1:] != (4, 4):
        raise KisekaeError(f"expected (B, 4, 4), got {rest.shape}", "rest_matrices")
    idx, w = _check_skin(skin_indices, skin_weights, len(bv), len(rest))
    b = np.asarray(bary, dtype=np.float64).reshape(-1)
    if b.shape != (3,) or not np.all(np.isfinite(b)):
        raise KisekaeError(f"hit barycentrics must be 3 finite numbers, got {bary!r}", "hit")
    face = int(face)
    if not 0 <= face < len(f):
        raise KisekaeError(f"face {face} out of range 0..{len(f) - 1}", "hit")
    tri = f[face]
    pos = b @ bv[tri]
    nrm = np.cross(bv[tri[1]] - bv[tri[0]], bv[tri[2]] - bv[tri[0]])
    ln = np.linalg.norm(nrm)
    nrm = nrm / ln if ln > 0 else np.array([0.0, 0.0, 1.0])
    acc = np.zeros(len(rest))
    for k in range(3):
        np.add.at(acc, idx[tri[k]], b[k] * w[tri[k]])
    order = np.argsort(-acc, kind="stable")[:max_influences]
    order = order[acc[order] > 0]
    bw = acc[order] / acc[order].sum()
    bone = int(order[0])
    inv = np.linalg.inv(rest[bone])
    part = 0 if parts is None else int(np.asarray(parts)[tri[int(np.argmax(b))]])
    return Hit(face, b, pos, nrm, bone, inv[:3, :3] @ pos + inv[:3, 3], inv[:3, :3] @ nrm,
               order.astype(np.int32), bw.astype(np.float32), part)


def raycast(origin, direction, vertices, faces, t_min=0.0):
    """First intersection of a world ray with a (posed) triangle mesh, both sides.

    Parameters
    ----------
    origin, direction : (3,) float, metres; ``direction`` non-zero (need not be unit).
    vertices : (N, 3) float posed positions, metres; faces : (F, 3) int.
    t_min : float, ignore hits at ``t <= t_min`` (in units of ``direction``).

    Returns
    -------
    (face, t, bary) with ``face == -1`` when the ray misses.
    """
    o, d = check_ray(origin, direction)
    v = as_points(vertices, "vertices")
    f = as_faces(faces, len(v), "faces").astype(np.int64)
    face, t, bary = ray_triangles_numba(o, d, v, f, float(t_min))
    return int(face), float(t), bary


def place_hit(origin, direction, posed_vertices, bind_vertices, faces, skin_indices, skin_weights,
              rest_matrices, parts=None, *, tree=None, boxes=None) -> Hit | None:
    """Cast a world ray at the posed mesh and store the first hit in bone space (``None`` on a miss).

    Parameters
    ----------
    origin, direction : (3,) float world ray, metres.
    posed_vertices : (N, 3) float, the skinned mesh this frame, metres.
    bind_vertices : (N, 3) float, the same mesh in the bind pose.
    faces, skin_indices, skin_weights, rest_matrices, parts : see :func:`make_hit`.
    tree : optional :class:`kisekae.geom.bvh.BVH` (:func:`kisekae.wound.build_ray_bvh`); when given the
        ray is cast through it (:func:`kisekae.wound.raycast_bvh`), otherwise against every triangle.
    boxes : optional node boxes of ``tree`` for ``posed_vertices`` (:func:`kisekae.wound.refit_boxes`).
    """
    if tree is None:
        face, _t, bary = raycast(origin, direction, posed_vertices, faces)
    else:
        from ..geom.raycast import raycast_bvh
        face, _t, bary = raycast_bvh(origin, direction, posed_vertices, faces, tree, boxes)
    if face < 0:
        return None
    return make_hit(face, bary, bind_vertices, faces, skin_indices, skin_weights, rest_matrices, parts)


def hits_world(hits, skin_matrices) -> np.ndarray:
    """Posed positions of all hits, (H, 3) float64 (what the CPU uploads each frame in loop mode)."""
    if not hits:
        return np.zeros((0, 3))
    k = max(len(h.bones) for h in hits)
    idx = np.zeros((len(hits), k), np.int64)
    w = np.zeros((len(hits), k))
    for i, h in enumerate(hits):
        idx[i, : len(h.bones)] = h.bones
        w[i, : len(h.bones)] = h.weights
    pts = np.stack([h.bind_position for h in hits])
    return lbs_numpy(pts, idx, w, skin_matrices, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# a wound state: parameters, hits and the flat-cost mask
# --------------------------------------------------------------------------------------------


class WoundState:
    """Hits on one skinned mesh and the per-vertex damage they cause.

    Parameters
    ----------
    bind_vertices : (N, 3) float, bind-pose positions of the runtime (start) mesh, metres.
    faces : (F, 3) int.
    skin_indices, skin_weights : (N, K) skin of the mesh.
    rest_matrices : (B, 4, 4) float world rest matrices.
    parts : (N,) int, optional, body part per vertex (default all 0).
    hole_size : float, metres, default 0.03
        Radius fully damaged around a hit (the article's HoleSize).
    hole_intensity : float, 1/metres, default 50
        Inverse width of the fall-off (the article's HoleIntensity); damage reaches 0 at
        ``hole_size + 1 / hole_intensity``.
    part_reach : (P,) float, optional, default all 1
        Multiplier on ``hole_size`` for hits on the vertex's own part (e.g. 20 for an arm that breaks off).
    part_gain : (P,) float, optional, default all 1
        Damage multiplier per part (0 makes it immune).
    """

    def __init__(self, bind_vertices, faces, skin_indices, skin_weights, rest_matrices, parts=None, *,
                 hole_size=0.03, hole_intensity=50.0, part_reach=None, part_gain=None):
        self.bind_vertices = as_points(bind_vertices, "bind_vertices")
        self.faces = as_faces(faces, len(self.bind_vertices), "faces")
        n = len(self.bind_vertices)
        self.rest_matrices = np.asarray(rest_matrices, dtype=np.float64)
        self.skin_indices, self.skin_weights = _check_skin(skin_indices, skin_weights, n, len(self.rest_matrices))
        self.parts = (np.zeros(n, np.int64) if parts is None
                      else as_per_vertex(parts, n, "parts", dtype=np.int64))
        n_parts = int(self.parts.max()) + 1 if n else 1
        self.hole_size = positive(hole_size, "hole_size", allow_zero=True)
        self.hole_intensity = positive(hole_intensity, "hole_intensity")
        self.part_reach = self._per_part(part_reach, n_parts, "part_reach")
        self.part_gain = self._per_part(part_gain, n_parts, "part_gain")
        self.hits: list[Hit] = []
        self.mask = np.zeros(n, dtype=np.float64)
        self.uv_mask = None
        self._tree = None

    @property
    def tree(self):
        """Ray-casting BVH over the faces (:func:`kisekae.wound.build_ray_bvh`), built on first use."""
        if self._tree is None:
            from ..geom.raycast import build_ray_bvh
            self._tree = build_ray_bvh(self.bind_vertices, self.faces)
        return self._tree

    def posed_boxes(self, posed_vertices):
        """Node boxes of :attr:`tree` for one pose; pass them to :meth:`shoot` to cast many rays per pose."""
        from ..geom.bvh import refit_boxes
        return refit_boxes(self.tree, posed_vertices, self.faces)

    def enable_uv_mask(self, vertex_uv, *, uv_coords=None, uv_faces=None, size=512, padding=2):
        """Keep a UV-space damage mask (:class:`kisekae.wound.UVDamageMask`) beside the per-vertex one.

        Hits already recorded are accumulated into it; later :meth:`add` calls update both.
        ``vertex_uv`` (N, 2) is where each vertex reads the mask (its uv0); ``uv_coords``/``uv_faces``
        give the per-corner UV layout (default: ``vertex_uv`` through ``faces``). ``size`` is the
        texture side in texels, ``padding`` the gutter. Returns the mask.
        """
        from .uvmask import UVDamageMask
        m = UVDamageMask(self.bind_vertices, self.faces, vertex_uv, uv_coords=uv_coords, uv_faces=uv_faces,
                         n_parts=len(self.part_reach), size=size, padding=padding)
        for h in self.hits:
            m.accumulate(h.bind_position, h.part, self.hole_size, self.hole_intensity, self.part_reach,
                         self.part_gain)
        self.uv_mask = m
        return m

    def p_uv(self, out=None) -> np.ndarray:
        """Morph parameter per vertex read from the UV-space mask, (N,) float32 (needs :meth:`enable_uv_mask`)."""
        if self.uv_mask is None:
            raise KisekaeError("no UV mask; call enable_uv_mask(vertex_uv) first", "WoundState")
        return self.uv_mask.sample(self.parts, out)

    @staticmethod
    def _per_part(values, n_parts, name):
        if values is None:
            return np.ones(n_parts)
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
        if arr.size < n_parts or not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise KisekaeError(f"need {n_parts} finite values >= 0 (one per body part), got {arr.size}", name)
        return arr

    def add(self, hit: Hit) -> Hit:
        """Record a hit and accumulate it into the flat-cost mask (cost O(N) once, not per frame)."""
        if not isinstance(hit, Hit):
            raise KisekaeError(f"expected a Hit, got {type(hit).__name__}", "hit")
        if not (np.all(np.isfinite(hit.bind_position)) and np.all(np.isfinite(hit.local_position))):
            raise KisekaeError("hit position has NaN or infinite coordinates", "hit")
        self.hits.append(hit)
        accumulate_hit_numba(self.mask, self.bind_vertices, self.parts, hit.bind_position, hit.part,
                             self.hole_size, self.hole_intensity, self.part_reach, self.part_gain)
        if self.uv_mask is not None:
            self.uv_mask.accumulate(hit.bind_position, hit.part, self.hole_size, self.hole_intensity,
                                    self.part_reach, self.part_gain)
        return hit

    def shoot(self, origin, direction, posed_vertices, *, boxes=None, brute_force=False) -> Hit | None:
        """Ray-cast a world ray on ``posed_vertices`` (N, 3) and :meth:`add` the hit; ``None`` on a miss.

        The ray goes through :attr:`tree`, refitted to ``posed_vertices`` unless ``boxes`` (from
        :meth:`posed_boxes`) are given; ``brute_force=True`` tests every triangle instead (same result).
        """
        hit = place_hit(origin, direction, posed_vertices, self.bind_vertices, self.faces, self.skin_indices,
                        self.skin_weights, self.rest_matrices, self.parts,
                        tree=None if brute_force else self.tree, boxes=boxes)
        return None if hit is None else self.add(hit)

    def hit_at_bind_point(self, point) -> Hit:
        """Add a hit at the bind-pose surface point closest to ``point`` (3,) metres."""
        x = np.asarray(point, dtype=np.float64).reshape(-1)
        if x.shape != (3,) or not np.all(np.isfinite(x)):
            raise KisekaeError(f"hit point must be 3 finite numbers, got {point!r}", "hit")
        from ..geom.closest import closest_point_triangles_numpy
        v, f = self.bind_vertices, self.faces
        m = len(f)
        q, bary, d = closest_point_triangles_numpy(np.repeat(x[None], m, 0), v[f[:, 0]], v[f[:, 1]], v[f[:, 2]])
        k = int(np.argmin(d))
        return self.add(make_hit(k, bary[k], v, f, self.skin_indices, self.skin_weights, self.rest_matrices,
                                 self.parts))

    def p_flat(self) -> np.ndarray:
        """Morph parameter per vertex in flat-cost mode, (N,) float32 (a copy of the mask)."""
        return self.mask.astype(np.float32)

    def p_loop(self, posed_vertices, skin_matrices) -> np.ndarray:
        """Morph parameter per vertex in loop mode (article style): hits re-evaluated in posed space."""
        hp = hits_world(self.hits, skin_matrices)
        hparts = np.array([h.part for h in self.hits], dtype=np.int64)
        out = np.zeros(len(self.bind_vertices), np.float64)
        return wound_p_numba(np.ascontiguousarray(posed_vertices, dtype=np.float64), self.parts, hp, hparts,
                             self.hole_size, self.hole_intensity, self.part_reach, self.part_gain, out)

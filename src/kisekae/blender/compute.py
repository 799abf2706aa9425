"""What the Blender operators compute, on plain arrays (no ``bpy``).

The add-on reads meshes from Blender into NumPy (polygons as Blender stores them: loop starts,
loop counts and corner vertices) and calls these functions, which call kisekae's own tension,
fix and check. Keeping them here lets them run, and be tested, without Blender.
"""

from __future__ import annotations

import numpy as np

from ..avatar.mesh import Mesh, triangulate_quads
from ..errors import KisekaeError
from ..fit.fix import blended_normals, fix_garment, params_for
from ..fit.pushout import PushParams
from ..geom.normals import vertex_normals
from ..qa.check import check_garment
from ..qa.penetration import BodyQuery, BodyTopology
from ..validate import as_points

#: Fields of a before/after record shown in the add-on's report, in order.
REPORT_FIELDS = ("inside_count", "max_depth_m", "edge_crossings", "flipped_faces", "folded_pairs", "strain_max",
                 "self_crossings")


def polygons_to_mesh(rest, loop_start, loop_total, corner_verts, name: str = "mesh") -> Mesh:
    """A kisekae :class:`Mesh` from Blender's polygon arrays.

    Quads keep their quad structure (their sides are the edges, split into triangles along the
    0-2 diagonal as kisekae does on import); triangles are kept; larger polygons are split into
    fans from their first corner. Quads come first in the result, as :class:`Mesh` requires.

    Parameters
    ----------
    rest : (N, 3) float
        Rest positions, metres, kisekae's frame.
    loop_start, loop_total : (P,) int
        Each polygon's first corner and corner count (``Mesh.polygons`` ``loop_start``/``loop_total``).
    corner_verts : (L,) int
        Vertex of each corner (``Mesh.loops`` ``vertex_index``).
    name : str

    Returns
    -------
    Mesh
    """
    ls = np.asarray(loop_start, dtype=np.int64)
    lt = np.asarray(loop_total, dtype=np.int64)
    cv = np.asarray(corner_verts, dtype=np.int64)
    if len(ls) == 0:
        raise KisekaeError("the mesh has no faces", name)
    if lt.min() < 3 or (ls + lt).max() > len(cv) or ls.min() < 0:
        raise KisekaeError("polygon corners out of range", name)
    quads = cv[ls[lt == 4][:, None] + np.arange(4)]
    tris = [cv[ls[lt == 3][:, None] + np.arange(3)]]
    for s, t in zip(ls[lt > 4], lt[lt > 4]):
        c = cv[s:s + t]
        tris.append(np.stack([np.full(t - 2, c[0]), c[1:-1], c[2:]], axis=1))
    tri = np.concatenate(tris).reshape(-1, 3)
    faces = np.concatenate([triangulate_quads(quads), tri]).astype(np.int32)
    return Mesh(as_points(rest, f"{name} rest", dtype=np.float32), faces, quads.astype(np.int32) if len(quads) else None,
                name=name)


def body_query(mesh: Mesh, posed) -> BodyQuery:
    """The posed body as kisekae's check and fix see it (winding number, BVH)."""
    p = as_points(posed, f"{mesh.name} posed", dtype=np.float32)
    if len(p) != mesh.n_vertices:
        raise KisekaeError(f"has {len(p)} posed vertices but {mesh.n_vertices} at rest", mesh.name)
    return BodyQuery(BodyTopology.from_mesh(mesh.vertices, mesh.faces), p)


def garment_directions(mesh: Mesh, posed, blend=None) -> np.ndarray:
    """Preferred outward directions of a posed garment, as ``kisekae check --fix`` uses them.

    Parameters
    ----------
    mesh : Mesh
        The garment at rest.
    posed : (N, 3) float
        The garment in the pose, metres.
    blend : (N, 3, 3) float or None
        Each vertex's blended skinning matrix (from its Armature modifier). Without it (no
        armature) the posed mesh's own vertex normals are used.

    Returns
    -------
    (N, 3) float64 unit vectors.
    """
    if blend is None:
        return vertex_normals(as_points(posed, "posed", dtype=np.float32), mesh.faces, mesh.weld).astype(np.float64)
    return blended_normals(mesh.normals, blend)


def fix_params(name: str, use_defaults: bool, **values) -> PushParams:
    """The push parameters of one garment: kisekae's per-garment defaults, or the values given."""
    if use_defaults:
        return params_for(name, None)
    return PushParams(**values)


def fix_and_check(query: BodyQuery, mesh: Mesh, posed, params: PushParams, blend=None) -> tuple:
    """Fix one garment and check it before and after, like ``kisekae check --fix``.

    Returns
    -------
    fixed : (N, 3) float32
        Fixed positions, metres.
    before, after : dict
        Check records (:func:`kisekae.qa.check.check_garment`); ``after`` also holds the fix's
        metrics (``max_push_m``, ``moved_fraction``, ``moved_unnecessarily``, ``unresolved``).
    """
    posed = as_points(posed, f"{mesh.name} posed", dtype=np.float32)
    before = check_garment(query, mesh, posed, posed)
    res = fix_garment(query, mesh, posed, params, directions=garment_directions(mesh, posed, blend))
    after = check_garment(query, mesh, posed, res.positions)
    after.update(res.metrics)
    return res.positions, before, after


def offending_vertices(record: dict, edges) -> np.ndarray:
    """(N,) bool: vertices inside the body or on an edge that crosses it, from a check record."""
    mask = np.asarray(record["inside"], dtype=bool).copy()
    cross = np.asarray(record["crossing"], dtype=bool)
    if cross.any():
        mask[np.asarray(edges)[cross].ravel()] = True
    return mask


def rest_offsets(delta, blend=None) -> np.ndarray:
    """Rest-space offsets whose skinned image is ``delta`` (what a shape key under an armature needs).

    Linear blend skinning maps a rest offset ``d`` to ``A d`` with ``A`` the vertex's blended
    matrix, so the shape key holds ``A⁻¹ delta``; without an armature it holds ``delta``.

    Parameters
    ----------
    delta : (N, 3) float
        Wanted displacement of the posed vertices (object space).
    blend : (N, 3, 3) float or None

    Returns
    -------
    (N, 3) float64
    """
    d = np.asarray(delta, dtype=np.float64)
    if blend is None:
        return d
    return np.linalg.solve(np.asarray(blend, dtype=np.float64), d[:, :, None])[:, :, 0]

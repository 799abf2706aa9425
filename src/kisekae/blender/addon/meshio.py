"""Reading meshes out of Blender and writing results back (``bpy``, NumPy ``foreach_get``/``foreach_set``)."""

from __future__ import annotations

import bpy
import numpy as np

from ...errors import KisekaeError
from ..compute import polygons_to_mesh
from ..frames import matrices_to_kisekae, to_kisekae


def _coords(seq, n, attr="co"):
    out = np.empty(3 * n, dtype=np.float32)
    seq.foreach_get(attr, out)
    return out.reshape(n, 3)


def rest_local(obj) -> np.ndarray:
    """(N, 3) float32 rest positions in object space: the "Basis" shape key if there is one, else the mesh."""
    me = obj.data
    keys = me.shape_keys
    if keys is not None and len(keys.key_blocks):
        block = keys.key_blocks.get("Basis") or keys.reference_key
        return _coords(block.data, len(me.vertices))
    return _coords(me.vertices, len(me.vertices))


def evaluated_local(obj, depsgraph) -> np.ndarray:
    """(N, 3) float32 positions of the evaluated object (modifiers, shape keys, armature), object space."""
    ev = obj.evaluated_get(depsgraph)
    me = ev.data
    n = len(obj.data.vertices)
    if len(me.vertices) != n:
        raise KisekaeError(f"its modifiers change the vertex count ({n} -> {len(me.vertices)}); kisekae needs the "
                           "same vertices as the mesh (move Subdivision after kisekae or disable it)", obj.name)
    return _coords(me.vertices, n)


def edges(obj) -> np.ndarray:
    """(E, 2) int32 Blender edges of the mesh (the node group's Edge domain)."""
    me = obj.data
    e = np.empty(2 * len(me.edges), dtype=np.int32)
    me.edges.foreach_get("vertices", e)
    return e.reshape(-1, 2)


def polygons(obj):
    """(loop_start, loop_total, corner_verts) int arrays of the mesh."""
    me = obj.data
    ls = np.empty(len(me.polygons), np.int32)
    lt = np.empty(len(me.polygons), np.int32)
    cv = np.empty(len(me.loops), np.int32)
    me.polygons.foreach_get("loop_start", ls)
    me.polygons.foreach_get("loop_total", lt)
    me.loops.foreach_get("vertex_index", cv)
    return ls, lt, cv


def world(obj, local) -> np.ndarray:
    """Object-space positions to world space (float64)."""
    m = np.array(obj.matrix_world, dtype=np.float64)
    return local.astype(np.float64) @ m[:3, :3].T + m[:3, 3]


def to_local(obj, points_world) -> np.ndarray:
    """World positions to object space (float64)."""
    m = np.linalg.inv(np.array(obj.matrix_world, dtype=np.float64))
    return np.asarray(points_world, dtype=np.float64) @ m[:3, :3].T + m[:3, 3]


def kisekae_mesh(obj):
    """The object's rest mesh as a kisekae :class:`~kisekae.avatar.mesh.Mesh`, world space, kisekae's frame."""
    rest = to_kisekae(world(obj, rest_local(obj))).astype(np.float32)
    return polygons_to_mesh(rest, *polygons(obj), name=obj.name)


def posed_kisekae(obj, depsgraph) -> np.ndarray:
    """The evaluated object's positions, world space, kisekae's frame (float32)."""
    return to_kisekae(world(obj, evaluated_local(obj, depsgraph))).astype(np.float32)


def armature_blend(obj) -> np.ndarray | None:
    """(N, 3, 3) blended armature matrices per vertex in object space, or None without an Armature modifier.

    Blender's Armature modifier maps a vertex by ``post · Σ_b w_b (P_b B_b⁻¹) / Σ_b w_b · pre``
    (``pre`` = armature⁻¹ · object, ``post = pre⁻¹``; ``P_b`` the pose bone matrix, ``B_b`` the bone's
    rest matrix); this returns the 3x3 part of that map. Vertices without weights get the identity.
    """
    mod = next((m for m in obj.modifiers if m.type == "ARMATURE" and m.object is not None and m.show_viewport), None)
    if mod is None:
        return None
    arm = mod.object
    pre = np.array(arm.matrix_world.inverted() @ obj.matrix_world, dtype=np.float64)[:3, :3]
    post = np.linalg.inv(pre)
    bone_m = {}
    for pb in arm.pose.bones:
        if pb.bone.use_deform:
            bone_m[pb.name] = np.array(pb.matrix @ pb.bone.matrix_local.inverted(), dtype=np.float64)[:3, :3]
    group_m = {vg.index: bone_m.get(vg.name) for vg in obj.vertex_groups}
    n = len(obj.data.vertices)
    acc = np.zeros((n, 3, 3))
    total = np.zeros(n)
    for v in obj.data.vertices:
        for g in v.groups:
            m = group_m.get(g.group)
            if m is not None and g.weight > 0:
                acc[v.index] += g.weight * m
                total[v.index] += g.weight
    blend = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()
    ok = total > 0
    blend[ok] = acc[ok] / total[ok, None, None]
    return post @ blend @ pre


def armature_blend_kisekae(obj):
    """:func:`armature_blend` taken to world space and kisekae's frame (None without an armature)."""
    blend = armature_blend(obj)
    if blend is None:
        return None, None
    r = np.array(obj.matrix_world, dtype=np.float64)[:3, :3]
    return blend, matrices_to_kisekae(r @ blend @ np.linalg.inv(r))


def write_point_float(me, name: str, values) -> None:
    """Write a float point attribute ``name`` (created or replaced when its type differs)."""
    a = me.attributes.get(name)
    if a is not None and (a.domain != "POINT" or a.data_type != "FLOAT"):
        me.attributes.remove(a)
        a = None
    if a is None:
        a = me.attributes.new(name, "FLOAT", "POINT")
    a.data.foreach_set("value", np.ascontiguousarray(values, dtype=np.float32))


def write_point_color(me, name: str, rgb) -> None:
    """Write a float colour point attribute ``name`` (RGB, alpha 1)."""
    a = me.color_attributes.get(name)
    if a is not None and (a.domain != "POINT" or a.data_type != "FLOAT_COLOR"):
        me.color_attributes.remove(a)
        a = None
    if a is None:
        a = me.color_attributes.new(name, "FLOAT_COLOR", "POINT")
    rgba = np.ones((len(rgb), 4), dtype=np.float32)
    rgba[:, :3] = rgb
    a.data.foreach_set("color", rgba.ravel())


def select_vertices(obj, mask) -> None:
    """Select exactly the vertices in ``mask`` (shown in Edit Mode, vertex select mode).

    Edges and faces are left alone: in bpy 5.0, setting their ``select`` on a mesh built from
    Python crashes Blender, and setting vertex selection from a NumPy bool buffer does too, so
    the mask goes in as a list.
    """
    me = obj.data
    me.vertices.foreach_set("select", np.asarray(mask, dtype=bool).tolist())
    me.update()


def mesh_objects(context, exclude=None) -> list:
    """Selected mesh objects, without ``exclude``, in name order."""
    return sorted((o for o in context.selected_objects if o.type == "MESH" and o != exclude), key=lambda o: o.name)


def require_mesh(obj, what: str):
    if obj is None or obj.type != "MESH":
        raise KisekaeError("choose a mesh object", what)
    return obj


def depsgraph(context):
    return context.evaluated_depsgraph_get()


def frame_set(scene, frame: int, context=None):
    scene.frame_set(frame)
    return (context or bpy.context).evaluated_depsgraph_get()

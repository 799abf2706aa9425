"""Glue between the avatar model and the plain-array renderer: draw items and camera landmarks.

Everything here takes a :class:`kisekae.avatar.Avatar` and a :class:`kisekae.avatar.Pose` and
returns :class:`~kisekae.render.renderer.DrawItem` objects; the renderer itself never imports the
avatar package.
"""

from __future__ import annotations

import numpy as np

from ..errors import KisekaeError
from ..geom.normals import vertex_normals
from . import materials as _m
from .renderer import UP, DrawItem

#: Bones whose posed heads anchor the close-up cameras (game_engine names; cmu_mb through the
#: avatar package's aliases).
LANDMARK_BONES = {"knees": ("calf_l", "calf_r"), "hips": ("thigh_l", "thigh_r"), "waist": ("spine_02",)}
#: Close-up anchors that lie between joints: weighted sums of posed joint positions (all of the bones needed). The
#: left armpit: 60 % shoulder joint, 20 % elbow, 20 % upper chest, which puts it 6-8 cm below the shoulder joint,
#: towards the chest, with the arm down or raised.
LANDMARK_BLENDS = {"armpits": (("upperarm_l", 0.6), ("lowerarm_l", 0.2), ("spine_03", 0.2))}

#: Default garment colours (sRGB 0..1), cycled over garments.
GARMENT_COLORS = ((0.22, 0.30, 0.55), (0.55, 0.20, 0.25), (0.25, 0.45, 0.30), (0.45, 0.40, 0.25))


def avatar_landmarks(avatar, pose) -> dict:
    """Posed joint positions for the close-up views.

    Parameters
    ----------
    avatar : kisekae.avatar.Avatar
    pose : kisekae.avatar.Pose

    Returns
    -------
    dict[str, (K,3) float64]
        ``knees``, ``hips``, ``waist``, ``armpits`` anchors in metres (bones missing from the rig are skipped).
    """
    from ..avatar.poses import resolve_bone

    world = pose.world_matrices(avatar.skeleton)
    out = {}
    for view, bones in LANDMARK_BONES.items():
        pts = []
        for b in bones:
            try:
                pts.append(world[resolve_bone(avatar.skeleton, b, "landmarks")][:3, 3])
            except KisekaeError:
                continue
        if pts:
            out[view] = np.asarray(pts, dtype=np.float64)
    for view, parts in LANDMARK_BLENDS.items():
        try:
            out[view] = sum(w * world[resolve_bone(avatar.skeleton, b, "landmarks")][:3, 3] for b, w in parts)[None]
        except KisekaeError:
            continue
    return out


def mesh_item(mesh, positions=None, *, material=None, attributes=None, role="other", wire=False) -> DrawItem:
    """A :class:`DrawItem` for a :class:`kisekae.avatar.Mesh` at new positions.

    Parameters
    ----------
    mesh : kisekae.avatar.Mesh
    positions : (N,3) float, optional
        Posed (or fixed) positions, metres; default the mesh's own vertices.
    material : Material, optional
    attributes : dict, optional
        Per-vertex effect attributes, see :class:`DrawItem`.
    role : str
    wire : bool
        Pass the mesh's quad edges for the wireframe material.
    """
    pos = mesh.vertices if positions is None else positions
    weld = getattr(mesh, "weld", None)
    normals = vertex_normals(pos, mesh.faces, weld, fallback=UP)
    edges = mesh.edges if wire and getattr(mesh, "quads", None) is not None else None
    return DrawItem(pos, mesh.faces, material or _m.Material(), normals=normals, attributes=attributes,
                    edges=edges, role=role, name=getattr(mesh, "name", "mesh"))


def avatar_items(avatar, pose, *, garments=None, positions=None, preset="realistic", body_material=None,
                 garment_materials=None, attributes=None):
    """Draw items for an avatar's body and garments in a pose.

    Parameters
    ----------
    avatar : kisekae.avatar.Avatar
    pose : kisekae.avatar.Pose
    garments : sequence of str, optional
        Garment names to include (default: all).
    positions : dict[str, (N,3)], optional
        Replacement positions per part (``"body"`` or a garment), e.g. pushed-out garments;
        parts not given are skinned with ``pose``.
    preset : str, default ``"realistic"``
    body_material, garment_materials : Material or dict[str, Material], optional
    attributes : dict[str, dict], optional
        Per-part effect attributes, e.g. ``{"body": {"tightness": t}}``.

    Returns
    -------
    body : DrawItem
    garments : dict[str, DrawItem]
    """
    names = list(avatar.garments) if garments is None else list(garments)
    positions = positions or {}
    attributes = attributes or {}
    garment_materials = garment_materials or {}
    skin_mats = pose.skinning_matrices(avatar.skeleton)

    def posed(name):
        if name in positions:
            return positions[name]
        return avatar.part(name).posed(skin_mats)

    body = mesh_item(avatar.body.mesh, posed("body"), material=body_material or _m.skin(preset),
                     attributes=attributes.get("body"), role="body")
    items = {}
    for i, name in enumerate(names):
        mat = garment_materials.get(name) if isinstance(garment_materials, dict) else garment_materials
        mat = mat or _m.cloth(GARMENT_COLORS[i % len(GARMENT_COLORS)], preset)
        items[name] = mesh_item(avatar.part(name).mesh, posed(name), material=mat, attributes=attributes.get(name),
                                role="garment")
    return body, items


def covered_body_faces(avatar, garments) -> np.ndarray:
    """(F,) bool body triangles hidden under any of ``garments``: what an engine culls while they are worn.

    The union of :func:`kisekae.fit.runtime.covered_skin_triangles` (baked once per garment, cached on the avatar).
    """
    from ..fit.runtime import covered_skin_triangles

    mask = np.zeros(len(avatar.body.mesh.faces), dtype=bool)
    for name in garments:
        mask |= covered_skin_triangles(avatar, name)
    return mask


def cull_covered(body: DrawItem, avatar, garments) -> DrawItem:
    """The body item without the triangles covered by ``garments`` (:func:`covered_body_faces`).

    Only the index list changes: positions, normals (computed over the whole body) and attributes stay, as an
    engine that swaps the body's index buffer draws it.
    """
    from dataclasses import replace

    mask = covered_body_faces(avatar, garments)
    if len(mask) != len(body.faces):
        raise KisekaeError(f"the body item has {len(body.faces)} triangles, the avatar's body {len(mask)}", "cull")
    return replace(body, faces=body.faces[~mask])


"""A documented procedural damaged variant of a skinned body (for tests, demos and benchmarks).

:func:`damage_body` works on plain arrays; :func:`damaged_builtin` applies it to the built-in
MakeHuman avatar.

The deformation, in the bind pose (metres):

1. **Shrunken forearm and hand.** Let ``e`` be the head of the forearm bone (the elbow) and ``a``
   the unit vector from the elbow to the wrist (the bone's head to its tail). A vertex ``x`` at
   ``s = (x - e) . a`` along the axis and radial offset ``r = x - e - s a`` moves to
   ``e + length_scale * max(s, 0) * a + radius_scale * r + min(s, 0) * a``, blended by ``w``, the sum
   of the vertex's skin weights on the forearm, hand and finger bones. Defaults: ``length_scale =
   0.35``, ``radius_scale = 0.6``.
2. **Dented chest.** Around the chest point ``c`` (the front-most body vertex at the height of the
   upper spine bone's head, 4 cm to the character's left), vertices facing forward (``n_z > 0``) move
   against their normal by ``depth * exp(-(|x - c| / sigma)^2)``; defaults ``depth = 25 mm``,
   ``sigma = 45 mm``.

Body parts (vertex colour alpha / runtime mask): 0 = rest of the body, 1 = the shrunken forearm and
hand (vertices whose largest weight is on those bones), 2 = the chest (largest weight on the spine
bones above the waist or the clavicles).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import KisekaeError
from ..geom.normals import vertex_normals

PART_BODY, PART_ARM, PART_CHEST = 0, 1, 2


@dataclass
class DamagedBody:
    """Result of :func:`damage_body`.

    Attributes
    ----------
    vertices : (N, 3) float32, the damaged shape, metres (same topology as the input).
    parts : (N,) uint8 body-part ids.
    arm_weight : (N,) float64, blend weight of the forearm shrink per vertex.
    dent_center : (3,) float64, metres.
    dent_offset : (N,) float64, metres moved by the dent.
    """

    vertices: np.ndarray
    parts: np.ndarray
    arm_weight: np.ndarray
    dent_center: np.ndarray
    dent_offset: np.ndarray


def _bones(names, wanted, source):
    idx = [i for i, n in enumerate(names) if n in wanted]
    if not idx:
        raise KisekaeError(f"none of the bones {sorted(wanted)} is in the skeleton", source)
    return idx


def damage_body(vertices, faces, skin_indices, skin_weights, bone_names, heads, tails, *, side="l",
                length_scale=0.35, radius_scale=0.6, dent_depth=0.025, dent_sigma=0.045) -> DamagedBody:
    """Shrink one forearm and hand and dent the chest (see the module docstring for the formulas).

    Parameters
    ----------
    vertices : (N, 3) float, bind pose, metres; faces : (F, 3) int.
    skin_indices, skin_weights : (N, K) bone ids and weights.
    bone_names : list of str, ``game_engine`` rig names (``lowerarm_l``, ``hand_l``, fingers
        ``*_0[123]_l``, ``spine_03``, ...).
    heads, tails : (B, 3) float, bone head and tail positions, metres.
    side : {'l', 'r'}, which arm.
    length_scale, radius_scale : float, shrink of the forearm along and across its axis.
    dent_depth : float, metres; dent_sigma : float, metres.
    """
    v = np.asarray(vertices, dtype=np.float64)
    names = list(bone_names)
    idx = np.asarray(skin_indices)
    w = np.asarray(skin_weights, dtype=np.float64)
    heads = np.asarray(heads, dtype=np.float64)
    tails = np.asarray(tails, dtype=np.float64)
    fingers = ("thumb", "index", "middle", "ring", "pinky")
    arm_bones = {f"lowerarm_{side}", f"hand_{side}"} | {f"{f}_0{k}_{side}" for f in fingers for k in (1, 2, 3)}
    arm = _bones(names, arm_bones, "bone_names")
    fore = names.index(f"lowerarm_{side}")
    is_arm = np.isin(idx, arm)
    w_arm = np.clip((w * is_arm).sum(axis=1), 0.0, 1.0)
    e = heads[fore]
    a = tails[fore] - heads[fore]
    a /= np.linalg.norm(a)
    rel = v - e
    s = rel @ a
    r = rel - s[:, None] * a
    shrunk = e + (length_scale * np.maximum(s, 0) + np.minimum(s, 0))[:, None] * a + radius_scale * r
    out = v + w_arm[:, None] * (shrunk - v)

    chest_bones = _bones(names, {"spine_02", "spine_03", "clavicle_l", "clavicle_r"}, "bone_names")
    sp = names.index("spine_03") if "spine_03" in names else chest_bones[0]
    n = vertex_normals(v, faces, dtype=np.float64)
    cx = 0.04 if side == "l" else -0.04  # character's left is +X in the glTF frame (faces +Z)
    band = np.abs(v[:, 1] - heads[sp, 1]) < 0.02
    band &= np.abs(v[:, 0] - cx) < 0.02
    if not band.any():
        raise KisekaeError("found no body vertex in front of the upper spine for the chest dent", "vertices")
    c = v[np.flatnonzero(band)[np.argmax(v[band, 2])]]
    dist = np.linalg.norm(v - c, axis=1)
    off = dent_depth * np.exp(-((dist / dent_sigma) ** 2)) * (n[:, 2] > 0)
    out = out - off[:, None] * n

    dom = idx[np.arange(len(idx)), np.argmax(w, axis=1)]
    parts = np.zeros(len(v), np.uint8)
    parts[np.isin(dom, chest_bones)] = PART_CHEST
    parts[np.isin(dom, arm)] = PART_ARM
    return DamagedBody(out.astype(np.float32), parts, w_arm, c, off)


def damaged_builtin(avatar=None, **kwargs) -> DamagedBody:
    """:func:`damage_body` on the built-in avatar's body (``game_engine`` rig)."""
    if avatar is None:
        from ..avatar import load_builtin_avatar
        avatar = load_builtin_avatar("game_engine")
    sk = avatar.skeleton
    heads = np.asarray(sk.rest)[:, :3, 3]
    if sk.tails is None:
        raise KisekaeError("the skeleton has no bone tails", "avatar")
    body = avatar.body
    return damage_body(body.mesh.vertices, body.mesh.faces, body.skin.indices, body.skin.weights, sk.names,
                       heads, sk.tails, **kwargs)

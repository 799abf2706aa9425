"""VRM 0.x / 1.0 data: humanoid bone mapping, springBone colliders <-> capsule rigs.

VRM stores its data in glTF extensions: ``VRM`` (0.x) and ``VRMC_vrm`` + ``VRMC_springBone``
(1.0). This module reads them from the extension objects (already parsed JSON), converts the
colliders to a :class:`~kisekae.avatar.capsules.CapsuleRig` in our bone space and writes them back.
The humanoid vocabulary (bone names, guessing a mapping) is :mod:`kisekae.avatar.humanoid`; capsules
placed from a humanoid mapping are :func:`kisekae.fit.humanoid.humanoid_capsules`.

Conventions: VRM 0.x collider offsets have their z negated relative to the node's glTF frame
(as three-vrm reads them); VRM 1.0 offsets are plain node-local coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..avatar.capsules import CapsuleRig
from ..errors import KisekaeError


@dataclass
class VrmData:
    """VRM data of a file.

    Attributes
    ----------
    version : "0" or "1"
    humanoid : dict VRM bone name -> glTF node index
    colliders : list of (node, offset (3,), tail (3,) or None, radius), node-local metres
        (VRM 0.x offsets already converted to the node's glTF frame)
    """

    version: str
    humanoid: dict = field(default_factory=dict)
    colliders: list = field(default_factory=list)


def _node(v, n_nodes: int, where: str, src) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < n_nodes:
        raise KisekaeError(f"{where} = {v!r:.40} is not a node index (0..{n_nodes - 1})", src)
    return v


def _vec(v, where: str, src, *, xyz: bool = False) -> np.ndarray:
    if xyz:
        if not isinstance(v, dict):
            raise KisekaeError(f"{where} must be an object with x, y, z", src)
        v = [v.get("x", 0.0), v.get("y", 0.0), v.get("z", 0.0)]
    if not isinstance(v, list) or len(v) != 3 or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                         for x in v):
        raise KisekaeError(f"{where} must be 3 numbers", src)
    a = np.asarray(v, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise KisekaeError(f"{where} is not finite", src)
    return a


def _radius(v, where: str, src) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
        raise KisekaeError(f"{where} must be a finite number >= 0", src)
    return float(v)


def read_vrm(extensions: dict, n_nodes: int, src) -> VrmData | None:
    """Read VRM 1.0 (``VRMC_vrm``, ``VRMC_springBone``) or 0.x (``VRM``) data; None if neither."""
    if not isinstance(extensions, dict):
        return None
    if "VRMC_vrm" in extensions or "VRMC_springBone" in extensions:
        return _read_vrm1(extensions, n_nodes, src)
    if "VRM" in extensions:
        return _read_vrm0(extensions["VRM"], n_nodes, src)
    return None


def _read_vrm1(extensions: dict, n_nodes: int, src) -> VrmData:
    """VRM 1.0: humanoid bones of ``VRMC_vrm`` and capsule/sphere colliders of ``VRMC_springBone``."""
    data = VrmData("1")
    vrm = extensions.get("VRMC_vrm", {})
    hb = vrm.get("humanoid", {}).get("humanBones", {}) if isinstance(vrm, dict) and isinstance(
        vrm.get("humanoid", {}), dict) else {}
    if not isinstance(hb, dict):
        raise KisekaeError("VRMC_vrm.humanoid.humanBones must be an object", src)
    for name, b in hb.items():
        if not isinstance(b, dict):
            raise KisekaeError(f"VRMC_vrm.humanoid.humanBones.{name} must be an object", src)
        data.humanoid[str(name)] = _node(b.get("node"), n_nodes, f"VRMC_vrm.humanoid.humanBones.{name}.node", src)
    sb = extensions.get("VRMC_springBone", {})
    cols = sb.get("colliders", []) if isinstance(sb, dict) else []
    if not isinstance(cols, list):
        raise KisekaeError("VRMC_springBone.colliders must be an array", src)
    for i, c in enumerate(cols):
        w = f"VRMC_springBone.colliders[{i}]"
        if not isinstance(c, dict) or not isinstance(c.get("shape"), dict):
            raise KisekaeError(f"{w} needs a node and a shape", src)
        node = _node(c.get("node"), n_nodes, f"{w}.node", src)
        shape = c["shape"]
        if isinstance(shape.get("capsule"), dict):
            s = shape["capsule"]
            data.colliders.append((node, _vec(s.get("offset", [0, 0, 0]), f"{w}.shape.capsule.offset", src),
                                   _vec(s.get("tail", [0, 0, 0]), f"{w}.shape.capsule.tail", src),
                                   _radius(s.get("radius", 0.0), f"{w}.shape.capsule.radius", src)))
        elif isinstance(shape.get("sphere"), dict):
            s = shape["sphere"]
            data.colliders.append((node, _vec(s.get("offset", [0, 0, 0]), f"{w}.shape.sphere.offset", src), None,
                                   _radius(s.get("radius", 0.0), f"{w}.shape.sphere.radius", src)))
        # other shapes (extended colliders: planes) have no capsule equivalent
    return data


def _read_vrm0(vrm, n_nodes: int, src) -> VrmData:
    """VRM 0.x: humanoid bones and the sphere colliders of ``secondaryAnimation.colliderGroups``."""
    if not isinstance(vrm, dict):
        raise KisekaeError("extensions.VRM must be an object", src)
    data = VrmData("0")
    hum = vrm.get("humanoid", {})
    bones = hum.get("humanBones", []) if isinstance(hum, dict) else []
    if not isinstance(bones, list):
        raise KisekaeError("VRM.humanoid.humanBones must be an array", src)
    for i, b in enumerate(bones):
        if not isinstance(b, dict) or not isinstance(b.get("bone"), str):
            raise KisekaeError(f"VRM.humanoid.humanBones[{i}] needs 'bone' and 'node'", src)
        data.humanoid[b["bone"]] = _node(b.get("node"), n_nodes, f"VRM.humanoid.humanBones[{i}].node", src)
    sec = vrm.get("secondaryAnimation", {})
    groups = sec.get("colliderGroups", []) if isinstance(sec, dict) else []
    if not isinstance(groups, list):
        raise KisekaeError("VRM.secondaryAnimation.colliderGroups must be an array", src)
    for gi, g in enumerate(groups):
        w = f"VRM.secondaryAnimation.colliderGroups[{gi}]"
        if not isinstance(g, dict):
            raise KisekaeError(f"{w} must be an object", src)
        node = _node(g.get("node"), n_nodes, f"{w}.node", src)
        cl = g.get("colliders", [])
        if not isinstance(cl, list):
            raise KisekaeError(f"{w}.colliders must be an array", src)
        for ci, c in enumerate(cl):
            cw = f"{w}.colliders[{ci}]"
            if not isinstance(c, dict):
                raise KisekaeError(f"{cw} must be an object", src)
            off = _vec(c.get("offset", {}), f"{cw}.offset", src, xyz=True) * np.array([1.0, 1.0, -1.0])
            data.colliders.append((node, off, None, _radius(c.get("radius", 0.0), f"{cw}.radius", src)))
    return data


def colliders_to_rig(vrm: VrmData, bone_of_node: dict, node_world: np.ndarray, skeleton, src, parents=None):
    """A :class:`CapsuleRig` in bone space from VRM colliders.

    Each collider is attached to its node's bone, or the nearest ancestor bone (``bone_of_node``
    maps glTF nodes that are bones). Offsets go node-local -> world (rest ``node_world``) -> the
    bone's rest frame; radii scale with the node's world scale. Spheres become capsules with a
    1e-5 m segment along +Y; zero radii are skipped.
    """

    rest_inv = np.linalg.inv(skeleton.rest.astype(np.float64))
    bone, p0, p1, r = [], [], [], []
    for node, off, tail, radius in vrm.colliders:
        if radius <= 0:
            continue
        b = bone_of_node.get(node)
        if b is None:
            b = _ancestor_bone(node, bone_of_node, parents, node_world)
        if b is None:
            continue
        m = rest_inv[b] @ node_world[node]
        a = m[:3, :3] @ off + m[:3, 3]
        t = m[:3, :3] @ (tail if tail is not None else off) + m[:3, 3]
        scale = float(np.cbrt(abs(np.linalg.det(node_world[node][:3, :3]))))
        if np.linalg.norm(t - a) < 1e-5:
            t = a + np.array([0.0, 1e-5, 0.0])
        bone.append(b)
        p0.append(a)
        p1.append(t)
        r.append(radius * scale)
    if not bone:
        return None
    return CapsuleRig(np.asarray(bone, np.int32), np.asarray(p0), np.asarray(p1), np.asarray(r), np.asarray(r),
                      list(skeleton.names))


def _ancestor_bone(node, bone_of_node, parents, node_world):
    """The bone of the nearest ancestor node; without parents, the bone nearest in rest position."""
    if not bone_of_node:
        return None
    if parents is not None:
        p = parents[node]
        while p >= 0:
            if int(p) in bone_of_node:
                return bone_of_node[int(p)]
            p = parents[p]
        return None
    pos = node_world[node][:3, 3]
    best = min(bone_of_node, key=lambda j: float(np.linalg.norm(node_world[j][:3, 3] - pos)))
    return bone_of_node[best]


def springbone_extension(rig) -> dict:
    """``VRMC_springBone`` 1.0 extension object with the rig's capsules (node i = bone i)."""
    cols = rig.to_vrm_colliders()
    return {"specVersion": "1.0", "colliders": cols,
            "colliderGroups": [{"name": "kisekae", "colliders": list(range(len(cols)))}]}


def vrm1_extension(humanoid: dict, n_bones: int, name: str) -> dict:
    """``VRMC_vrm`` 1.0 extension object with a humanoid mapping (VRM bone -> bone index = node index)."""
    bones = {}
    for k, b in humanoid.items():
        if not 0 <= int(b) < n_bones:
            raise KisekaeError(f"humanoid bone {k!r} -> {b} is out of range", "humanoid")
        bones[str(k)] = {"node": int(b)}
    return {"specVersion": "1.0",
            "meta": {"name": str(name), "version": "1", "authors": ["kisekae export"],
                     "licenseUrl": "https://vrm.dev/licenses/1.0/", "avatarPermission": "onlyAuthor",
                     "commercialUsage": "personalNonProfit", "creditNotation": "required",
                     "allowRedistribution": False, "modification": "prohibited"},
            "humanoid": {"humanBones": bones}}


def humanoid_bones(vrm: VrmData, bone_of_node: dict) -> dict:
    """VRM humanoid bone -> our bone index, for the mapped nodes that are skeleton bones."""
    return {k: bone_of_node[n] for k, n in vrm.humanoid.items() if n in bone_of_node}

"""Named test poses and JSON pose files.

Named poses are rotations about world axes of the rest pose (glTF frame), applied to bones in
parent-to-child order so that posed parents carry their children along. They are given for the
``game_engine`` bone names; rigs with other names (``cmu_mb``) are reached through
:data:`BONE_ALIASES`.

Pose file format (JSON), one entry per bone::

    {"thigh_l": {"world_axis": [1, 0, 0], "degrees": -90},
     "calf_l":  {"euler_xyz": [1.2, 0, 0]},          # radians, bone-local, Blender XYZ
     "_translation": [0, -0.3, 0]}                     # optional root offset, metres
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import KisekaeError
from .pose import Pose, euler_xyz_matrix
from .skeleton import Skeleton

X = (1.0, 0.0, 0.0)
Y = (0.0, 1.0, 0.0)
Z = (0.0, 0.0, 1.0)

#: name -> list of (bone, world axis, degrees). ``stand``, ``leg_raise`` and ``crouch`` are the
#: seed note's verification poses; the others widen coverage (knees, sitting, arms).
NAMED_POSES: dict = {
    "stand": [],
    "leg_raise": [("thigh_l", X, -90.0)],
    "crouch": [
        ("thigh_l", X, -110.0), ("thigh_r", X, -110.0),
        ("calf_l", X, 130.0), ("calf_r", X, 130.0),
        ("foot_l", X, -20.0), ("foot_r", X, -20.0),
    ],
    "knee_bend": [("calf_l", X, 90.0), ("calf_r", X, 90.0)],
    "sit": [("thigh_l", X, -90.0), ("thigh_r", X, -90.0), ("calf_l", X, 90.0), ("calf_r", X, 90.0)],
    "lunge": [("thigh_l", X, -70.0), ("calf_l", X, 80.0), ("thigh_r", X, 30.0), ("calf_r", X, 30.0)],
    "arms_up": [("upperarm_l", Z, 80.0), ("upperarm_r", Z, -80.0)],
    "arms_forward": [("upperarm_l", Y, -60.0), ("upperarm_r", Y, 60.0),
                     ("upperarm_l", X, -70.0), ("upperarm_r", X, -70.0)],
    "twist": [("spine_02", Y, 30.0), ("spine_03", Y, 15.0)],
}

#: The seed note's verification matrix.
VERIFICATION_POSES = ("stand", "leg_raise", "crouch")

#: game_engine bone name -> names of the same bone in other rigs.
BONE_ALIASES = {
    "thigh_l": ["LeftUpLeg"], "thigh_r": ["RightUpLeg"],
    "calf_l": ["LeftLeg"], "calf_r": ["RightLeg"],
    "foot_l": ["LeftFoot"], "foot_r": ["RightFoot"],
    "upperarm_l": ["LeftArm"], "upperarm_r": ["RightArm"],
    "lowerarm_l": ["LeftForeArm"], "lowerarm_r": ["RightForeArm"],
    "spine_01": ["LowerBack"], "spine_02": ["Spine"], "spine_03": ["Spine1"],
    "pelvis": ["Hips"], "head": ["Head"], "neck_01": ["Neck"],
}


#: game_engine bone name -> VRM humanoid bone name (used for VRM avatars and recognised rigs).
HUMANOID = {
    "pelvis": "hips", "spine_01": "spine", "spine_02": "chest", "spine_03": "upperChest", "neck_01": "neck",
    "head": "head", "clavicle_l": "leftShoulder", "clavicle_r": "rightShoulder", "upperarm_l": "leftUpperArm",
    "upperarm_r": "rightUpperArm", "lowerarm_l": "leftLowerArm", "lowerarm_r": "rightLowerArm",
    "hand_l": "leftHand", "hand_r": "rightHand", "thigh_l": "leftUpperLeg", "thigh_r": "rightUpperLeg",
    "calf_l": "leftLowerLeg", "calf_r": "rightLowerLeg", "foot_l": "leftFoot", "foot_r": "rightFoot",
}


def humanoid_map(skeleton: Skeleton) -> dict:
    """VRM humanoid bone name -> bone index: the skeleton's own (VRM files) or guessed from its names."""
    own = getattr(skeleton, "humanoid", None)
    if own:
        return own
    from ..io.vrm import guess_humanoid

    return guess_humanoid(skeleton.names)


def resolve_bone(skeleton: Skeleton, name: str, source: str) -> int:
    """Index of ``name`` in ``skeleton``: the name itself, a :data:`BONE_ALIASES` alias, then the
    humanoid bone it stands for (:data:`HUMANOID`) through the skeleton's humanoid mapping."""
    if name in skeleton.index:
        return skeleton.index[name]
    for alias in BONE_ALIASES.get(name, []):
        if alias in skeleton.index:
            return skeleton.index[alias]
    vrm_name = HUMANOID.get(name, name)
    mapping = humanoid_map(skeleton)
    if vrm_name in mapping:
        return int(mapping[vrm_name])
    return skeleton.bone(name, source)


def named_pose(skeleton: Skeleton, name: str) -> Pose:
    """One of :data:`NAMED_POSES` on ``skeleton``."""
    if name not in NAMED_POSES:
        raise KisekaeError(f"unknown pose {name!r}; named poses are {', '.join(NAMED_POSES)}", "--pose")
    pose = Pose.rest(skeleton, name)
    for bone, axis, degrees in NAMED_POSES[name]:
        pose.rotate_world(skeleton, resolve_bone(skeleton, bone, f"pose {name}"), axis, degrees)
    return pose


def pose_from_dict(skeleton: Skeleton, spec: dict, name: str = "pose", source: str = "pose") -> Pose:
    """Build a :class:`Pose` from the pose-file mapping (see module docstring)."""
    if not isinstance(spec, dict):
        raise KisekaeError("a pose file must hold a JSON object mapping bone names to rotations", source)
    pose = Pose.rest(skeleton, name)
    for bone, entry in spec.items():
        if bone == "_translation":
            t = np.asarray(entry, dtype=float)
            if t.shape != (3,) or not np.all(np.isfinite(t)):
                raise KisekaeError("_translation must be three finite numbers (metres)", source)
            pose.translation = t
            continue
        j = resolve_bone(skeleton, bone, source)
        if not isinstance(entry, dict):
            raise KisekaeError(f"bone {bone!r}: expected an object with world_axis/degrees or euler_xyz", source)
        try:
            if "euler_xyz" in entry:
                e = np.asarray(entry["euler_xyz"], dtype=float)
                if e.shape != (3,) or not np.all(np.isfinite(e)):
                    raise ValueError("euler_xyz must be three finite numbers (radians)")
                pose.rotations[j] = euler_xyz_matrix(*e) @ pose.rotations[j]
            elif "world_axis" in entry and "degrees" in entry:
                axis = np.asarray(entry["world_axis"], dtype=float)
                deg = float(entry["degrees"])
                if axis.shape != (3,) or not np.all(np.isfinite(axis)) or not np.isfinite(deg) or not np.any(axis):
                    raise ValueError("world_axis must be three finite numbers, not all zero, and degrees finite")
                pose.rotate_world(skeleton, j, axis, deg, source)
            else:
                raise ValueError("expected keys world_axis and degrees, or euler_xyz")
        except (TypeError, ValueError) as exc:
            raise KisekaeError(f"bone {bone!r}: {exc}", source) from None
    return pose


def load_pose_file(skeleton: Skeleton, path) -> Pose:
    """Read a JSON pose file (see module docstring)."""
    path = Path(path)
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KisekaeError("file not found", path) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KisekaeError(f"not valid JSON: {exc}", path) from None
    return pose_from_dict(skeleton, spec, name=path.stem, source=str(path))

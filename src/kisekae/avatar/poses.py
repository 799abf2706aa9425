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

from pathlib import Path

import numpy as np

from ..errors import KisekaeError, quote_name
from ..jsonfile import read_json
from .humanoid import guess_humanoid
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
    return guess_humanoid(skeleton.names)


def bone_chain(parents, top: int, bottom: int) -> list:
    """Bone ids from ``top`` up through its parents to ``bottom``, both included; empty when ``bottom`` is not
    ``top`` or one of its ancestors."""
    chain, b = [], int(top)
    while b >= 0:
        chain.append(b)
        if b == bottom:
            return chain
        b = int(parents[b])
    return []


def resolve_bone(skeleton: Skeleton, name: str, source: str) -> int:
    """Index of ``name`` in ``skeleton``: the name itself, a :data:`BONE_ALIASES` alias, then the
    humanoid bone it stands for (:data:`HUMANOID`) through the skeleton's humanoid mapping.

    An unknown name raises a :class:`KisekaeError` with the closest names of this skeleton and,
    when another built-in rig has the name (or close ones), that rig (see :func:`unknown_bone`).
    """
    if name in skeleton.index:
        return skeleton.index[name]
    for alias in BONE_ALIASES.get(name, []):
        if alias in skeleton.index:
            return skeleton.index[alias]
    vrm_name = HUMANOID.get(name, name)
    mapping = humanoid_map(skeleton)
    if vrm_name in mapping:
        return int(mapping[vrm_name])
    raise KisekaeError(unknown_bone(skeleton, name), source)


def unknown_bone(skeleton: Skeleton, name: str) -> str:
    """The message for a bone name ``skeleton`` lacks: its closest names there and, when
    ``skeleton`` is a built-in rig, the other built-in rig that has the name itself (with this
    skeleton's name for the same bone, when known) or close ones, so a pose written for ``cmu_mb``
    says so on ``game_engine``."""
    import difflib

    from .builtin import RIGS, rig_bone_names

    shown = quote_name(name)
    parts = [f"unknown bone {shown} on this rig"]
    if not isinstance(name, str):
        return parts[0]
    close = difflib.get_close_matches(name, skeleton.names, n=3)
    if close:
        parts.append(f"closest here: {', '.join(close)}")
    ours = {alias: ge for ge, aliases in BONE_ALIASES.items() for alias in aliases}
    rigs = {rig: rig_bone_names(rig) for rig in RIGS}
    if list(skeleton.names) not in rigs.values():
        return "; ".join(parts)  # not the built-in avatar: --rig would not help
    for rig, names in rigs.items():
        if names == list(skeleton.names):
            continue
        if name in names:
            same = ours.get(name) if ours.get(name) in skeleton.index else None
            parts.append(f"the built-in {rig} rig has {shown} (use --rig {rig}"
                         + (f", or name it {same!r} on this rig)" if same else ")"))
        else:
            other = difflib.get_close_matches(name, names, n=3)
            if other:
                parts.append(f"closest on the built-in {rig} rig: {', '.join(other)}")
    return "; ".join(parts)


def named_pose(skeleton: Skeleton, name: str) -> Pose:
    """One of :data:`NAMED_POSES` on ``skeleton``."""
    if name not in NAMED_POSES:
        raise KisekaeError(f"unknown pose {name!r}; named poses are {', '.join(NAMED_POSES)}", "pose")
    pose = Pose.rest(skeleton, name)
    for bone, axis, degrees in NAMED_POSES[name]:
        pose.rotate_world(skeleton, resolve_bone(skeleton, bone, f"pose {name}"), axis, degrees)
    return pose


#: Range of motion sampled by :func:`range_of_motion_poses`: (bone, world axis of the rest pose, lowest and
#: highest degrees, measured from), applied in this order, each drawn uniformly and independently. ``"down"``
#: angles are the bone's elevation about the axis measured from hanging straight down (so an A-pose and a
#: T-pose rig get the same range of arm directions: the rest elevation is subtracted); ``"rest"`` angles turn
#: the bone from its rest orientation. The limits follow the usual clinical ranges from standing (hip flexion
#: to 125°, extension 35°, abduction 40°; knee flexion to 145°; ankle ±30°; trunk ±25°; arms from hanging at
#: the side, slightly across the body, to raised 120°, forward 80° and back 40°; elbow flexion to 130°), with
#: +X the body's left and +Z its front, as the named poses.
RANGE_OF_MOTION = (
    ("thigh_l", X, -125.0, 35.0, "down"), ("thigh_l", Z, -5.0, 45.0, "down"), ("thigh_l", Y, -25.0, 25.0, "rest"),
    ("thigh_r", X, -125.0, 35.0, "down"), ("thigh_r", Z, -45.0, 5.0, "down"), ("thigh_r", Y, -25.0, 25.0, "rest"),
    ("calf_l", X, 0.0, 145.0, "rest"), ("calf_r", X, 0.0, 145.0, "rest"),
    ("foot_l", X, -30.0, 30.0, "rest"), ("foot_r", X, -30.0, 30.0, "rest"),
    ("spine_01", X, -25.0, 25.0, "rest"), ("spine_02", Y, -25.0, 25.0, "rest"), ("spine_03", Z, -15.0, 15.0, "rest"),
    ("upperarm_l", Z, -5.0, 120.0, "down"), ("upperarm_r", Z, -120.0, 5.0, "down"),
    ("clavicle_l", Z, -10.0, 20.0, "rest"), ("clavicle_r", Z, -20.0, 10.0, "rest"),
    ("upperarm_l", X, -80.0, 40.0, "rest"), ("upperarm_r", X, -80.0, 40.0, "rest"),
    ("lowerarm_l", Y, -130.0, 0.0, "rest"), ("lowerarm_r", Y, 0.0, 130.0, "rest"),
)

#: Arms within reach of the torso, as walking and standing clips hold them: each upper arm from 8° across the body
#: to 25° out from hanging, swung 50° forward to 40° back, with the clavicles and elbows over their whole range and
#: the rest of the body at rest. :data:`RANGE_OF_MOTION` draws the arm's elevation over 125°, so an arm that hangs
#: against the chest, where skinning buries it, is a small share of its draws; the body's correctives add these
#: (:func:`kisekae.avatar.correctives.training_poses`). Legs and spine stay at rest, so their correctives' features
#: are 0 in these poses and the fit of a vertex that only they move is unchanged.
ARMS_AT_SIDES = (
    ("upperarm_l", Z, -8.0, 25.0, "down"), ("upperarm_r", Z, -25.0, 8.0, "down"),
    ("clavicle_l", Z, -10.0, 20.0, "rest"), ("clavicle_r", Z, -20.0, 10.0, "rest"),
    ("upperarm_l", X, -50.0, 40.0, "rest"), ("upperarm_r", X, -50.0, 40.0, "rest"),
    ("lowerarm_l", Y, -130.0, 0.0, "rest"), ("lowerarm_r", Y, 0.0, 130.0, "rest"),
)


def rest_elevation(skeleton: Skeleton, bone: int, axis) -> float:
    """Degrees by which ``bone`` (head to its first child's head) is turned about the world ``axis`` from
    pointing straight down (−Y), at rest; 0 for a bone without a child or lying along the axis."""
    kids = np.flatnonzero(np.asarray(skeleton.parents) == bone)
    if not len(kids):
        return 0.0
    d = skeleton.rest[kids[0]][:3, 3] - skeleton.rest[bone][:3, 3]
    a = np.asarray(axis, dtype=np.float64)
    d = d - (d @ a) * a
    down = np.array([0.0, -1.0, 0.0])
    down = down - (down @ a) * a
    if np.linalg.norm(d) < 1e-9 or np.linalg.norm(down) < 1e-9:
        return 0.0
    return float(np.degrees(np.arctan2(np.cross(down, d) @ a, down @ d)))


def range_of_motion_poses(skeleton: Skeleton, n: int, seed: int = 0, ranges=RANGE_OF_MOTION) -> list:
    """``n`` poses drawn from ``ranges`` (default :data:`RANGE_OF_MOTION`; also :data:`ARMS_AT_SIDES`), reproducible
    for a ``seed``.

    For bakes that must cover what a body can do rather than a list of poses (the garment's surface
    candidates, :func:`kisekae.fit.surface.bake_surface_candidates`). Bones the skeleton lacks (through
    :func:`resolve_bone`'s aliases and humanoid mapping) are skipped; their draws are still made, so the
    same seed gives the same angles on every rig.
    """
    if not (isinstance(n, (int, np.integer)) and n >= 0):
        raise KisekaeError(f"must be a whole number of poses, got {n!r}", "poses")
    rng = np.random.default_rng(seed)
    bones = []
    for bone, axis, lo, hi, frame in ranges:
        try:
            b = resolve_bone(skeleton, bone, "range of motion")
        except KisekaeError:
            bones.append((None, axis, lo, hi))
            continue
        shift = rest_elevation(skeleton, b, axis) if frame == "down" else 0.0
        bones.append((b, axis, lo - shift, hi - shift))
    poses = []
    for k in range(int(n)):
        pose = Pose.rest(skeleton, f"rom_{k}")
        for bone, axis, lo, hi in bones:
            degrees = rng.uniform(lo, hi)
            if bone is not None:
                pose.rotate_world(skeleton, bone, axis, degrees)
        poses.append(pose)
    return poses


#: Keys of one bone's entry in a pose file.
ENTRY_KEYS = ("euler_xyz", "world_axis", "degrees")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and bool(np.isfinite(value))


def _three_numbers(value, what: str) -> np.ndarray:
    if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != 3 or not all(_number(v) for v in value):
        raise ValueError(f"{what} must be a list of three finite numbers")
    return np.asarray(value, dtype=float)


def pose_from_dict(skeleton: Skeleton, spec: dict, name: str = "pose", source: str = "pose") -> Pose:
    """Build a :class:`Pose` from the pose-file mapping (see module docstring).

    Each bone entry holds either ``euler_xyz`` (three numbers, radians) or ``world_axis`` (three
    numbers, not all zero) with ``degrees`` (a number); values must be JSON numbers, not strings.
    A bone may appear once (two names of the same bone, such as ``thigh_l`` and its alias, are
    refused too).

    Raises
    ------
    KisekaeError
        Naming the bone and what is wrong: an unknown bone (with the closest names, and the
        built-in rig that has it), an unknown key, both rotation forms on one bone, a value that
        is not a number, or a bone given twice.
    """
    if not isinstance(spec, dict):
        raise KisekaeError("a pose file must hold a JSON object mapping bone names to rotations", source)
    pose = Pose.rest(skeleton, name)
    given: dict = {}
    for bone, entry in spec.items():
        shown = quote_name(bone)
        if bone == "_translation":
            try:
                pose.translation = _three_numbers(entry, "_translation")
            except ValueError:
                raise KisekaeError("_translation must be a list of three finite numbers (metres)", source) from None
            continue
        j = resolve_bone(skeleton, bone, source)
        if j in given:
            raise KisekaeError(f"bone {shown} is given twice (also as {quote_name(given[j])})", source)
        given[j] = bone
        try:
            if not isinstance(entry, dict):
                raise ValueError("expected an object with world_axis and degrees, or euler_xyz")
            unknown = [k for k in entry if k not in ENTRY_KEYS]
            if unknown:
                raise ValueError(f"{len(unknown)} unknown key(s); a bone takes {', '.join(ENTRY_KEYS)}")
            if "euler_xyz" in entry:
                if "world_axis" in entry or "degrees" in entry:
                    raise ValueError("give either euler_xyz or world_axis with degrees, not both")
                e = _three_numbers(entry["euler_xyz"], "euler_xyz (radians)")
                pose.rotations[j] = euler_xyz_matrix(*e) @ pose.rotations[j]
            elif "world_axis" in entry and "degrees" in entry:
                axis = _three_numbers(entry["world_axis"], "world_axis")
                if not np.any(axis):
                    raise ValueError("world_axis must not be all zero")
                deg = entry["degrees"]
                if not _number(deg):
                    raise ValueError("degrees must be a finite number (not a string)")
                pose.rotate_world(skeleton, j, axis, float(deg), source)
            else:
                raise ValueError("expected keys world_axis and degrees, or euler_xyz")
        except ValueError as exc:
            raise KisekaeError(f"bone {shown}: {exc}", source) from None
    return pose


def load_pose_file(skeleton: Skeleton, path) -> Pose:
    """Read a JSON pose file (see module docstring and :func:`pose_from_dict`)."""
    path = Path(path)
    spec = read_json(path)
    return pose_from_dict(skeleton, spec, name=path.stem, source=str(path))

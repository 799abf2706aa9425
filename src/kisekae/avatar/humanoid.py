"""The VRM humanoid vocabulary: required bones, known rig names, guessing a mapping from bone names.

A *humanoid mapping* is a dict ``VRM humanoid bone name -> bone index`` (``"leftUpperLeg": 12``).
VRM files carry one; for other rigs :func:`guess_humanoid` finds one from known bone names
(the built-in rigs game_engine and cmu_mb, Mixamo, and common others).
"""

from __future__ import annotations

#: VRM 1.0 humanoid bones that a model must map.
VRM1_REQUIRED = ("hips", "spine", "head", "leftUpperLeg", "leftLowerLeg", "leftFoot", "rightUpperLeg",
                 "rightLowerLeg", "rightFoot", "leftUpperArm", "leftLowerArm", "leftHand", "rightUpperArm",
                 "rightLowerArm", "rightHand")

#: VRM humanoid bone -> our bone names in the built-in rigs (game_engine, cmu_mb) and common others.
HUMANOID_NAMES = {
    "hips": ("pelvis", "Hips", "hips", "mixamorig:Hips"),
    "spine": ("spine_01", "LowerBack", "Spine", "spine", "mixamorig:Spine"),
    "chest": ("spine_02", "Spine1", "chest", "mixamorig:Spine1"),
    "upperChest": ("spine_03", "upper_chest", "mixamorig:Spine2"),
    "neck": ("neck_01", "Neck", "neck", "mixamorig:Neck"),
    "head": ("head", "Head", "mixamorig:Head"),
    "leftShoulder": ("clavicle_l", "LeftShoulder", "mixamorig:LeftShoulder"),
    "leftUpperArm": ("upperarm_l", "LeftArm", "mixamorig:LeftArm"),
    "leftLowerArm": ("lowerarm_l", "LeftForeArm", "mixamorig:LeftForeArm"),
    "leftHand": ("hand_l", "LeftHand", "mixamorig:LeftHand"),
    "rightShoulder": ("clavicle_r", "RightShoulder", "mixamorig:RightShoulder"),
    "rightUpperArm": ("upperarm_r", "RightArm", "mixamorig:RightArm"),
    "rightLowerArm": ("lowerarm_r", "RightForeArm", "mixamorig:RightForeArm"),
    "rightHand": ("hand_r", "RightHand", "mixamorig:RightHand"),
    "leftUpperLeg": ("thigh_l", "LeftUpLeg", "mixamorig:LeftUpLeg"),
    "leftLowerLeg": ("calf_l", "LeftLeg", "mixamorig:LeftLeg"),
    "leftFoot": ("foot_l", "LeftFoot", "mixamorig:LeftFoot"),
    "leftToes": ("ball_l", "LeftToeBase", "mixamorig:LeftToeBase"),
    "rightUpperLeg": ("thigh_r", "RightUpLeg", "mixamorig:RightUpLeg"),
    "rightLowerLeg": ("calf_r", "RightLeg", "mixamorig:RightLeg"),
    "rightFoot": ("foot_r", "RightFoot", "mixamorig:RightFoot"),
    "rightToes": ("ball_r", "RightToeBase", "mixamorig:RightToeBase"),
}


def guess_humanoid(bone_names) -> dict:
    """VRM humanoid mapping (VRM bone -> bone index) from known rig bone names.

    Returns ``{}`` unless every bone :data:`VRM1_REQUIRED` is found.
    """
    index = {n: i for i, n in enumerate(bone_names)}
    out = {}
    for vrm_name, candidates in HUMANOID_NAMES.items():
        for c in candidates:
            if c in index:
                out[vrm_name] = index[c]
                break
    return out if all(r in out for r in VRM1_REQUIRED) else {}

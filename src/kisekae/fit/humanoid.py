"""Capsules placed from a humanoid mapping: one tapered capsule per body segment.

A quick starting rig for any avatar whose bones map to VRM humanoid bones
(:mod:`kisekae.avatar.humanoid`); :func:`kisekae.fit.fitting.fit_capsules` fits a rig to the
skin instead.
"""

from __future__ import annotations

import numpy as np

from ..avatar.capsules import CapsuleRig
from ..errors import KisekaeError
from ..validate import as_points

#: Body segments for automatic capsules: (from humanoid bone, to humanoid bone(s) tried in order).
#: The capsule lives in the space of the first bone and runs from its head to the second's head.
BODY_SEGMENTS = (
    ("hips", ("spine",)),
    ("spine", ("chest", "upperChest", "neck")),
    ("chest", ("upperChest", "neck")),
    ("upperChest", ("neck",)),
    ("neck", ("head",)),
    ("leftUpperArm", ("leftLowerArm",)), ("leftLowerArm", ("leftHand",)),
    ("rightUpperArm", ("rightLowerArm",)), ("rightLowerArm", ("rightHand",)),
    ("leftUpperLeg", ("leftLowerLeg",)), ("leftLowerLeg", ("leftFoot",)),
    ("rightUpperLeg", ("rightLowerLeg",)), ("rightLowerLeg", ("rightFoot",)),
    ("leftFoot", ("leftToes",)), ("rightFoot", ("rightToes",)),
)


def humanoid_capsules(vertices, skin_indices, skin_weights, rest, humanoid: dict, bone_names=None,
                      percentile: float = 50.0, min_weight: float = 0.5):
    """Place one capsule per body part from a humanoid mapping.

    For each segment of :data:`BODY_SEGMENTS` whose bones are mapped, the capsule runs from the
    first bone's head to the next bone's head, in the first bone's rest space. Its radii are the
    ``percentile`` of the distances from the segment axis to the vertices dominated by that bone
    (weight >= ``min_weight``), separately for the halves near each end (tapered capsules).

    Parameters
    ----------
    vertices : (N, 3) bind-pose positions, metres
    skin_indices, skin_weights : (N, K)
    rest : (B, 4, 4) bone rest matrices
    humanoid : dict VRM bone name -> bone index
    bone_names : list of str, optional (stored in the rig)
    percentile : float in (0, 100], default 50
        50 keeps the capsule mostly inside the skin (clothes are pushed out of it).
    min_weight : float, default 0.5

    Returns
    -------
    CapsuleRig (possibly empty when no segment is mapped or no vertex belongs to it)
    """
    v = as_points(vertices, "vertices")
    idx = np.asarray(skin_indices)
    w = np.asarray(skin_weights, dtype=np.float64)
    rest = np.asarray(rest, dtype=np.float64)
    if idx.shape != w.shape or len(idx) != len(v):
        raise KisekaeError(f"skin {idx.shape}/{w.shape} does not match {len(v)} vertices", "skin")
    if not 0 < percentile <= 100:
        raise KisekaeError(f"percentile must be in (0, 100], got {percentile}", "percentile")
    heads = rest[:, :3, 3]
    dominant = np.take_along_axis(idx, np.argmax(w, axis=1)[:, None], 1)[:, 0]
    dom_w = w.max(axis=1)
    bone, p0, p1, r0, r1 = [], [], [], [], []
    for a_name, b_names in BODY_SEGMENTS:
        if a_name not in humanoid:
            continue
        b_name = next((b for b in b_names if b in humanoid), None)
        if b_name is None:
            continue
        ia, ib = int(humanoid[a_name]), int(humanoid[b_name])
        a, b = heads[ia], heads[ib]
        seg = b - a
        length = float(np.linalg.norm(seg))
        if length < 1e-3:
            continue
        sel = (dominant == ia) & (dom_w >= min_weight)
        if sel.sum() < 4:
            continue
        pts = v[sel]
        s = np.clip((pts - a) @ seg / length ** 2, 0.0, 1.0)
        d = np.linalg.norm(pts - (a + s[:, None] * seg), axis=1)
        near0, near1 = d[s < 0.5], d[s >= 0.5]
        ra = float(np.percentile(near0 if len(near0) else d, percentile))
        rb = float(np.percentile(near1 if len(near1) else d, percentile))
        ra, rb = max(ra, 1e-3), max(rb, 1e-3)
        if abs(ra - rb) >= 0.9 * length:  # keep the capsule well formed
            ra = rb = 0.5 * (ra + rb)
        inv = np.linalg.inv(rest[ia])
        bone.append(ia)
        p0.append(inv[:3, :3] @ a + inv[:3, 3])
        p1.append(inv[:3, :3] @ b + inv[:3, 3])
        r0.append(ra)
        r1.append(rb)
    return CapsuleRig(np.asarray(bone, np.int32), np.asarray(p0).reshape(-1, 3), np.asarray(p1).reshape(-1, 3),
                      np.asarray(r0), np.asarray(r1), list(bone_names or []))

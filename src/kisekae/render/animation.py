"""Pose in-betweens for smooth animated pictures: slerp of bone-local rotations, lerp of the root translation
and of the bone offsets."""

from __future__ import annotations

import numpy as np

from ..errors import KisekaeError


def slerp_rotations(a, b, t: float) -> np.ndarray:
    """Spherical interpolation between two stacks of rotation matrices.

    Parameters
    ----------
    a, b : (B,3,3) float
        Bone-local rotations (proper rotation matrices).
    t : float
        0 gives ``a``, 1 gives ``b``.

    Returns
    -------
    (B,3,3) float64
        ``a @ exp(t log(a^T b))`` per bone: the shortest-arc rotation path at constant angular speed.
    """
    from scipy.spatial.transform import Rotation

    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.shape != b.shape or a.ndim != 3 or a.shape[1:] != (3, 3):
        raise KisekaeError(f"expected two (B,3,3) stacks of the same shape, got {a.shape} and {b.shape}", "rotations")
    t = float(t)
    if not np.isfinite(t):
        raise KisekaeError(f"t must be finite, got {t!r}", "t")
    rel = Rotation.from_matrix(np.einsum("bji,bjk->bik", a, b))  # a^T b
    step = Rotation.from_rotvec(rel.as_rotvec() * t).as_matrix()
    return np.einsum("bij,bjk->bik", a, step)


def interpolate_pose(a, b, t: float, *, name: str | None = None):
    """A :class:`kisekae.avatar.Pose` between two poses of the same skeleton (slerp per bone)."""
    from ..avatar.pose import Pose

    if len(a.rotations) != len(b.rotations):
        raise KisekaeError(f"poses have {len(a.rotations)} and {len(b.rotations)} bones", "poses")
    rot = slerp_rotations(a.rotations, b.rotations, t)
    tr = (1.0 - t) * np.asarray(a.translation) + t * np.asarray(b.translation)
    off = None
    if a.offsets is not None or b.offsets is not None:
        zero = np.zeros((len(a.rotations), 3))
        oa = zero if a.offsets is None else a.offsets
        ob = zero if b.offsets is None else b.offsets
        off = (1.0 - t) * oa + t * ob
    return Pose(rot, tr, name or f"{a.name}~{b.name}@{t:.2f}", off)


def inbetween(poses, steps: int, *, loop: bool = False) -> list:
    """Insert ``steps - 1`` slerped poses between consecutive poses.

    Parameters
    ----------
    poses : sequence of Pose
        Key poses (at least 2).
    steps : int
        Frames per segment (1 = the keys only).
    loop : bool
        Also interpolate from the last key back to the first (for a looping GIF).

    Returns
    -------
    list of Pose
        ``(len(poses) - 1) * steps + 1`` poses, or ``len(poses) * steps`` with ``loop``.
    """
    poses = list(poses)
    if len(poses) < 2:
        raise KisekaeError("need at least 2 key poses", "poses")
    steps = int(steps)
    if steps < 1:
        raise KisekaeError(f"steps must be >= 1, got {steps}", "steps")
    keys = poses + [poses[0]] if loop else poses
    out = []
    for k in range(len(keys) - 1):
        for s in range(steps):
            out.append(keys[k] if s == 0 else interpolate_pose(keys[k], keys[k + 1], s / steps))
    if not loop:
        out.append(keys[-1])
    return out

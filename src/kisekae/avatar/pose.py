"""Poses: per-bone local rotations and forward kinematics.

A bone's posed world transform is ``W[j] = W[parent] @ (local_rest[j] + [0 | o[j]]) @ [L[j] | 0]``
where ``L[j]`` is the bone-local rotation (identity at rest) and ``o[j]`` an optional offset of
the bone's head in its parent's frame (zero unless the pose carries ``offsets``, e.g. a glTF
animation that translates bones). Roots additionally get a translation, in metres in the world
frame. Skinning matrices are ``W @ inv(rest)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import KisekaeError
from .skeleton import Skeleton, axis_angle_matrix

#: Grid the skinning matrices' entries are rounded to (see :meth:`Pose.skinning_matrices`).
MATRIX_GRID = 1e-9


def euler_xyz_matrix(rx: float, ry: float, rz: float) -> np.ndarray:
    """Blender's XYZ Euler mode: rotate about X, then Y, then Z (``Rz @ Ry @ Rx``), radians."""
    cx, sx, cy, sy, cz, sz = np.cos(rx), np.sin(rx), np.cos(ry), np.sin(ry), np.cos(rz), np.sin(rz)
    rxm = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    rym = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rzm = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rzm @ rym @ rxm


def world_to_local_rotation(skeleton: Skeleton, bone: int, world_rotation: np.ndarray) -> np.ndarray:
    """Local rotation ``L = R_rest^T · R_world · R_rest`` for a rotation given about world axes of the rest pose."""
    r = skeleton.rest[bone, :3, :3].astype(np.float64)
    return r.T @ np.asarray(world_rotation, dtype=np.float64) @ r


@dataclass
class Pose:
    """Local rotations of every bone, plus a root translation.

    Parameters
    ----------
    rotations : (B, 3, 3) float64 bone-local rotations
    translation : (3,) float64, metres, added to the root bones' world position
    name : str
    offsets : (B, 3) float64 or None, metres
        Added to each bone's rest head position, in its parent bone's frame (world for roots).
        None (the default) means zero: only rotations and the root translation.
    """

    rotations: np.ndarray
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    name: str = "pose"
    offsets: np.ndarray | None = None

    @classmethod
    def rest(cls, skeleton: Skeleton, name: str = "stand") -> "Pose":
        return cls(np.tile(np.eye(3), (skeleton.n_bones, 1, 1)), np.zeros(3), name)

    def __post_init__(self):
        self.rotations = np.asarray(self.rotations, dtype=np.float64)
        self.translation = np.asarray(self.translation, dtype=np.float64).reshape(3)
        if self.rotations.ndim != 3 or self.rotations.shape[1:] != (3, 3):
            raise KisekaeError(f"rotations must be (B, 3, 3), got {self.rotations.shape}", self.name)
        if not (np.all(np.isfinite(self.rotations)) and np.all(np.isfinite(self.translation))):
            raise KisekaeError("non-finite rotation or translation", self.name)
        if self.offsets is not None:
            self.offsets = np.asarray(self.offsets, dtype=np.float64)
            if self.offsets.shape != (len(self.rotations), 3):
                raise KisekaeError(f"offsets must be ({len(self.rotations)}, 3), got {self.offsets.shape}", self.name)
            if not np.all(np.isfinite(self.offsets)):
                raise KisekaeError("non-finite offset", self.name)

    def world_matrices(self, skeleton: Skeleton) -> np.ndarray:
        """(B, 4, 4) float64 posed bone-to-world transforms (forward kinematics)."""
        if len(self.rotations) != skeleton.n_bones:
            raise KisekaeError(
                f"pose has {len(self.rotations)} bones, skeleton has {skeleton.n_bones}", self.name
            )
        local = skeleton.local_rest
        out = np.empty((skeleton.n_bones, 4, 4))
        for j, p in enumerate(skeleton.parents):
            m = local[j].copy()
            m[:3, :3] = m[:3, :3] @ self.rotations[j]
            if self.offsets is not None:
                m[:3, 3] += self.offsets[j]
            if p < 0:
                m[:3, 3] += self.translation
                out[j] = m
            else:
                out[j] = out[p] @ m
        return out

    def skinning_matrices(self, skeleton: Skeleton) -> np.ndarray:
        """(B, 4, 4) float64 ``posed @ inv(rest)`` for linear blend skinning.

        The entries are rounded to :data:`MATRIX_GRID` (1e-9, so positions move by at most about a
        nanometre): matrix products and inverses differ in their last bits between NumPy versions,
        and the solvers downstream (closest faces of points deep in the body, active sets) react to
        any change, so the same pose gives the same bits under every NumPy version.
        """
        m = self.world_matrices(skeleton) @ np.linalg.inv(skeleton.rest.astype(np.float64))
        return np.round(m / MATRIX_GRID) * MATRIX_GRID

    def rotate_world(self, skeleton: Skeleton, bone: str | int, axis, degrees: float, source: str = "pose"):
        """Compose a rotation of ``degrees`` about a world axis of the rest pose onto ``bone``."""
        j = skeleton.bone(bone, source) if isinstance(bone, str) else int(bone)
        r = axis_angle_matrix(axis, np.radians(degrees))
        self.rotations[j] = world_to_local_rotation(skeleton, j, r) @ self.rotations[j]
        return self

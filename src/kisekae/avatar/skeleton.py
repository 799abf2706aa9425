"""Skeletons: bone names, parents and rest matrices, plus Blender's bone-roll convention.

Rest matrices are bone-to-world ``(B, 4, 4)`` float32 transforms acting on column vectors, in
metres and the glTF frame. A bone's local +Y axis points from its head to its tail, as in Blender.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import KisekaeError

#: Blender armature space (Z up, -Y forward) to the glTF frame (Y up, +Z forward): (x, y, z) -> (x, z, -y).
BLENDER_TO_GLTF = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def axis_angle_matrix(axis, angle: float) -> np.ndarray:
    """Rotation matrix ``(3, 3)`` for a right-handed rotation of ``angle`` radians about ``axis``."""
    a = np.asarray(axis, dtype=np.float64)
    n = np.linalg.norm(a)
    if not np.isfinite(n) or n == 0:
        raise KisekaeError(f"rotation axis must be non-zero and finite, got {a.tolist()}", "axis")
    x, y, z = a / n
    c, s = np.cos(angle), np.sin(angle)
    t = 1.0 - c
    return np.array(
        [
            [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
            [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
            [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
        ]
    )


def vec_roll_to_mat3(vector, roll: float) -> np.ndarray:
    """Blender's ``vec_roll_to_mat3``: a bone's rest orientation from its direction and roll.

    Parameters
    ----------
    vector : (3,) array
        Head-to-tail direction in Blender armature space (need not be unit length).
    roll : float, radians

    Returns
    -------
    (3, 3) float64 matrix whose columns are the bone's X, Y, Z axes; column 1 is the unit
    direction. Follows Blender (2.9x+) including its special handling of directions close to
    -Y, where the plain formula divides by ``1 + y`` ≈ 0.
    """
    v = np.asarray(vector, dtype=np.float64)
    length = np.linalg.norm(v)
    if not np.isfinite(length) or length <= 0:
        raise KisekaeError("bone has zero length or non-finite direction", "bone")
    x, y, z = v / length
    safe, critical = 6.1e-3, 2.5e-4
    theta = 1.0 + y
    theta_alt = x * x + z * z
    if theta > safe or theta_alt > critical * critical:
        if theta <= safe:
            # Close to -Y, 1 + y has lost precision; use the series expansion of sqrt instead.
            theta = theta_alt * 0.5 + theta_alt * theta_alt * 0.125
        b = np.array(
            [
                [1.0 - x * x / theta, x, -x * z / theta],
                [-x, y, -z],
                [-x * z / theta, z, 1.0 - z * z / theta],
            ]
        )
    else:
        # Straight down -Y: mirror about Z.
        b = np.diag([-1.0, -1.0, 1.0])
    return axis_angle_matrix((x, y, z), roll) @ b


def rest_from_joints(heads, tails, rolls, names, source: str = "skeleton") -> np.ndarray:
    """Rest matrices from bone heads, tails and Blender rolls (the MPFB2 / Blender convention).

    Parameters
    ----------
    heads, tails : (B, 3) float, metres in the glTF frame
    rolls : (B,) float, Blender bone roll in radians
    names : list of B bone names (for error messages)
    source : str, where the bones came from (for error messages)

    Returns
    -------
    (B, 4, 4) float64 bone-to-world transforms: translation = head, rotation =
    :func:`vec_roll_to_mat3` evaluated in Blender's armature space and brought into the glTF frame.
    """
    heads = np.asarray(heads, dtype=np.float64)
    tails = np.asarray(tails, dtype=np.float64)
    rest = np.tile(np.eye(4), (len(heads), 1, 1))
    for i, (head, tail, roll) in enumerate(zip(heads, tails, rolls)):
        direction = tail - head
        if np.linalg.norm(direction) < 1e-9:
            raise KisekaeError(f"bone {names[i]!r} has zero length (head == tail)", source)
        rest[i, :3, :3] = BLENDER_TO_GLTF @ vec_roll_to_mat3(BLENDER_TO_GLTF.T @ direction, float(roll))
        rest[i, :3, 3] = head
    return rest


@dataclass
class Skeleton:
    """Bone names, parents and world rest matrices.

    Parameters
    ----------
    names : list of str, length B
    parents : (B,) int, parent index or -1 for roots; parents come before children.
    rest : (B, 4, 4) float, bone-to-world rest transforms (metres, glTF frame).
    tails : (B, 3) float, optional tail positions (metres), for display and capsule fitting.
    """

    names: list
    parents: np.ndarray
    rest: np.ndarray
    tails: np.ndarray | None = None

    def __post_init__(self):
        self.names = [str(n) for n in self.names]
        self.parents = np.asarray(self.parents, dtype=np.int32)
        self.rest = np.ascontiguousarray(self.rest, dtype=np.float32)
        b = len(self.names)
        if len(set(self.names)) != b:
            dup = sorted({n for n in self.names if self.names.count(n) > 1})
            raise KisekaeError(f"duplicate bone names: {dup}", "skeleton")
        if self.parents.shape != (b,) or self.rest.shape != (b, 4, 4):
            raise KisekaeError(
                f"{b} names but parents {self.parents.shape} and rest {self.rest.shape}", "skeleton"
            )
        if not np.all(np.isfinite(self.rest)):
            raise KisekaeError("non-finite rest matrix", "skeleton")
        for i, p in enumerate(self.parents):
            if p >= i or p < -1:
                raise KisekaeError(
                    f"bone {self.names[i]!r} has parent index {p}; parents must precede children", "skeleton"
                )
        if self.tails is not None:
            self.tails = np.asarray(self.tails, dtype=np.float32).reshape(b, 3)

    @property
    def n_bones(self) -> int:
        return len(self.names)

    @cached_property
    def index(self) -> dict:
        """Bone name to index."""
        return {n: i for i, n in enumerate(self.names)}

    def bone(self, name: str, source: str = "bone name") -> int:
        """Index of bone ``name``, or a :class:`KisekaeError` listing close names."""
        try:
            return self.index[name]
        except KeyError:
            import difflib

            close = difflib.get_close_matches(name, self.names, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise KisekaeError(f"unknown bone {name!r}{hint}", source) from None

    @cached_property
    def local_rest(self) -> np.ndarray:
        """(B, 4, 4) rest transform of each bone relative to its parent's rest frame."""
        rest = self.rest.astype(np.float64)
        out = rest.copy()
        for i, p in enumerate(self.parents):
            if p >= 0:
                out[i] = np.linalg.inv(rest[p]) @ rest[i]
        return out

    @property
    def heads(self) -> np.ndarray:
        """(B, 3) rest head positions, metres."""
        return self.rest[:, :3, 3]

    def children(self, i: int) -> list:
        return [int(c) for c in np.nonzero(self.parents == i)[0]]

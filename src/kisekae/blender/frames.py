"""Blender's frame (+Z up) to kisekae's glTF frame (+Y up) and back, exactly.

Blender's world is right-handed with +Z up; kisekae works in glTF's frame, +Y up, facing +Z.
The change is the rotation ``(x, y, z) -> (x, z, -y)`` (the one Blender's glTF exporter uses), a
permutation with one sign flip, so it is exact in floating point and a round trip gives the same
bits back.
"""

from __future__ import annotations

import numpy as np

#: Rotation taking Blender world coordinates to kisekae (glTF) coordinates, column vectors.
BLENDER_TO_KISEKAE = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def to_kisekae(points: np.ndarray) -> np.ndarray:
    """(N, 3) Blender-frame positions or directions to kisekae's frame, same dtype."""
    p = np.asarray(points)
    return np.stack([p[:, 0], p[:, 2], -p[:, 1]], axis=1)


def to_blender(points: np.ndarray) -> np.ndarray:
    """(N, 3) kisekae-frame positions or directions to Blender's frame, same dtype."""
    p = np.asarray(points)
    return np.stack([p[:, 0], -p[:, 2], p[:, 1]], axis=1)


def matrices_to_kisekae(m: np.ndarray) -> np.ndarray:
    """(..., 3, 3) linear maps in Blender's frame to the same maps in kisekae's frame (``C M Cᵀ``)."""
    c = BLENDER_TO_KISEKAE
    return np.einsum("ij,...jk,lk->...il", c, np.asarray(m, dtype=np.float64), c)


def matrices_to_blender(m: np.ndarray) -> np.ndarray:
    """(..., 4, 4) or (..., 3, 3) kisekae-frame transforms to Blender's frame (``Cᵀ M C``)."""
    m = np.asarray(m, dtype=np.float64)
    k = m.shape[-1]
    c = np.eye(k)
    c[:3, :3] = BLENDER_TO_KISEKAE
    return np.einsum("ji,...jk,kl->...il", c, m, c)

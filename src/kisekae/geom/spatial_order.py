"""A vertex order that keeps near vertices together: the stable sort by 3-D Morton (Z-order) code.

Kernels that walk vertices in blocks (the capsule push plan of :mod:`kisekae.fit.pushout`, the part contact's broad
phase in :mod:`kisekae.avatar.part_contact`) take them in this order, so that each block is compact in space and one
bound serves all of its vertices.
"""

from __future__ import annotations

import numba
import numpy as np

from ..validate import as_points


def spatial_order(points) -> np.ndarray:
    """A vertex order that keeps near vertices together: sort by 3-D Morton (Z-order) code.

    Compute it once per mesh (rest pose or first frame) and walk the vertices in it every frame (for example
    :class:`kisekae.fit.pushout.CapsulePushPlan`): skinning moves neighbours together, so blocks of consecutive
    vertices in this order stay compact in every pose.

    Parameters
    ----------
    points : array_like (N, 3)
        Garment vertices, metres.

    Returns
    -------
    ndarray int64 (N,)
        A permutation of ``0..N-1``.
    """
    p = as_points(points, "points")
    if len(p) == 0:
        return np.zeros(0, dtype=np.int64)
    return _radix_argsort30(_morton30(p))


@numba.njit(cache=True)
def _morton30(p):
    """30-bit Morton codes of ``(N, 3)`` points: each axis quantised to 1024 cells over the largest
    extent of the bounding box (at least 1e-9 m), the bits of x, y and z interleaved."""
    n = p.shape[0]
    lo = np.empty(3)
    hi = np.empty(3)
    for axis in range(3):
        lo[axis] = p[:, axis].min()
        hi[axis] = p[:, axis].max()
    ext = max((hi - lo).max(), 1e-9)
    out = np.empty(n, np.int64)
    for i in range(n):
        code = 0
        for axis in range(3):
            x = np.int64(min((p[i, axis] - lo[axis]) / ext * 1024, 1023))
            x = (x | (x << 16)) & 0x030000FF
            x = (x | (x << 8)) & 0x0300F00F
            x = (x | (x << 4)) & 0x030C30C3
            x = (x | (x << 2)) & 0x09249249
            code |= x << axis
        out[i] = code
    return out


@numba.njit(cache=True)
def _radix_argsort30(code):
    """Stable argsort of keys in ``[0, 2**30)``: three counting-sort passes of 10 bits (least significant
    first), so equal keys keep their input order, as ``np.argsort(kind="stable")`` does, in O(N)."""
    n = code.shape[0]
    order = np.arange(n)
    tmp = np.empty(n, np.int64)
    for shift in (0, 10, 20):
        count = np.zeros(1025, np.int64)
        for i in range(n):
            count[((code[order[i]] >> shift) & 1023) + 1] += 1
        for b in range(1024):
            count[b + 1] += count[b]
        for i in range(n):
            k = (code[order[i]] >> shift) & 1023
            tmp[count[k]] = order[i]
            count[k] += 1
        order, tmp = tmp, order
    return order

"""Generalized winding number of a triangle mesh (Jacobson et al. 2013).

``w(p) = (1 / 4π) Σ_t Ω_t(p)``, with Ω_t the signed solid angle of triangle t seen from p
(Van Oosterom & Strackee). For a closed, outward-oriented mesh ``w`` is 1 inside and 0 outside;
where a posed body overlaps itself it reaches 2, so "inside" is ``w > 0.5`` and stays correct.

:func:`winding_number_numpy` is the brute-force reference. :func:`winding_number` uses the
refitted BVH with the far-field dipole approximation of Barill et al. 2018: a node seen from
farther than ``beta`` times its radius contributes ``(c − p)·N / (4π |c − p|³)``, where ``N`` is
its total area vector and ``c`` its area-weighted centre.
"""

from __future__ import annotations

import numba
import numpy as np

from .bvh import BVH, BVHState

#: Far-field acceptance ratio (distance / node radius). Larger is more accurate and slower.
BETA = 2.0


def solid_angles_numpy(points: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """Signed solid angles ``(P, F)`` of triangles ``tri (F, 3, 3)`` seen from ``points (P, 3)``."""
    a = tri[None, :, 0, :] - points[:, None, :]
    b = tri[None, :, 1, :] - points[:, None, :]
    c = tri[None, :, 2, :] - points[:, None, :]
    la, lb, lc = (np.linalg.norm(x, axis=2) for x in (a, b, c))
    det = np.einsum("pfk,pfk->pf", a, np.cross(b, c))
    den = la * lb * lc + np.einsum("pfk,pfk->pf", a, b) * lc + np.einsum("pfk,pfk->pf", b, c) * la \
        + np.einsum("pfk,pfk->pf", c, a) * lb
    return 2.0 * np.arctan2(det, den)


def winding_number_numpy(points, vertices, faces, chunk: int = 256) -> np.ndarray:
    """Exact winding numbers ``(P,)`` by brute force over all triangles (reference)."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    tri = np.asarray(vertices, dtype=np.float64)[np.asarray(faces)]
    out = np.empty(len(p))
    for s in range(0, len(p), chunk):
        out[s:s + chunk] = solid_angles_numpy(p[s:s + chunk], tri).sum(axis=1) / (4.0 * np.pi)
    return out


@numba.njit(cache=True, inline="always")
def _solid_angle(px, py, pz, tri, t):
    ax = tri[t, 0, 0] - px
    ay = tri[t, 0, 1] - py
    az = tri[t, 0, 2] - pz
    bx = tri[t, 1, 0] - px
    by = tri[t, 1, 1] - py
    bz = tri[t, 1, 2] - pz
    cx = tri[t, 2, 0] - px
    cy = tri[t, 2, 1] - py
    cz = tri[t, 2, 2] - pz
    la = np.sqrt(ax * ax + ay * ay + az * az)
    lb = np.sqrt(bx * bx + by * by + bz * bz)
    lc = np.sqrt(cx * cx + cy * cy + cz * cz)
    det = ax * (by * cz - bz * cy) + ay * (bz * cx - bx * cz) + az * (bx * cy - by * cx)
    den = la * lb * lc + (ax * bx + ay * by + az * bz) * lc + (bx * cx + by * cy + bz * cz) * la \
        + (cx * ax + cy * ay + cz * az) * lb
    return 2.0 * np.arctan2(det, den)


@numba.njit(cache=True)
def _winding(points, left, right, start, count, nrm, cen, rad, tri, beta, out):
    stack = np.empty(128, np.int32)
    for i in range(len(points)):
        px = points[i, 0]
        py = points[i, 1]
        pz = points[i, 2]
        total = 0.0
        top = 0
        stack[0] = 0
        top = 1
        while top > 0:
            top -= 1
            node = stack[top]
            dx = cen[node, 0] - px
            dy = cen[node, 1] - py
            dz = cen[node, 2] - pz
            d2 = dx * dx + dy * dy + dz * dz
            r = beta * rad[node]
            if d2 > r * r:
                d = np.sqrt(d2)
                total += (dx * nrm[node, 0] + dy * nrm[node, 1] + dz * nrm[node, 2]) / (d2 * d)
            elif left[node] < 0:
                for t in range(start[node], start[node] + count[node]):
                    total += _solid_angle(px, py, pz, tri, t)
            else:
                stack[top] = left[node]
                stack[top + 1] = right[node]
                top += 2
        out[i] = total / (4.0 * np.pi)


def winding_number(points, bvh: BVH, state: BVHState, beta: float = BETA) -> np.ndarray:
    """Winding numbers ``(P,)`` of ``points (P, 3)`` against a refitted BVH (fast path)."""
    p = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    out = np.empty(len(p))
    _winding(p, bvh.left, bvh.right, bvh.start, bvh.count, state.normal, state.center, state.radius,
             state.tri, float(beta), out)
    return out

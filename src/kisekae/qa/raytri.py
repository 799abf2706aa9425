"""Ray-triangle intersection (Möller–Trumbore), the one kernel every caster and crossing test uses."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
def ray_triangle_tuv(ox, oy, oz, dx, dy, dz, ax, ay, az, bx, by, bz, cx, cy, cz, rel_eps):
    """Ray ``o + t·d`` against triangle abc: ``(t, u, v)`` with the hit at ``a + u·(b − a) + v·(c − a)``.

    Returns ``t = inf`` when the ray is parallel to the triangle or the triangle is degenerate:
    ``|det| <= rel_eps · |e1|₁ |e2|₁ |d|₁`` (a scale-free threshold; 0 means only exact zero).
    The caller checks ``u``, ``v`` and ``t`` against its own ranges and tolerances.
    """
    e1x, e1y, e1z = bx - ax, by - ay, bz - az
    e2x, e2y, e2z = cx - ax, cy - ay, cz - az
    px = dy * e2z - dz * e2y
    py = dz * e2x - dx * e2z
    pz = dx * e2y - dy * e2x
    det = e1x * px + e1y * py + e1z * pz
    scale = (abs(e1x) + abs(e1y) + abs(e1z)) * (abs(e2x) + abs(e2y) + abs(e2z)) * (abs(dx) + abs(dy) + abs(dz))
    if abs(det) <= rel_eps * scale or det == 0.0:
        return np.inf, 0.0, 0.0
    inv = 1.0 / det
    tx, ty, tz = ox - ax, oy - ay, oz - az
    u = (tx * px + ty * py + tz * pz) * inv
    qx = ty * e1z - tz * e1y
    qy = tz * e1x - tx * e1z
    qz = tx * e1y - ty * e1x
    v = (dx * qx + dy * qy + dz * qz) * inv
    t = (e2x * qx + e2y * qy + e2z * qz) * inv
    return t, u, v

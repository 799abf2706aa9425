"""Signed distance of a posed capsule field, with analytic gradient.

Everything here works on **world-space** capsules ``(a, b, ra, rb)`` (see
:func:`kisekae.avatar.capsules.transform_capsules`). Distances are in metres, negative inside.

Reference formulas (these are the spec the HLSL core ports)
-----------------------------------------------------------
One tapered capsule ("round cone", the convex hull of the spheres ``(a, ra)`` and ``(b, rb)``):

* ``L = |b - a|``, ``u = (b - a) / L``, ``s = (ra - rb) / L`` (sine of the side's tilt),
  ``c = sqrt(1 - s^2)``.
* For a point ``p``: ``x = (p - a) . u`` (axial), ``w = p - a - x u``, ``y = |w|`` (radial),
  ``e = w / y`` (any unit vector perpendicular to ``u`` when ``y = 0``).
* ``t = x c - y s`` selects the closest feature:

  - ``t < 0``: sphere ``a``: ``d = |p - a| - ra``, ``grad = (p - a) / |p - a|``;
  - ``t > L c``: sphere ``b``: ``d = |p - b| - rb``, ``grad = (p - b) / |p - b|``;
  - otherwise the cone side: ``d = x s + y c - ra``, ``grad = s u + c e``.

This is the exact Euclidean signed distance of the round cone, inside and outside, and its
gradient has unit length everywhere except on the axis and at sphere centres, where a fixed
choice is made.

Union of capsules: hard ``min`` by default. With a smooth-union width ``k > 0`` the field is a
polynomial smooth minimum folded over the capsules that lie within ``k`` of the nearest one:
start with ``f = d_min``, ``G = grad_min``; for every other capsule ``i`` in index order with
``d_i < d_min + k``: ``h = max(0, 1 - (d_i - f) / k)``, ``G = (1 - h/2) G + (h/2) grad_i``,
``f = f - k h^2 / 4``; finally ``f = max(f, d_min - k/2)`` (when the clamp is active ``G =
grad_min``). For two capsules this is the classic quadratic smooth minimum; it is continuous, its
gradient is continuous except where three or more capsules are within ``k`` of each other, and it
never lies more than ``k/2`` below the hard minimum. The clamp makes culling exact: a capsule
farther than ``margin + 1.5 k`` from a point cannot change whether the point is within
``margin`` of the field.
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import KisekaeError
from ..validate import as_points

_TINY = 1e-12


def _check_world_capsules(a, b, ra, rb):
    a = as_points(a, "capsule a")
    b = as_points(b, "capsule b")
    ra = np.ascontiguousarray(ra, dtype=np.float64).reshape(-1)
    rb = np.ascontiguousarray(rb, dtype=np.float64).reshape(-1)
    c = a.shape[0]
    if b.shape[0] != c or ra.shape[0] != c or rb.shape[0] != c:
        raise KisekaeError(f"capsule arrays disagree in length: {c}, {b.shape[0]}, {ra.shape[0]}, {rb.shape[0]}", "capsules")
    if not (np.all(np.isfinite(ra)) and np.all(np.isfinite(rb))):
        raise KisekaeError("radii must be finite", "capsules")
    if np.any(ra <= 0) or np.any(rb <= 0):
        raise KisekaeError(f"capsule {int(np.argmax((ra <= 0) | (rb <= 0)))} has radius <= 0", "capsules")
    length = np.linalg.norm(b - a, axis=1)
    bad = np.flatnonzero(length <= np.maximum(np.abs(ra - rb), 1e-6 * 0.999))
    if bad.size:
        raise KisekaeError(
            f"capsule {int(bad[0])} is degenerate (p0 == p1 or one end sphere inside the other)", "capsules"
        )
    return a, b, ra, rb


# --------------------------------------------------------------------------- NumPy reference
def capsule_distance(points, a, b, ra, rb):
    """Signed distance and gradient of every point to every capsule (NumPy reference).

    Parameters
    ----------
    points : array_like, shape (N, 3)
        Query points, world space, metres.
    a, b : array_like, shape (C, 3)
        World-space end-sphere centres, metres.
    ra, rb : array_like, shape (C,)
        End-sphere radii, metres.

    Returns
    -------
    d : ndarray float64 (N, C)
        Signed distance, metres (negative inside the capsule).
    grad : ndarray float64 (N, C, 3)
        Unit gradient of ``d`` with respect to the point (outward direction).
    """
    p = as_points(points, "points")
    a, b, ra, rb = _check_world_capsules(a, b, ra, rb)
    ba = b - a  # (C,3)
    L = np.linalg.norm(ba, axis=1)  # (C,)
    u = ba / L[:, None]
    s = (ra - rb) / L
    c = np.sqrt(1.0 - s * s)
    pa = p[:, None, :] - a[None]  # (N,C,3)
    x = np.einsum("ncj,cj->nc", pa, u)
    w = pa - x[..., None] * u[None]
    y = np.linalg.norm(w, axis=2)
    # a unit vector perpendicular to u, used on the axis where w vanishes
    helper = np.where(np.abs(u[:, :1]) < 0.9, np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]]))
    perp = np.cross(u, helper)
    perp /= np.linalg.norm(perp, axis=1, keepdims=True)
    on_axis = y < _TINY
    e = np.where(on_axis[..., None], perp[None], w / np.maximum(y, _TINY)[..., None])
    t = x * c - y * s
    region_a = t < 0
    region_b = t > L * c
    # side
    d = x * s + y * c - ra
    g = s[None, :, None] * u[None] + c[None, :, None] * e
    # end spheres
    pb = p[:, None, :] - b[None]
    na = np.linalg.norm(pa, axis=2)
    nb = np.linalg.norm(pb, axis=2)
    ga = np.where((na < _TINY)[..., None], -u[None], pa / np.maximum(na, _TINY)[..., None])
    gb = np.where((nb < _TINY)[..., None], u[None], pb / np.maximum(nb, _TINY)[..., None])
    d = np.where(region_a, na - ra, np.where(region_b, nb - rb, d))
    g = np.where(region_a[..., None], ga, np.where(region_b[..., None], gb, g))
    return d, g


def smooth_union(d, grad, k: float = 0.0):
    """Combine per-capsule distances into the field value and gradient (NumPy reference).

    Parameters
    ----------
    d : array_like, shape (N, C)
        Per-capsule signed distances, metres.
    grad : array_like, shape (N, C, 3)
        Per-capsule gradients.
    k : float
        Smooth-union width, metres; 0 gives the hard minimum. See the module docstring for the
        exact rule.

    Returns
    -------
    f : ndarray float64 (N,)
        Field value, metres.
    G : ndarray float64 (N, 3)
        Field gradient (not renormalised; length <= 1).
    nearest : ndarray int64 (N,)
        Index of the nearest capsule.
    """
    d = np.asarray(d, dtype=np.float64)
    grad = np.asarray(grad, dtype=np.float64)
    k = float(k)
    if not np.isfinite(k) or k < 0:
        raise KisekaeError(f"must be >= 0 and finite, got {k!r}", "k")
    n = d.shape[0]
    if d.shape[1] == 0:
        return np.full(n, np.inf), np.zeros((n, 3)), np.full(n, -1, dtype=np.int64)
    nearest = np.argmin(d, axis=1)
    rows = np.arange(n)
    dmin = d[rows, nearest]
    f = dmin.copy()
    G = grad[rows, nearest].copy()
    if k > 0:
        for i in range(d.shape[1]):
            di = d[:, i]
            active = (i != nearest) & (di < dmin + k)
            h = np.where(active, np.maximum(0.0, 1.0 - (di - f) / k), 0.0)
            G = (1.0 - 0.5 * h)[:, None] * G + (0.5 * h)[:, None] * grad[:, i]
            f = f - 0.25 * k * h * h
        clamp = f < dmin - 0.5 * k
        f = np.where(clamp, dmin - 0.5 * k, f)
        G = np.where(clamp[:, None], grad[rows, nearest], G)
    return f, G, nearest


def capsule_field(points, a, b, ra, rb, k: float = 0.0):
    """Signed distance and gradient of the capsule union at each point (NumPy reference).

    Parameters
    ----------
    points : array_like (N, 3)
        World-space points, metres.
    a, b, ra, rb : arrays
        World-space capsules (``(C,3)``, ``(C,3)``, ``(C,)``, ``(C,)``).
    k : float
        Smooth-union width, metres (0 = hard minimum).

    Returns
    -------
    f : ndarray (N,)
        Field distance, metres.
    G : ndarray (N, 3)
        Gradient.
    nearest : ndarray int64 (N,)
        Nearest capsule.
    """
    d, g = capsule_distance(points, a, b, ra, rb)
    return smooth_union(d, g, k)


# --------------------------------------------------------------------------- Numba kernels
@numba.njit(cache=True, inline="always")
def _round_cone(px, py, pz, ax, ay, az, ux, uy, uz, L, s, c, ra, rb, ex, ey, ez):
    """Distance and gradient to one capsule (pre-computed axis data). Mirrors capsule_distance."""
    pax = px - ax
    pay = py - ay
    paz = pz - az
    x = pax * ux + pay * uy + paz * uz
    wx = pax - x * ux
    wy = pay - x * uy
    wz = paz - x * uz
    y = np.sqrt(wx * wx + wy * wy + wz * wz)
    if y < _TINY:
        wx, wy, wz = ex, ey, ez
    else:
        wx /= y
        wy /= y
        wz /= y
    t = x * c - y * s
    if t < 0.0:
        na = np.sqrt(pax * pax + pay * pay + paz * paz)
        if na < _TINY:
            return -ra, -ux, -uy, -uz
        return na - ra, pax / na, pay / na, paz / na
    if t > L * c:
        pbx = pax - L * ux
        pby = pay - L * uy
        pbz = paz - L * uz
        nb = np.sqrt(pbx * pbx + pby * pby + pbz * pbz)
        if nb < _TINY:
            return -rb, ux, uy, uz
        return nb - rb, pbx / nb, pby / nb, pbz / nb
    return x * s + y * c - ra, s * ux + c * wx, s * uy + c * wy, s * uz + c * wz


def prepare_capsules(a, b, ra, rb):
    """Pack world capsules for the Numba kernels.

    Returns a float64 ``(C, 14)`` array: ``a (3), u (3), L, s, c, ra, rb, e (3)`` where ``e`` is a
    fixed unit vector perpendicular to the axis.
    """
    a, b, ra, rb = _check_world_capsules(a, b, ra, rb)
    ba = b - a
    L = np.linalg.norm(ba, axis=1)
    u = ba / L[:, None]
    s = (ra - rb) / L
    c = np.sqrt(1.0 - s * s)
    helper = np.where(np.abs(u[:, :1]) < 0.9, np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]]))
    e = np.cross(u, helper)
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    return np.ascontiguousarray(np.column_stack([a, u, L, s, c, ra, rb, e]))


@numba.njit(cache=True, inline="always")
def _cone_at(caps, i, px, py, pz):
    return _round_cone(
        px, py, pz, caps[i, 0], caps[i, 1], caps[i, 2], caps[i, 3], caps[i, 4], caps[i, 5], caps[i, 6],
        caps[i, 7], caps[i, 8], caps[i, 9], caps[i, 10], caps[i, 11], caps[i, 12], caps[i, 13],
    )


@numba.njit(cache=True, inline="always")
def _cone_distance(caps, i, px, py, pz):
    """Distance only (no gradient) to one packed capsule; same value as ``_round_cone``."""
    pax = px - caps[i, 0]
    pay = py - caps[i, 1]
    paz = pz - caps[i, 2]
    x = pax * caps[i, 3] + pay * caps[i, 4] + paz * caps[i, 5]
    wx = pax - x * caps[i, 3]
    wy = pay - x * caps[i, 4]
    wz = paz - x * caps[i, 5]
    y = np.sqrt(wx * wx + wy * wy + wz * wz)  # |w|, not sqrt(|p-a|^2 - x^2): exact near the axis
    L = caps[i, 6]
    s = caps[i, 7]
    c = caps[i, 8]
    t = x * c - y * s
    if t < 0.0:
        return np.sqrt(pax * pax + pay * pay + paz * paz) - caps[i, 9]
    if t > L * c:
        pbx = pax - L * caps[i, 3]
        pby = pay - L * caps[i, 4]
        pbz = paz - L * caps[i, 5]
        return np.sqrt(pbx * pbx + pby * pby + pbz * pbz) - caps[i, 10]
    return x * s + y * c - caps[i, 9]


@numba.njit(cache=True, inline="always")
def _fold_point(px, py, pz, caps, cand, ncand, k, dbuf, grad_below):
    """Field value (and gradient where the value is below ``grad_below``) at one point.

    Uses the candidate capsules ``cand[:ncand]`` in index order; follows :func:`smooth_union`.
    Returns ``(f, gx, gy, gz, nearest)``; the gradient is zero when ``f >= grad_below``.
    """
    best = np.inf
    ib = -1
    for j in range(ncand):
        d = _cone_distance(caps, cand[j], px, py, pz)
        dbuf[j] = d
        if d < best:
            best = d
            ib = j
    if ib < 0:
        return np.inf, 0.0, 0.0, 0.0, -1
    f = best
    if k > 0.0:
        for j in range(ncand):
            if j == ib or dbuf[j] >= best + k:
                continue
            h = 1.0 - (dbuf[j] - f) / k
            if h > 0.0:
                f -= 0.25 * k * h * h
        clamped = f < best - 0.5 * k
        if clamped:
            f = best - 0.5 * k
    else:
        clamped = True
    if f >= grad_below:
        return f, 0.0, 0.0, 0.0, cand[ib]
    _, Gx, Gy, Gz = _cone_at(caps, cand[ib], px, py, pz)
    if not clamped:
        fr = best
        for j in range(ncand):
            if j == ib or dbuf[j] >= best + k:
                continue
            h = 1.0 - (dbuf[j] - fr) / k
            if h <= 0.0:
                continue
            _, gx, gy, gz = _cone_at(caps, cand[j], px, py, pz)
            Gx = (1.0 - 0.5 * h) * Gx + 0.5 * h * gx
            Gy = (1.0 - 0.5 * h) * Gy + 0.5 * h * gy
            Gz = (1.0 - 0.5 * h) * Gz + 0.5 * h * gz
            fr -= 0.25 * k * h * h
    return f, Gx, Gy, Gz, cand[ib]


@numba.njit(cache=True)
def _field_brute(points, caps, k, f_out, g_out, n_out):
    n = points.shape[0]
    C = caps.shape[0]
    cand = np.arange(C)
    dbuf = np.empty(C)
    for v in range(n):
        f, gx, gy, gz, nn = _fold_point(points[v, 0], points[v, 1], points[v, 2], caps, cand, C, k, dbuf, np.inf)
        f_out[v] = f
        g_out[v, 0] = gx
        g_out[v, 1] = gy
        g_out[v, 2] = gz
        n_out[v] = nn


def capsule_field_numba(points, a, b, ra, rb, k: float = 0.0):
    """Same result as :func:`capsule_field`, computed by a brute-force Numba loop (all capsules)."""
    p = as_points(points, "points")
    caps = prepare_capsules(a, b, ra, rb)
    n = p.shape[0]
    f = np.empty(n)
    g = np.empty((n, 3))
    nn = np.empty(n, dtype=np.int64)
    _field_brute(p, caps, float(k), f, g, nn)
    return f, g, nn


# --------------------------------------------------------------------------- culling grid
@numba.njit(cache=True)
def _cull_grid(points, caps, reach, cell_size, max_cells):
    """Uniform grid over the points' bounding box listing, per cell, the capsules within ``reach``.

    Returns ``(origin (3,), h, dims (3,), start (ncell+1,), items)``: the capsules of cell ``c``
    are ``items[start[c]:start[c+1]]`` in increasing index order. A capsule is listed in a cell
    when its signed distance at the cell centre minus the cell's half-diagonal is below
    ``reach``; the distance is 1-Lipschitz, so no point of the cell within ``reach`` of the
    capsule is missed. The cell size is ``cell_size``, enlarged when the box would need more
    than ``max_cells`` cells.
    """
    lo = np.full(3, np.inf)
    ext = np.full(3, 1e-6)
    for k in range(3):
        if points.shape[0]:
            lo[k] = points[:, k].min()
            ext[k] = max(points[:, k].max() - lo[k], 1e-6)
    h = max(cell_size, 1e-4)
    vol = (ext[0] / h + 1) * (ext[1] / h + 1) * (ext[2] / h + 1)
    if vol > max_cells:
        h *= (vol / max_cells) ** (1.0 / 3.0)
    dims = np.empty(3, dtype=np.int64)
    for j in range(3):
        dims[j] = max(1, int(np.ceil(ext[j] / h)))
    C = caps.shape[0]
    ncell = dims[0] * dims[1] * dims[2]
    # cell ranges of every capsule's inflated box
    rng = np.empty((C, 6), dtype=np.int64)
    total = 0
    for i in range(C):
        q = caps[i]
        L = q[6]
        rmax = max(q[9], q[10]) + reach
        for j in range(3):
            e0 = q[j]
            e1 = q[j] + L * q[3 + j]
            c0 = max(0, int(np.floor((min(e0, e1) - rmax - lo[j]) / h)))
            c1 = min(dims[j] - 1, int(np.floor((max(e0, e1) + rmax - lo[j]) / h)))
            rng[i, j] = c0
            rng[i, 3 + j] = c1
        if rng[i, 3] >= rng[i, 0] and rng[i, 4] >= rng[i, 1] and rng[i, 5] >= rng[i, 2]:
            total += (rng[i, 3] - rng[i, 0] + 1) * (rng[i, 4] - rng[i, 1] + 1) * (rng[i, 5] - rng[i, 2] + 1)
    pair_cell = np.empty(total, dtype=np.int64)
    pair_cap = np.empty(total, dtype=np.int64)
    npair = 0
    half_diag = 0.5 * h * np.sqrt(3.0)
    for i in range(C):
        q = caps[i]
        for ix in range(rng[i, 0], rng[i, 3] + 1):
            cx = lo[0] + (ix + 0.5) * h
            for iy in range(rng[i, 1], rng[i, 4] + 1):
                cy = lo[1] + (iy + 0.5) * h
                for iz in range(rng[i, 2], rng[i, 5] + 1):
                    cz = lo[2] + (iz + 0.5) * h
                    d, _, _, _ = _round_cone(cx, cy, cz, q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8], q[9], q[10], q[11], q[12], q[13])
                    if d - half_diag < reach:
                        pair_cell[npair] = (ix * dims[1] + iy) * dims[2] + iz
                        pair_cap[npair] = i
                        npair += 1
    # stable counting sort by cell keeps capsule order inside each cell
    start = np.zeros(ncell + 1, dtype=np.int64)
    for j in range(npair):
        start[pair_cell[j] + 1] += 1
    for c in range(ncell):
        start[c + 1] += start[c]
    fill = start[:-1].copy()
    items = np.empty(max(npair, 1), dtype=np.int64)
    for j in range(npair):
        c = pair_cell[j]
        items[fill[c]] = pair_cap[j]
        fill[c] += 1
    return lo, h, dims, start, items


@numba.njit(cache=True, inline="always")
def _cell_of(px, py, pz, lo, h, dims):
    ix = min(dims[0] - 1, max(0, int((px - lo[0]) / h)))
    iy = min(dims[1] - 1, max(0, int((py - lo[1]) / h)))
    iz = min(dims[2] - 1, max(0, int((pz - lo[2]) / h)))
    return (ix * dims[1] + iy) * dims[2] + iz


@numba.njit(cache=True)
def _field_culled(points, caps, k, reach, cell_size, max_cells, f_out, g_out, n_out):
    lo, h, dims, start, items = _cull_grid(points, caps, reach, cell_size, max_cells)
    C = caps.shape[0]
    dbuf = np.empty(max(C, 1))
    for v in range(points.shape[0]):
        px, py, pz = points[v, 0], points[v, 1], points[v, 2]
        cell = _cell_of(px, py, pz, lo, h, dims)
        s0 = start[cell]
        nc = start[cell + 1] - s0
        f, gx, gy, gz, nn = _fold_point(px, py, pz, caps, items[s0:s0 + nc], nc, k, dbuf, np.inf)
        f_out[v] = f
        g_out[v, 0] = gx
        g_out[v, 1] = gy
        g_out[v, 2] = gz
        n_out[v] = nn


#: Default culling-grid cell size, metres.
CELL_SIZE = 0.025
#: Default cap on the number of culling-grid cells.
MAX_CELLS = 1 << 18


def capsule_field_culled(points, a, b, ra, rb, k: float = 0.0, reach: float = 0.01, cell_size: float = CELL_SIZE, max_cells: int = MAX_CELLS):
    """Capsule field near the surface only, via a culling grid (Numba).

    Equal to :func:`capsule_field` at every point whose field value is below ``reach``; points
    farther than ``reach + 1.5 k`` from every capsule get ``f = inf`` (no capsule nearby).

    Parameters
    ----------
    points : array_like (N, 3)
        World points, metres.
    a, b, ra, rb : arrays
        World capsules.
    k : float
        Smooth-union width, metres.
    reach : float
        Distance of interest, metres (the push-out margin).
    cell_size : float
        Culling-grid cell edge, metres (enlarged if the grid would exceed ``max_cells``).
    max_cells : int
        Upper bound on grid cells.

    Returns
    -------
    f, G, nearest : as :func:`capsule_field`; ``nearest = -1`` where ``f = inf``.
    """
    p = as_points(points, "points")
    caps = prepare_capsules(a, b, ra, rb)
    n = p.shape[0]
    f = np.empty(n)
    g = np.empty((n, 3))
    nn = np.empty(n, dtype=np.int64)
    if n:
        _field_culled(p, caps, float(k), float(reach) + 1.5 * float(k), float(cell_size), int(max_cells), f, g, nn)
    return f, g, nn

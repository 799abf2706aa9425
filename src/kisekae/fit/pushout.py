"""Push garment vertices out of the body: the push law, the capsule solver, smoothing, normals.

The push law (per vertex; this is what the HLSL core ports)
-----------------------------------------------------------
Inputs: the field distance ``d`` (metres, negative inside), the outward unit direction ``n``,
and the parameters ``margin``, ``stiffness``, ``max_push``, ``skirt_bias`` plus the per-vertex
masks ``tightness`` and ``softness`` (0..1).

* Vertices with ``d >= margin`` do not move.
* Effective stiffness ``s = stiffness * (1 - 0.5 * tightness)``: tight fabric hugs the skin
  (its gap is halved at tightness 1); the skin shows the tightness through the pressure map.
* Target gap ``g = s * margin``. A penetrating vertex (``d < 0``) moves to ``g`` outside:
  ``push = g - d`` - the penetration is always resolved, whatever ``stiffness`` is.
* In the contact band ``0 <= d < margin`` the push fades to zero at ``margin``:
  ``push = g * phi(1 - d / margin)`` with ``phi(x) = (1 - softness) x + softness x^2``.
  Softness rounds off the onset of the push (zero slope at ``margin`` when softness = 1).
  At ``softness = 0`` this is ``push = s * (margin - d)``: it grows with ``(margin - d) * stiffness``.
* Skirt bias ``b``: ``push *= 1 + b`` and ``n <- normalise(n + b * n_h)`` where ``n_h`` is
  the horizontal part of ``n`` (legs push a skirt sideways and forwards, never up or down, and
  it bulges by ``b`` times more than a tight garment would).
* ``push = min(push, max_push)``; the vertex moves by ``push * n``.

The capsule solver evaluates ``d`` and ``n`` from the capsule field (:mod:`kisekae.fit.sdf`).
The exact-skin solver (:mod:`kisekae.fit.exact`) uses the same law against the skinned body.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..errors import KisekaeError
from ..geom.spatial_order import spatial_order
from ..validate import as_points
from .sdf import _cone_distance, _fold_point, capsule_field

UP = np.array([0.0, 1.0, 0.0])


@dataclass
class PushParams:
    """Garment push-out parameters (metres; masks 0..1).

    Attributes
    ----------
    margin : float
        Minimum clearance from the body, metres. Seed range 1-3 mm; default 2 mm.
    stiffness : float
        0..1, how firmly the garment keeps its clearance. Seed range 0.3-0.8; default 0.5.
    max_push : float
        Safety cap on any vertex displacement, metres. Seed range 2-10 cm; default 10 cm
        because the deepest clipping measured in the built-in data (crouch) is 69 mm.
    skirt_bias : float
        0..1 extra outward (horizontal) bulge for skirts. Seed range 0-0.7; default 0.
    tightness : float
        Default tightness when no mask is given, 0..1. Default 0.
    softness : float
        Default softness when no mask is given, 0..1. Default 0.
    smooth_k : float
        Smooth-union width of the capsule field, metres. Default 0 (hard minimum).
    smooth_iterations : int
        Neighbour smoothing passes over the displacement of moved vertices. Default 2.
    """

    margin: float = 0.002
    stiffness: float = 0.5
    max_push: float = 0.10
    skirt_bias: float = 0.0
    tightness: float = 0.0
    softness: float = 0.0
    smooth_k: float = 0.0
    smooth_iterations: int = 2

    def __post_init__(self):
        self.validate()

    def validate(self) -> "PushParams":
        """Raise :class:`KisekaeError` on out-of-range values (called on construction)."""
        for name in ("margin", "max_push"):
            v = float(getattr(self, name))
            if not np.isfinite(v) or v <= 0:
                raise KisekaeError(f"must be > 0 metres and finite, got {v!r}", name)
        for name in ("stiffness", "skirt_bias", "tightness", "softness"):
            v = float(getattr(self, name))
            if not np.isfinite(v) or v < 0 or v > 1:
                raise KisekaeError(f"must be in [0, 1], got {v!r}", name)
        if not np.isfinite(self.smooth_k) or self.smooth_k < 0:
            raise KisekaeError(f"must be >= 0 metres, got {self.smooth_k!r}", "smooth_k")
        if int(self.smooth_iterations) < 0:
            raise KisekaeError(f"must be >= 0, got {self.smooth_iterations!r}", "smooth_iterations")
        if self.margin > self.max_push:
            raise KisekaeError(
                f"margin ({self.margin:g} m) is greater than max_push ({self.max_push:g} m): "
                "the cap would forbid reaching the clearance",
                "margin",
            )
        return self


def resolve_mask(mask, n: int, name: str, uvs=None, default: float = 0.0) -> np.ndarray:
    """Turn a mask given per vertex or as a UV texture into per-vertex values in [0, 1].

    Parameters
    ----------
    mask : None, float, array_like (N,), or array_like (H, W) / (H, W, C)
        ``None`` or a number gives a constant mask. A ``(N,)`` array is per vertex. A 2-D (or
        3-D, first channel used) array is a texture sampled bilinearly at ``uvs`` (glTF
        convention: ``v = 0`` is the top row), values 0..1 (uint8 textures are divided by 255).
    n : int
        Number of vertices.
    name : str
        Name for error messages.
    uvs : array_like (N, 2), optional
        Texture coordinates; required for texture masks.
    default : float
        Value used when ``mask`` is None.

    Returns
    -------
    ndarray float64 (N,)
    """
    if mask is None:
        return np.full(n, float(default))
    if np.isscalar(mask):
        v = float(mask)
        if not np.isfinite(v) or v < 0 or v > 1:
            raise KisekaeError(f"must be in [0, 1], got {mask!r}", name)
        return np.full(n, v)
    m = np.asarray(mask)
    if m.ndim == 1:
        if m.shape[0] != n:
            raise KisekaeError(f"per-vertex mask has {m.shape[0]} entries, garment has {n} vertices", name)
        out = m.astype(np.float64)
    elif m.ndim in (2, 3):
        if uvs is None:
            raise KisekaeError("texture mask needs the garment's UVs", name)
        uv = np.asarray(uvs, dtype=np.float64)
        if uv.shape != (n, 2):
            raise KisekaeError(f"UVs must have shape ({n}, 2), got {uv.shape}", name)
        tex = m[..., 0] if m.ndim == 3 else m
        scale = 255.0 if tex.dtype == np.uint8 else 1.0
        tex = tex.astype(np.float64) / scale
        h, w = tex.shape
        if h < 1 or w < 1:
            raise KisekaeError("empty texture", name)
        x = np.clip((uv[:, 0] % 1.0) * w - 0.5, 0, w - 1)
        y = np.clip((uv[:, 1] % 1.0) * h - 0.5, 0, h - 1)
        x0 = np.floor(x).astype(int)
        y0 = np.floor(y).astype(int)
        x1 = np.minimum(x0 + 1, w - 1)
        y1 = np.minimum(y0 + 1, h - 1)
        fx = x - x0
        fy = y - y0
        out = (
            tex[y0, x0] * (1 - fx) * (1 - fy)
            + tex[y0, x1] * fx * (1 - fy)
            + tex[y1, x0] * (1 - fx) * fy
            + tex[y1, x1] * fx * fy
        )
    else:
        raise KisekaeError(f"expected a per-vertex (N,) array or an (H, W) texture, got shape {m.shape}", name)
    if not np.all(np.isfinite(out)):
        raise KisekaeError("non-finite value (NaN or inf)", name)
    if out.min(initial=0) < 0 or out.max(initial=0) > 1:
        raise KisekaeError(f"values must be in [0, 1], found {out.min():g}..{out.max():g}", name)
    return np.ascontiguousarray(out)


def cap_displacement(points, start, max_push):
    """Scale displacements ``points - start`` longer than ``max_push`` back onto the cap (in place).

    Parameters
    ----------
    points : (N, 3) float64 array, modified in place
    start : (N, 3) positions the displacements are measured from, metres
    max_push : float, metres

    Returns
    -------
    ``points`` (the same array).
    """
    disp = points - start
    ln = np.linalg.norm(disp, axis=1)
    over = ln > max_push
    if over.any():
        points[over] = start[over] + disp[over] * (max_push / ln[over])[:, None]
    return points


def push_amount(d, margin, stiffness, max_push, tightness=0.0, softness=0.0, skirt_bias=0.0):
    """The push law as a vectorised NumPy function (reference).

    Parameters
    ----------
    d : array_like (N,)
        Signed distance to the body (metres, negative inside).
    margin, stiffness, max_push, skirt_bias : float
        See :class:`PushParams`.
    tightness, softness : float or array_like (N,)
        Masks, 0..1.

    Returns
    -------
    ndarray float64 (N,)
        Displacement length along the (biased) outward direction, metres; 0 where ``d >= margin``.
    """
    d = np.asarray(d, dtype=np.float64)
    s = stiffness * (1.0 - 0.5 * np.asarray(tightness, dtype=np.float64))
    sig = np.asarray(softness, dtype=np.float64)
    gap = s * margin
    x = np.clip(1.0 - d / margin, 0.0, 1.0)
    band = gap * ((1.0 - sig) * x + sig * x * x)
    push = np.where(d < 0, gap - d, band)
    push = np.where(d >= margin, 0.0, push * (1.0 + skirt_bias))
    return np.minimum(push, max_push)


def bias_direction(n, skirt_bias, up=UP):
    """Skirt-biased push direction ``normalise(n + b * n_h)`` (see module docstring), ``(N, 3)``."""
    n = np.asarray(n, dtype=np.float64)
    if skirt_bias <= 0:
        return n
    up = np.asarray(up, dtype=np.float64)
    nh = n - (n @ up)[:, None] * up[None]
    m = n + skirt_bias * nh
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)


def _inputs(points, params, tightness, softness, uvs):
    p = as_points(points, "garment vertices")
    if params is None:
        params = PushParams()
    params.validate()
    n = p.shape[0]
    t = resolve_mask(tightness, n, "tightness", uvs, default=params.tightness)
    s = resolve_mask(softness, n, "softness", uvs, default=params.softness)
    return p, params, t, s


def push_out_reference(points, a, b, ra, rb, params: PushParams | None = None, tightness=None, softness=None, uvs=None, up=UP):
    """Capsule push-out, straight NumPy (reference for :func:`push_out_capsules`). No smoothing.

    Parameters
    ----------
    points : array_like (N, 3)
        Posed garment vertices, world, metres.
    a, b, ra, rb : arrays
        Posed (world) capsules, see :func:`kisekae.avatar.capsules.transform_capsules`.
    params : PushParams, optional
    tightness, softness : None, float, (N,) or texture
        Masks (see :func:`resolve_mask`).
    uvs : array_like (N, 2), optional
        Needed for texture masks.
    up : array_like (3,)
        World up, for the skirt bias.

    Returns
    -------
    new_points : ndarray float64 (N, 3)
    push : ndarray float64 (N,)
        Displacement length per vertex, metres.
    d : ndarray float64 (N,)
        Field distance before the push.
    """
    p, params, t, s = _inputs(points, params, tightness, softness, uvs)
    d, G, _ = capsule_field(p, a, b, ra, rb, params.smooth_k)
    nrm = G / np.maximum(np.linalg.norm(G, axis=1, keepdims=True), 1e-12)
    n = bias_direction(nrm, params.skirt_bias, up)
    push = push_amount(d, params.margin, params.stiffness, params.max_push, t, s, params.skirt_bias)
    return p + push[:, None] * n, push, d


# --------------------------------------------------------------------------- blocked kernel (the 1 ms path)
#: Garment vertices per block of the blocked kernel.
BLOCK = 64


#: Safety factor of the float32 pre-selection, per metre of block scale (see :class:`CapsulePushPlan`).
#: float32 rounds to 6e-8 relative and a distance takes about a dozen rounded operations (about
#: 1e-6 of the scale at worst); 4e-6 leaves a four-fold margin on top of that.
F32_TOL = 4e-6

_CAPSULE_ERRORS = {
    1: "capsule {i} has a non-finite end or radius (NaN or inf)",
    2: "capsule {i} has radius <= 0",
    3: "capsule {i} is degenerate (p0 == p1 or one end sphere inside the other)",
}


@numba.njit(cache=True)
def _pack_capsules(a, b, ra, rb, caps, bound):
    """Validate and pack world capsules into ``caps (C, 14)`` (as :func:`prepare_capsules`) and
    their bounding spheres ``bound (C, 4)`` (segment midpoint, half-length + larger radius).

    Returns ``(code, capsule)``: code 0 when all are valid, else a key of ``_CAPSULE_ERRORS``.
    """
    for i in range(a.shape[0]):
        ax, ay, az = a[i, 0], a[i, 1], a[i, 2]
        dx, dy, dz = b[i, 0] - ax, b[i, 1] - ay, b[i, 2] - az
        r0 = ra[i]
        r1 = rb[i]
        if not (np.isfinite(dx) and np.isfinite(dy) and np.isfinite(dz) and np.isfinite(ax) and np.isfinite(ay)
                and np.isfinite(az) and np.isfinite(r0) and np.isfinite(r1)):
            return 1, i
        if r0 <= 0.0 or r1 <= 0.0:
            return 2, i
        L = np.sqrt(dx * dx + dy * dy + dz * dz)
        if L <= max(abs(r0 - r1), 1e-6 * 0.999):
            return 3, i
        ux, uy, uz = dx / L, dy / L, dz / L
        s = (r0 - r1) / L
        if abs(ux) < 0.9:  # e = u x (1, 0, 0)
            ex, ey, ez = 0.0, uz, -uy
        else:  # e = u x (0, 1, 0)
            ex, ey, ez = -uz, 0.0, ux
        el = np.sqrt(ex * ex + ey * ey + ez * ez)
        caps[i, 0], caps[i, 1], caps[i, 2] = ax, ay, az
        caps[i, 3], caps[i, 4], caps[i, 5] = ux, uy, uz
        caps[i, 6], caps[i, 7], caps[i, 8] = L, s, np.sqrt(1.0 - s * s)
        caps[i, 9], caps[i, 10] = r0, r1
        caps[i, 11], caps[i, 12], caps[i, 13] = ex / el, ey / el, ez / el
        bound[i, 0] = ax + 0.5 * dx
        bound[i, 1] = ay + 0.5 * dy
        bound[i, 2] = az + 0.5 * dz
        bound[i, 3] = 0.5 * L + max(r0, r1)
    return 0, -1


@numba.njit(cache=True, error_model="numpy", inline="always")
def _axial(px, py, pz, ax, ay, az, ux, uy, uz):
    """``p − a`` split along the unit axis ``u``: ``(pa, x, w, |w|²)`` with ``x = (p − a)·u`` and
    ``w = (p − a) − x u`` (in the arguments' precision, float32 or float64)."""
    pax = px - ax
    pay = py - ay
    paz = pz - az
    x = pax * ux + pay * uy + paz * uz
    wx = pax - x * ux
    wy = pay - x * uy
    wz = paz - x * uz
    return pax, pay, paz, x, wx, wy, wz, wx * wx + wy * wy + wz * wz


@numba.njit(cache=True, error_model="numpy", inline="always")
def _block_min32(fx, fy, fz, m, cl, q, b1, b2, i1):
    """Fold candidate ``q`` (float32, block-local ``cl[q]``) into the two smallest distances
    ``b1 <= b2`` and the argmin ``i1`` of ``m`` block vertices: a branch-free SIMD loop.

    The distance is :func:`kisekae.fit.sdf._cone_distance` in float32; the end sphere's squared
    distance is selected before its square root. Ties keep the earlier candidate.
    """
    ax, ay, az = cl[q, 0], cl[q, 1], cl[q, 2]
    ux, uy, uz = cl[q, 3], cl[q, 4], cl[q, 5]
    L, sn, cs, ra, rb = cl[q, 6], cl[q, 7], cl[q, 8], cl[q, 9], cl[q, 10]
    Lc = L * cs
    zero = np.float32(0.0)
    qi = np.int32(q)
    for j in range(m):
        pax, pay, paz, x, wx, wy, wz, w2 = _axial(fx[j], fy[j], fz[j], ax, ay, az, ux, uy, uz)
        y = np.sqrt(w2)
        t = x * cs - y * sn
        use_a = t < zero
        # squared distance to the nearer end's centre from the axial and radial parts
        xe = x if use_a else x - L
        qd = xe * xe + w2
        rr = ra if use_a else rb
        d = (np.sqrt(qd) - rr) if (use_a | (t > Lc)) else (x * sn + y * cs - ra)
        lo = b1[j]
        lt = d < lo
        b2[j] = min(b2[j], max(lo, d))
        b1[j] = d if lt else lo
        i1[j] = qi if lt else i1[j]


@numba.njit(cache=True, error_model="numpy", inline="always")
def _block_exact(cx, cy, cz, nn, caps, c, q, ci, dd, gxb, gyb, gzb):
    """float64 distance and gradient of capsule ``c`` at the gathered vertices whose float32
    nearest candidate is ``q`` (``ci[i] == q``); the other lanes keep their values. A
    branch-free SIMD form of :func:`kisekae.fit.sdf._round_cone` (same formulas and fallbacks on
    the axis and at the sphere centres) with one square root and one division per vertex."""
    ax = caps[c, 0]
    ay = caps[c, 1]
    az = caps[c, 2]
    ux = caps[c, 3]
    uy = caps[c, 4]
    uz = caps[c, 5]
    L = caps[c, 6]
    sn = caps[c, 7]
    cs = caps[c, 8]
    ra = caps[c, 9]
    rb = caps[c, 10]
    px_, py_, pz_ = caps[c, 11], caps[c, 12], caps[c, 13]
    qi = np.int32(q)
    pos = sn >= 0.0
    for i in range(nn):
        pax, pay, paz, x, wx, wy, wz, w2 = _axial(cx[i], cy[i], cz[i], ax, ay, az, ux, uy, uz)
        A = x * cs
        Bq = (x - L) * cs
        sw = sn * sn * w2
        use_a = ((A < 0.0) | (A * A < sw)) if pos else ((A < 0.0) & (A * A > sw))
        use_b = ((Bq > 0.0) & (Bq * Bq > sw)) if pos else ((Bq > 0.0) | (Bq * Bq < sw))
        off = 0.0 if use_a else L
        qx = pax - off * ux
        qy = pay - off * uy
        qz = paz - off * uz
        on_cap = use_a | use_b
        r = np.sqrt((qx * qx + qy * qy + qz * qz) if on_cap else w2)
        ok = r >= 1e-12
        inv = 1.0 / (r if ok else 1.0)
        d = (r - (ra if use_a else rb)) if on_cap else x * sn + r * cs - ra
        sgn = -1.0 if use_a else 1.0
        ex = wx * inv if ok else px_
        ey = wy * inv if ok else py_
        ez = wz * inv if ok else pz_
        g0 = (qx * inv if ok else sgn * ux) if on_cap else sn * ux + cs * ex
        g1 = (qy * inv if ok else sgn * uy) if on_cap else sn * uy + cs * ey
        g2 = (qz * inv if ok else sgn * uz) if on_cap else sn * uz + cs * ez
        sel = ci[i] == qi
        dd[i] = d if sel else dd[i]
        gxb[i] = g0 if sel else gxb[i]
        gyb[i] = g1 if sel else gyb[i]
        gzb[i] = g2 if sel else gzb[i]


@numba.njit(cache=True)
def block_buffers(size):
    """Scratch arrays of one block of a push kernel: distance, direction x/y/z, tightness, softness, amount."""
    return (np.empty(size), np.empty(size), np.empty(size), np.empty(size), np.empty(size), np.empty(size),
            np.empty(size))


@numba.njit(cache=True, error_model="numpy", inline="always")
def _block_push(dd, gxb, gyb, gzb, ct, cs_, nn, margin, stiffness, max_push, skirt_bias, upx, upy, upz, unit, amt):
    """The push law over gathered vertices (branch-free SIMD loop, as :func:`push_amount` and
    :func:`bias_direction`): writes the amount to ``amt`` (0 for vertices that stay) and the unit
    (skirt-biased) direction over the gradient in ``gxb, gyb, gzb``. With ``unit`` the gradient
    already has unit length (one round cone) and is not renormalised."""
    for i in range(nn):
        d = dd[i]
        ti = ct[i]
        so = cs_[i]
        gap = stiffness * (1.0 - 0.5 * ti) * margin
        x = 1.0 - d / margin
        amount = (gap - d) if d < 0.0 else gap * ((1.0 - so) * x + so * x * x)
        amount *= 1.0 + skirt_bias
        amount = max_push if amount > max_push else amount
        amt[i] = amount if d < margin else 0.0
    if not unit:
        for i in range(nn):
            gx, gy, gz = gxb[i], gyb[i], gzb[i]
            gl = np.sqrt(gx * gx + gy * gy + gz * gz)
            ok = gl >= 1e-12
            gl = gl if ok else 1.0
            gxb[i] = gx / gl
            gyb[i] = gy / gl
            gzb[i] = gz / gl
            amt[i] = amt[i] if ok else 0.0
    if skirt_bias > 0.0:
        for i in range(nn):
            gx, gy, gz = gxb[i], gyb[i], gzb[i]
            dn = gx * upx + gy * upy + gz * upz
            mx = gx + skirt_bias * (gx - dn * upx)
            my = gy + skirt_bias * (gy - dn * upy)
            mz = gz + skirt_bias * (gz - dn * upz)
            ml = np.sqrt(mx * mx + my * my + mz * mz)
            ml = ml if ml >= 1e-12 else 1.0
            gxb[i] = mx / ml
            gyb[i] = my / ml
            gzb[i] = mz / ml


@numba.njit(cache=True, inline="always")
def _write_still(order, s0, m, xs, ys, zs, b1, out, push_out, d_out, copy, diag):
    """Write a block as if no vertex moved (the moving ones are overwritten afterwards)."""
    if copy:
        for j in range(m):
            v = order[s0 + j]
            out[v, 0] = xs[j]
            out[v, 1] = ys[j]
            out[v, 2] = zs[j]
    if diag:
        for j in range(m):
            v = order[s0 + j]
            push_out[v] = 0.0
            d_out[v] = b1[j]


@numba.njit(cache=True, inline="always")
def _gather_block(points, order, s0, m, xs, ys, zs):
    """Copy block ``s0`` (``m`` vertices in ``order``) to ``xs, ys, zs``; returns ``(bad, ox, oy, oz,
    rad)``: ``bad`` is NaN once any coordinate is NaN or inf, then the box centre and half-diagonal."""
    lx = ly = lz = np.inf
    hx = hy = hz = -np.inf
    bad = 0.0
    for j in range(m):
        v = order[s0 + j]
        x = points[v, 0]
        y = points[v, 1]
        z = points[v, 2]
        bad += x * 0.0 + y * 0.0 + z * 0.0  # NaN once any coordinate is NaN or inf
        xs[j] = x
        ys[j] = y
        zs[j] = z
        lx = min(lx, x)
        hx = max(hx, x)
        ly = min(ly, y)
        hy = max(hy, y)
        lz = min(lz, z)
        hz = max(hz, z)
    rad = 0.5 * np.sqrt((hx - lx) ** 2 + (hy - ly) ** 2 + (hz - lz) ** 2)
    return bad, 0.5 * (lx + hx), 0.5 * (ly + hy), 0.5 * (lz + hz), rad


@numba.njit(cache=True, inline="always")
def _block_candidates(caps, bound, C, ox, oy, oz, rad, reach, cand, cl):
    """Capsules that may come within ``reach`` of a vertex of the block (box centre ``o``, half-diagonal
    ``rad``): their ids in ``cand``, their float32 rows relative to ``o`` in ``cl``. Returns ``(count,
    scale)`` with the block's scale for the float32 tolerance.

    The distance is 1-Lipschitz, so its value at the box centre minus the half-diagonal bounds it over
    the block (1e-9 m of slack covers rounding).
    """
    nc = 0
    scale = 0.0
    for c in range(C):
        ex = ox - bound[c, 0]
        ey = oy - bound[c, 1]
        ez = oz - bound[c, 2]
        lim = reach + rad + bound[c, 3] + 1e-9
        if ex * ex + ey * ey + ez * ez >= lim * lim:
            continue
        if _cone_distance(caps, c, ox, oy, oz) - rad >= reach + 1e-9:
            continue
        cand[nc] = c
        ax = caps[c, 0] - ox
        ay = caps[c, 1] - oy
        az = caps[c, 2] - oz
        cl[nc, 0] = ax
        cl[nc, 1] = ay
        cl[nc, 2] = az
        for r in range(3, 11):
            cl[nc, r] = caps[c, r]
        scale = max(scale, np.sqrt(ax * ax + ay * ay + az * az) + caps[c, 6] + max(caps[c, 9], caps[c, 10]))
        nc += 1
    return nc, scale


@numba.njit(cache=True, inline="always")
def _gather_lanes(lane, nn, nc, s0, xs, ys, zs, i1, tight, soft, cx, cy, cz, ci, ct, cso, used):
    """Gather the ``nn`` vertices that may move into lanes padded to a multiple of 8 (the padding
    repeats the last one) and mark their float32 nearest candidates in ``used``; returns the padded count."""
    npad = (nn + 7) & ~7
    for i in range(nn, npad):
        lane[i] = lane[nn - 1]
    for q in range(nc):
        used[q] = False
    for i in range(npad):
        j = lane[i]
        cx[i] = xs[j]
        cy[i] = ys[j]
        cz[i] = zs[j]
        ci[i] = i1[j]
        ct[i] = tight[s0 + j]
        cso[i] = soft[s0 + j]
    for i in range(nn):  # apart from the gather, which then vectorises
        used[ci[i]] = True
    return npad


@numba.njit(cache=True, error_model="numpy", inline="always")
def _nearest_exact(caps, cand, nc, lane, nn, npad, b1, b2, eps, cx, cy, cz, ci, used, cd, cgx, cgy, cgz):
    """Hard union (``smooth_k == 0``): float64 distance and gradient of each lane's nearest capsule.

    Where the float32 runner-up is within ``2 eps`` the ranking may be wrong: all candidates are
    ranked in float64 for that lane (ties to the lower index, as the reference's argmin).
    """
    for i in range(nn):
        j = lane[i]
        if b2[j] - b1[j] <= 2.0 * eps:
            best = np.inf
            ib = 0
            for q in range(nc):
                d = _cone_distance(caps, cand[q], cx[i], cy[i], cz[i])
                if d < best:
                    best = d
                    ib = q
            ci[i] = ib
            used[ib] = True
    for q in range(nc):
        if used[q]:
            _block_exact(cx, cy, cz, npad, caps, cand[q], q, ci, cd, cgx, cgy, cgz)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _fold_exact(caps, cand, nc, k, margin, nn, npad, dbuf, cx, cy, cz, cd, cgx, cgy, cgz):
    """Smooth union (``smooth_k > 0``): fold every candidate per lane in float64; padding lanes stay put."""
    for i in range(nn):
        d, g0, g1, g2, _ = _fold_point(cx[i], cy[i], cz[i], caps, cand, nc, k, dbuf, margin)
        cd[i] = d
        cgx[i] = g0
        cgy[i] = g1
        cgz[i] = g2
    for i in range(nn, npad):
        cd[i] = np.inf


@numba.njit(cache=True, error_model="numpy", inline="always")
def _preselect32(m, nc, xs, ys, zs, ox, oy, oz, cl, fx, fy, fz, b1, b2, i1):
    """float32 pre-selection in block-local coordinates: nearest (``b1``, ``i1``) and second-nearest
    (``b2``) candidate distance of the block's ``m`` vertices."""
    inf32 = np.float32(np.inf)
    for j in range(m):
        fx[j] = xs[j] - ox
        fy[j] = ys[j] - oy
        fz[j] = zs[j] - oz
        b1[j] = inf32
        b2[j] = inf32
        i1[j] = 0
    for q in range(nc):
        _block_min32(fx, fy, fz, m, cl, q, b1, b2, i1)


@numba.njit(cache=True, inline="always")
def _scatter_moved(order, s0, lane, nn, cx, cy, cz, camt, cgx, cgy, cgz, cd, out, push_out, d_out, diag):
    """Write the pushed lanes back to their vertices (and their push and distance with ``diag``)."""
    for i in range(nn):
        v = order[s0 + lane[i]]
        a_ = camt[i]
        out[v, 0] = cx[i] + a_ * cgx[i]
        out[v, 1] = cy[i] + a_ * cgy[i]
        out[v, 2] = cz[i] + a_ * cgz[i]
        if diag:
            push_out[v] = a_
            d_out[v] = cd[i]


@numba.njit(cache=True, error_model="numpy")
def _plan_kernel(points, order, tight, soft, caps, bound, prm, block, out, push_out, d_out, copy, diag):
    """Blocked capsule push-out (see :class:`CapsulePushPlan`). ``copy``: write every vertex to
    ``out`` (else only the vertices that may move: ``out`` is ``points``); ``diag``: write
    ``push_out`` and ``d_out``. Returns the first vertex (in ``order``) of a block holding a
    non-finite coordinate, or -1 when all went well."""
    k, margin, stiffness, max_push, skirt_bias = prm[0], prm[1], prm[2], prm[3], prm[4]
    upx, upy, upz, tol = prm[5], prm[6], prm[7], prm[8]
    n = points.shape[0]
    C = caps.shape[0]
    reach = margin + 1.5 * k
    pad = block + 8
    xs = np.empty(block)
    ys = np.empty(block)
    zs = np.empty(block)
    fx = np.empty(block, dtype=np.float32)
    fy = np.empty(block, dtype=np.float32)
    fz = np.empty(block, dtype=np.float32)
    b1 = np.empty(block, dtype=np.float32)
    b2 = np.empty(block, dtype=np.float32)
    i1 = np.empty(block, dtype=np.int32)
    # gathered ("compact") lanes: the vertices that may move, padded to a multiple of 8
    lane = np.empty(pad, dtype=np.int64)
    cx = np.zeros(pad)
    cy = np.zeros(pad)
    cz = np.zeros(pad)
    ci = np.zeros(pad, dtype=np.int32)
    cd = np.zeros(pad)
    cgx = np.zeros(pad)
    cgy = np.zeros(pad)
    cgz = np.zeros(pad)
    ct = np.zeros(pad)
    cso = np.zeros(pad)
    camt = np.zeros(pad)
    cand = np.empty(max(C, 1), dtype=np.int64)
    cl = np.empty((max(C, 1), 11), dtype=np.float32)
    dbuf = np.empty(max(C, 1))
    used = np.empty(max(C, 1), dtype=np.bool_)
    inf32 = np.float32(np.inf)
    for s0 in range(0, n, block):
        m = min(block, n - s0)
        bad, ox, oy, oz, rad = _gather_block(points, order, s0, m, xs, ys, zs)
        if bad != 0.0:
            return s0
        nc, scale = _block_candidates(caps, bound, C, ox, oy, oz, rad, reach, cand, cl)
        if nc == 0:
            for j in range(m):
                b1[j] = inf32
            _write_still(order, s0, m, xs, ys, zs, b1, out, push_out, d_out, copy, diag)
            continue
        # float32 pre-selection in block-local coordinates: nearest and second-nearest candidate
        eps = tol * (scale + rad)
        _preselect32(m, nc, xs, ys, zs, ox, oy, oz, cl, fx, fy, fz, b1, b2, i1)
        # vertices whose float32 distance is below reach + eps may be within reach: gather them
        lim = reach + eps
        nn = 0
        for j in range(m):
            lane[nn] = j
            nn += 1 if b1[j] < lim else 0
        _write_still(order, s0, m, xs, ys, zs, b1, out, push_out, d_out, copy, diag)
        if nn:
            npad = _gather_lanes(lane, nn, nc, s0, xs, ys, zs, i1, tight, soft, cx, cy, cz, ci, ct, cso, used)
            if k == 0.0:
                _nearest_exact(caps, cand, nc, lane, nn, npad, b1, b2, eps, cx, cy, cz, ci, used, cd, cgx, cgy, cgz)
            else:
                _fold_exact(caps, cand, nc, k, margin, nn, npad, dbuf, cx, cy, cz, cd, cgx, cgy, cgz)
            _block_push(cd, cgx, cgy, cgz, ct, cso, npad, margin, stiffness, max_push, skirt_bias, upx, upy, upz,
                        k == 0.0, camt)
            _scatter_moved(order, s0, lane, nn, cx, cy, cz, camt, cgx, cgy, cgz, cd, out, push_out, d_out, diag)
    return -1


def _as_f64(x, shape, name):
    """``x`` as a C-contiguous float64 array of ``shape`` (-1: any length); no copy when it already is."""
    arr = x if (type(x) is np.ndarray and x.dtype == np.float64 and x.flags.c_contiguous) else None
    if arr is None:
        try:
            arr = np.ascontiguousarray(x, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise KisekaeError(f"cannot read as numbers: {exc}", name) from None
    if arr.ndim != len(shape) or any(s != -1 and s != t for s, t in zip(shape, arr.shape)):
        want = "(" + ", ".join("C" if s == -1 else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        raise KisekaeError(f"expected shape {want}, got {arr.shape}", name)
    return arr


class CapsulePushPlan:
    """Capsule push-out prepared once per garment and run every frame: the 1 ms path.

    Everything that does not change from frame to frame is checked and laid out at
    construction: the parameters, the masks (resolved per vertex, permuted into block order),
    the vertex order and the output buffers. :meth:`run` then only checks shapes, packs the
    posed capsules (validated in the same compiled pass) and runs one Numba kernel on one core.

    The kernel takes the vertices ``block`` at a time in ``order`` (a Morton order of the
    template by default, see :func:`spatial_order`; skinning moves neighbours together, so
    the blocks stay compact in every pose). Per block:

    1. capsules are culled exactly: a capsule is a candidate when its distance from the block's
       box centre, minus the box's half-diagonal, is below ``margin + 1.5 * smooth_k`` (the
       distance is 1-Lipschitz, so no capsule within reach of a vertex is dropped);
    2. every candidate's distance is evaluated for the whole block in float32, in coordinates
       relative to the block centre (a branch-free SIMD loop that keeps the nearest and the
       second-nearest distance per vertex). Its error is below ``eps = f32_tol * S`` where ``S``
       is the block's scale (block radius + farthest candidate end + length + radius, metres);
    3. blocks whose float32 minimum is at or above ``reach + eps`` cannot move: they are copied;
    4. otherwise the float32 nearest capsule is re-evaluated in float64 (distance and gradient,
       SIMD again). Where the runner-up lies within ``2 eps`` the float32 ranking might be
       wrong, and all candidates are evaluated in float64 for that vertex (scalar);
       with ``smooth_k > 0`` the smooth union is folded over the candidates per vertex;
    5. the push law runs over the block and the results are scattered back.

    So the float64 distance, gradient and push are those of the NumPy reference
    (:func:`push_out_reference`) for every vertex that can move.

    Parameters
    ----------
    points : array_like (N, 3)
        A template of the garment's vertices (rest pose or first frame), metres: sets ``N``
        and the default order.
    params : PushParams, optional
        Copied at construction (make a new plan to change them).
    tightness, softness : None, float, (N,) or texture
        Masks (see :func:`resolve_mask`).
    uvs : array_like (N, 2), optional
        Needed for texture masks.
    up : array_like (3,)
        World up, for the skirt bias.
    order : array_like int (N,), optional
        Vertex order (a permutation of ``0..N-1``); default ``spatial_order(points)``.
    block : int
        Vertices per block (default 64).

    Attributes
    ----------
    n : int
        Number of garment vertices.
    order : ndarray int64 (N,)
    out, push, d : ndarray float64 (N, 3), (N,), (N,)
        Output buffers, overwritten by every :meth:`run`.
    f32_tol : float
        Float32 pre-selection tolerance per metre of block scale (default :data:`F32_TOL`).
    """

    def __init__(self, points, params: PushParams | None = None, tightness=None, softness=None, uvs=None, up=UP,
                 order=None, block: int = BLOCK):
        p, params, t, s = _inputs(points, params, tightness, softness, uvs)
        n = p.shape[0]
        up = _as_f64(up, (3,), "up")
        if not np.all(np.isfinite(up)):
            raise KisekaeError("non-finite value (NaN or inf)", "up")
        if int(block) < 1:
            raise KisekaeError(f"must be >= 1, got {block!r}", "block")
        if order is None:
            order = spatial_order(p)
        try:
            order = np.asarray(order)
            ok = order.ndim == 1 and (order.size == 0 or np.issubdtype(order.dtype, np.integer))
        except (TypeError, ValueError):
            ok = False
        if not ok or order.shape[0] != n or (n and (order.min() < 0 or order.max() >= n)):
            raise KisekaeError(f"must be a permutation of the {n} garment vertices", "order")
        order = np.ascontiguousarray(order, dtype=np.int64)
        if n and np.bincount(order, minlength=n).max() > 1:
            raise KisekaeError(f"must be a permutation of the {n} garment vertices (a vertex repeats)", "order")
        self.n = n
        self.block = int(block)
        self.order = order
        self.params = PushParams(**vars(params))
        self.up = up.copy()
        self.f32_tol = F32_TOL
        self._tight = np.ascontiguousarray(t[order])
        self._soft = np.ascontiguousarray(s[order])
        self.out = np.empty((n, 3))
        self.push = np.zeros(n)
        self.d = np.full(n, np.inf)
        self._caps = np.empty((0, 14))
        self._bound = np.empty((0, 4))

    def run(self, points, a, b, ra, rb, out=None, diagnostics: bool = True):
        """Push one frame's garment vertices out of the posed capsules.

        Parameters
        ----------
        points : array_like (N, 3)
            Posed garment vertices, world, metres (float64 C-contiguous avoids a copy).
        a, b : array_like (C, 3)
            Posed capsule end centres, world, metres.
        ra, rb : array_like (C,)
            End radii, metres.
        out : ndarray float64 (N, 3), optional
            Where to write the pushed vertices; default the plan's own :attr:`out` buffer.
            Passing ``points`` itself updates it in place, and then only the vertices that may
            move are written (the others already hold their result).
        diagnostics : bool
            Also write :attr:`push` and :attr:`d` (default). ``False`` skips them (a per-frame
            engine needs only the positions) and returns ``None`` for both.

        Returns
        -------
        new_points : ndarray float64 (N, 3)
            ``out`` (or :attr:`out`); overwritten by the next run.
        push : ndarray float64 (N,) or None
            Displacement length, metres (:attr:`push`).
        d : ndarray float64 (N,) or None
            Field distance (:attr:`d`): exact wherever it is below ``margin + smooth_k``;
            elsewhere a value at or above ``margin`` (float32 or the hard minimum over the
            block's candidates), or ``inf`` when no capsule is near the block.
        """
        n = self.n
        p = _as_f64(points, (n, 3), "garment vertices")
        a = _as_f64(a, (-1, 3), "capsule a")
        C = a.shape[0]
        b = _as_f64(b, (C, 3), "capsule b")
        ra = _as_f64(ra, (C,), "capsule ra")
        rb = _as_f64(rb, (C,), "capsule rb")
        if self._caps.shape[0] != C:
            self._caps = np.empty((C, 14))
            self._bound = np.empty((C, 4))
        code, i = _pack_capsules(a, b, ra, rb, self._caps, self._bound)
        if code:
            raise KisekaeError(_CAPSULE_ERRORS[code].format(i=i), "capsules")
        if out is None:
            out = self.out
        elif not (type(out) is np.ndarray and out.dtype == np.float64 and out.flags.c_contiguous
                  and out.flags.writeable and out.shape == (n, 3)):
            raise KisekaeError(f"must be a writeable C-contiguous float64 array of shape ({n}, 3)", "out")
        pr = self.params
        prm = np.array([pr.smooth_k, pr.margin, pr.stiffness, pr.max_push, pr.skirt_bias, self.up[0], self.up[1],
                        self.up[2], self.f32_tol])
        if n:
            diag = bool(diagnostics)
            bad = _plan_kernel(p, self.order, self._tight, self._soft, self._caps, self._bound, prm, self.block, out,
                               self.push, self.d, out is not p, diag)
            if bad >= 0:
                rows = self.order[bad:bad + self.block]
                row = int(rows[~np.isfinite(p[rows]).all(axis=1)].min())
                raise KisekaeError(f"non-finite value (NaN or inf) at row {row}", "garment vertices")
        if not diagnostics:
            return out, None, None
        return out, self.push, self.d


def push_out_capsules(points, a, b, ra, rb, params: PushParams | None = None, tightness=None, softness=None, uvs=None,
                      up=UP, order=None, block: int = BLOCK):
    """Capsule push-out (Numba, one core) in one call: the CPU path of every capsule push-out.

    Builds a :class:`CapsulePushPlan` and runs it once; for a garment animated over many frames
    build the plan once and call :meth:`CapsulePushPlan.run` per frame instead (this saves the
    input checks, the mask resolution and, when ``order`` is not given, a sort per call).

    Parameters
    ----------
    points, a, b, ra, rb, params, tightness, softness, uvs, up
        As :func:`push_out_reference`.
    order : array_like int (N,), optional
        Vertex order (a permutation); default :func:`spatial_order` of ``points``.
    block : int
        Vertices per block (default 64).

    Returns
    -------
    new_points : ndarray float64 (N, 3)
    push : ndarray float64 (N,)
        Displacement length, metres. Same as the reference for every vertex.
    d : ndarray float64 (N,)
        Field distance: exact wherever it is below ``margin + smooth_k``; elsewhere a value at
        or above ``margin``, or ``inf`` when no capsule is near the vertex's block.
    """
    plan = CapsulePushPlan(points, params, tightness, softness, uvs, up, order, block)
    return plan.run(points, a, b, ra, rb)


# --------------------------------------------------------------------------- mesh helpers
def smooth_displacement(displacement, moved, edges, iterations: int = 2, weight: float = 0.5, floor=None, directions=None):
    """Average the displacement of moved vertices over their moved neighbours.

    Only vertices in ``moved`` change (vertices that did not need to move stay exactly where
    they are). When ``floor`` and ``directions`` are given, every moved vertex keeps at least its
    required push along its own direction (``dot(disp, dir) >= floor``), so smoothing can never
    re-open a penetration.

    Parameters
    ----------
    displacement : array_like (N, 3)
        Per-vertex displacement, metres.
    moved : array_like bool (N,)
        Vertices allowed to change.
    edges : array_like int (E, 2)
        Mesh edges (welded, so seams do not tear).
    iterations : int
        Jacobi passes.
    weight : float
        0..1, blend toward the neighbour mean per pass.
    floor : array_like (N,), optional
        Required push per vertex, metres.
    directions : array_like (N, 3), optional
        Unit push directions.

    Returns
    -------
    ndarray float64 (N, 3)
    """
    disp = np.array(displacement, dtype=np.float64)
    moved = np.asarray(moved, dtype=bool)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    e = e[moved[e[:, 0]] & moved[e[:, 1]]]
    if e.size == 0 or iterations <= 0:
        return disp
    n = disp.shape[0]
    deg = np.bincount(e.ravel(), minlength=n).astype(np.float64)
    has = deg > 0
    for _ in range(int(iterations)):
        acc = np.zeros_like(disp)
        for j in range(3):
            acc[:, j] = np.bincount(e[:, 0], weights=disp[e[:, 1], j], minlength=n) + np.bincount(
                e[:, 1], weights=disp[e[:, 0], j], minlength=n
            )
        mean = acc[has] / deg[has, None]
        disp[has] = (1.0 - weight) * disp[has] + weight * mean
        if floor is not None and directions is not None:
            dirs = np.asarray(directions, dtype=np.float64)
            along = np.einsum("ij,ij->i", disp, dirs)
            lack = np.where(moved, np.maximum(0.0, np.asarray(floor) - along), 0.0)
            disp += lack[:, None] * dirs
    return disp

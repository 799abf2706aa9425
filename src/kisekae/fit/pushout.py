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
from ..validate import as_points
from .sdf import (CELL_SIZE, MAX_CELLS, _cell_of, _cone_at, _cone_distance, _cull_grid, _fold_point, capsule_field,
                  prepare_capsules)

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
        Posed (world) capsules, see :func:`kisekae.fit.capsules.transform_capsules`.
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


@numba.njit(cache=True)
def _push_culled(points, caps, k, margin, stiffness, max_push, skirt_bias, tight, soft, up, cell_size, max_cells, out, push_out, d_out):
    reach = margin + 1.5 * k
    lo, h, dims, start, items = _cull_grid(points, caps, reach, cell_size, max_cells)
    C = caps.shape[0]
    dbuf = np.empty(max(C, 1))
    for v in range(points.shape[0]):
        px, py, pz = points[v, 0], points[v, 1], points[v, 2]
        out[v, 0] = px
        out[v, 1] = py
        out[v, 2] = pz
        push_out[v] = 0.0
        cell = _cell_of(px, py, pz, lo, h, dims)
        s0 = start[cell]
        nc = start[cell + 1] - s0
        if nc == 0:
            d_out[v] = np.inf
            continue
        d, gx, gy, gz, _ = _fold_point(px, py, pz, caps, items[s0:s0 + nc], nc, k, dbuf, margin)
        d_out[v] = d
        if d >= margin:
            continue
        s = stiffness * (1.0 - 0.5 * tight[v])
        gap = s * margin
        if d < 0.0:
            amount = gap - d
        else:
            x = 1.0 - d / margin
            amount = gap * ((1.0 - soft[v]) * x + soft[v] * x * x)
        amount *= 1.0 + skirt_bias
        if amount > max_push:
            amount = max_push
        gl = np.sqrt(gx * gx + gy * gy + gz * gz)
        if gl < 1e-12:
            continue
        gx /= gl
        gy /= gl
        gz /= gl
        if skirt_bias > 0.0:
            dn = gx * up[0] + gy * up[1] + gz * up[2]
            mx = gx + skirt_bias * (gx - dn * up[0])
            my = gy + skirt_bias * (gy - dn * up[1])
            mz = gz + skirt_bias * (gz - dn * up[2])
            ml = np.sqrt(mx * mx + my * my + mz * mz)
            gx, gy, gz = mx / ml, my / ml, mz / ml
        out[v, 0] = px + amount * gx
        out[v, 1] = py + amount * gy
        out[v, 2] = pz + amount * gz
        push_out[v] = amount


def push_out_capsules(points, a, b, ra, rb, params: PushParams | None = None, tightness=None, softness=None, uvs=None, up=UP, cell_size: float = CELL_SIZE, max_cells: int = MAX_CELLS):
    """Capsule push-out with grid culling (Numba, one core). Same result as :func:`push_out_reference`.

    Parameters and returns as :func:`push_out_reference`, except ``d`` is ``inf`` for vertices
    farther than ``margin + 1.5 * smooth_k`` from every capsule (they are culled, and do not
    move). ``cell_size`` (metres) and ``max_cells`` set the culling grid.
    """
    p, params, t, s = _inputs(points, params, tightness, softness, uvs)
    caps = prepare_capsules(a, b, ra, rb)
    n = p.shape[0]
    out = np.empty_like(p)
    push = np.zeros(n)
    d = np.full(n, np.inf)
    if n:
        _push_culled(
            p, caps, float(params.smooth_k), float(params.margin), float(params.stiffness), float(params.max_push),
            float(params.skirt_bias), t, s, np.asarray(up, dtype=np.float64), float(cell_size), int(max_cells), out, push, d,
        )
    return out, push, d


# --------------------------------------------------------------------------- blocked kernel (the 1 ms path)
#: Garment vertices per block of the blocked kernel.
BLOCK = 64


def spatial_order(points) -> np.ndarray:
    """A vertex order that keeps near vertices together: sort by 3-D Morton (Z-order) code.

    Compute it once per garment (rest pose or first frame) and pass it to
    :func:`push_out_blocked` every frame: skinning moves neighbours together, so blocks of
    consecutive vertices in this order stay compact in every pose.

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
    lo = p.min(axis=0)
    ext = max(float((p.max(axis=0) - lo).max()), 1e-9)
    q = np.minimum((p - lo) / ext * 1024, 1023).astype(np.uint64)

    def spread(x):
        x = (x | (x << np.uint64(16))) & np.uint64(0x030000FF)
        x = (x | (x << np.uint64(8))) & np.uint64(0x0300F00F)
        x = (x | (x << np.uint64(4))) & np.uint64(0x030C30C3)
        x = (x | (x << np.uint64(2))) & np.uint64(0x09249249)
        return x

    code = spread(q[:, 0]) | (spread(q[:, 1]) << np.uint64(1)) | (spread(q[:, 2]) << np.uint64(2))
    return np.argsort(code, kind="stable").astype(np.int64)


@numba.njit(cache=True, inline="always")
def _push_one(d, gx, gy, gz, margin, stiffness, max_push, skirt_bias, tight, soft, up):
    """The push law for one vertex: ``(amount, direction)``; amount 0 when nothing moves."""
    if d >= margin:
        return 0.0, 0.0, 0.0, 0.0
    s = stiffness * (1.0 - 0.5 * tight)
    gap = s * margin
    if d < 0.0:
        amount = gap - d
    else:
        x = 1.0 - d / margin
        amount = gap * ((1.0 - soft) * x + soft * x * x)
    amount *= 1.0 + skirt_bias
    if amount > max_push:
        amount = max_push
    gl = np.sqrt(gx * gx + gy * gy + gz * gz)
    if gl < 1e-12:
        return 0.0, 0.0, 0.0, 0.0
    gx /= gl
    gy /= gl
    gz /= gl
    if skirt_bias > 0.0:
        dn = gx * up[0] + gy * up[1] + gz * up[2]
        mx = gx + skirt_bias * (gx - dn * up[0])
        my = gy + skirt_bias * (gy - dn * up[1])
        mz = gz + skirt_bias * (gz - dn * up[2])
        ml = np.sqrt(mx * mx + my * my + mz * mz)
        gx, gy, gz = mx / ml, my / ml, mz / ml
    return amount, gx, gy, gz


@numba.njit(cache=True, error_model="numpy")
def _block_min(xs, ys, zs, m, caps, c, dbest, ibest):
    """Fold capsule ``c`` into the running nearest distance of ``m`` block vertices (a SIMD loop).

    A branch-free form of ``_cone_distance``: the end sphere's squared distance is selected
    before the square root, so one root serves both ends. Ties keep the earlier capsule, as the
    reference's ``argmin`` does.
    """
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
    Lc = L * cs
    for j in range(m):
        pax = xs[j] - ax
        pay = ys[j] - ay
        paz = zs[j] - az
        x = pax * ux + pay * uy + paz * uz
        pp = pax * pax + pay * pay + paz * paz
        wx = pax - x * ux
        wy = pay - x * uy
        wz = paz - x * uz
        y = np.sqrt(wx * wx + wy * wy + wz * wz)  # not sqrt(pp - x^2): exact near the axis
        t = x * cs - y * sn
        use_a = t < 0.0
        pbx = pax - L * ux
        pby = pay - L * uy
        pbz = paz - L * uz
        qd = pp if use_a else pbx * pbx + pby * pby + pbz * pbz
        rr = ra if use_a else rb
        d = (np.sqrt(qd) - rr) if (use_a | (t > Lc)) else (x * sn + y * cs - ra)
        better = d < dbest[j]
        dbest[j] = d if better else dbest[j]
        ibest[j] = c if better else ibest[j]


@numba.njit(cache=True, error_model="numpy")
def _block_grad(xs, ys, zs, m, caps, ibest, gxb, gyb, gzb):
    """Gradient of each vertex's nearest capsule ``ibest[j]`` (branch-free ``_round_cone``)."""
    for j in range(m):
        c = np.uint64(ibest[j] if ibest[j] >= 0 else 0)  # unsigned: no negative-index wraparound
        pax = xs[j] - caps[c, 0]
        pay = ys[j] - caps[c, 1]
        paz = zs[j] - caps[c, 2]
        ux = caps[c, 3]
        uy = caps[c, 4]
        uz = caps[c, 5]
        L = caps[c, 6]
        sn = caps[c, 7]
        cs = caps[c, 8]
        x = pax * ux + pay * uy + paz * uz
        wx = pax - x * ux
        wy = pay - x * uy
        wz = paz - x * uz
        y = np.sqrt(wx * wx + wy * wy + wz * wz)
        axis_ok = y >= 1e-12
        inv_y = 1.0 / (y if axis_ok else 1.0)
        ex = wx * inv_y if axis_ok else caps[c, 11]
        ey = wy * inv_y if axis_ok else caps[c, 12]
        ez = wz * inv_y if axis_ok else caps[c, 13]
        t = x * cs - y * sn
        use_a = t < 0.0
        off = 0.0 if use_a else L
        qx = pax - off * ux
        qy = pay - off * uy
        qz = paz - off * uz
        nq = np.sqrt(qx * qx + qy * qy + qz * qz)
        cap_ok = nq >= 1e-12
        inv_q = 1.0 / (nq if cap_ok else 1.0)
        sgn = -1.0 if use_a else 1.0
        on_cap = use_a | (t > L * cs)
        gxb[j] = (qx * inv_q if cap_ok else sgn * ux) if on_cap else sn * ux + cs * ex
        gyb[j] = (qy * inv_q if cap_ok else sgn * uy) if on_cap else sn * uy + cs * ey
        gzb[j] = (qz * inv_q if cap_ok else sgn * uz) if on_cap else sn * uz + cs * ez


@numba.njit(cache=True)
def _push_blocked(points, order, caps, bound, k, margin, stiffness, max_push, skirt_bias, tight, soft, up, block,
                  out, push_out, d_out):
    """Blocked capsule push-out (see :func:`push_out_blocked`). Returns False if ``order`` repeats a vertex."""
    n = points.shape[0]
    C = caps.shape[0]
    reach = margin + 1.5 * k
    xs = np.empty(block)
    ys = np.empty(block)
    zs = np.empty(block)
    dbest = np.empty(block)
    gxb = np.empty(block)
    gyb = np.empty(block)
    gzb = np.empty(block)
    ibest = np.empty(block, dtype=np.int64)
    seen = np.zeros(n, dtype=np.bool_)
    cand = np.empty(max(C, 1), dtype=np.int64)
    dbuf = np.empty(max(C, 1))
    for s0 in range(0, n, block):
        m = min(block, n - s0)
        lx = ly = lz = np.inf
        hx = hy = hz = -np.inf
        for j in range(m):
            v = order[s0 + j]
            if seen[v]:
                return False
            seen[v] = True
            x = points[v, 0]
            y = points[v, 1]
            z = points[v, 2]
            xs[j] = x
            ys[j] = y
            zs[j] = z
            lx = min(lx, x)
            hx = max(hx, x)
            ly = min(ly, y)
            hy = max(hy, y)
            lz = min(lz, z)
            hz = max(hz, z)
        cx = 0.5 * (lx + hx)
        cy = 0.5 * (ly + hy)
        cz = 0.5 * (lz + hz)
        rad = 0.5 * np.sqrt((hx - lx) ** 2 + (hy - ly) ** 2 + (hz - lz) ** 2)
        # capsules that may come within `reach` of a vertex of the block (exact: 1-Lipschitz bound)
        nc = 0
        for c in range(C):
            ex = cx - bound[c, 0]
            ey = cy - bound[c, 1]
            ez = cz - bound[c, 2]
            lim = reach + rad + bound[c, 3]
            if ex * ex + ey * ey + ez * ez >= lim * lim:
                continue  # farther than reach from the capsule's bounding sphere
            if _cone_distance(caps, c, cx, cy, cz) - rad >= reach:
                continue
            cand[nc] = c
            nc += 1
        lowest = np.inf
        for j in range(m):
            dbest[j] = np.inf
            ibest[j] = -1
        for q in range(nc):
            _block_min(xs, ys, zs, m, caps, cand[q], dbest, ibest)
        for j in range(m):
            lowest = min(lowest, dbest[j])
        if lowest < margin and k == 0.0:
            _block_grad(xs, ys, zs, m, caps, ibest, gxb, gyb, gzb)
        for j in range(m):
            v = order[s0 + j]
            d = dbest[j]
            d_out[v] = d
            if d >= reach:
                continue
            px, py, pz = xs[j], ys[j], zs[j]
            gx, gy, gz = gxb[j], gyb[j], gzb[j]
            if k > 0.0:
                d, gx, gy, gz, _ = _fold_point(px, py, pz, caps, cand, nc, k, dbuf, margin)
                d_out[v] = d
            if d >= margin:
                continue
            amount, gx, gy, gz = _push_one(d, gx, gy, gz, margin, stiffness, max_push, skirt_bias, tight[v], soft[v], up)
            out[v, 0] = px + amount * gx
            out[v, 1] = py + amount * gy
            out[v, 2] = pz + amount * gz
            push_out[v] = amount
    return True


def push_out_blocked(points, a, b, ra, rb, params: PushParams | None = None, tightness=None, softness=None, uvs=None,
                     up=UP, order=None, block: int = BLOCK):
    """Capsule push-out by blocks of nearby vertices (Numba, one core): the fast path.

    Same result as :func:`push_out_reference` for every vertex that moves. Vertices are taken
    ``block`` at a time in ``order`` (see :func:`spatial_order`; compute it once per garment). Per
    block, a capsule is a candidate when its distance from the block's box centre, minus the box's
    half-diagonal, is below ``margin + 1.5 * smooth_k``; the distance is 1-Lipschitz, so no
    capsule within reach of any vertex of the block is dropped. Then every candidate's distance is
    evaluated for the whole block in a branch-free loop (vectorised by the compiler), and the
    gradient only for the vertices that move (of the nearest capsule; with ``smooth_k > 0`` the
    smooth union is folded over the block's candidates in index order, exactly as the reference).

    Parameters
    ----------
    points, a, b, ra, rb, params, tightness, softness, uvs, up
        As :func:`push_out_reference`.
    order : array_like int (N,), optional
        Vertex order (a permutation); default :func:`spatial_order` of ``points`` (costs a sort,
        so pass a stored one per frame).
    block : int
        Vertices per block (default 64).

    Returns
    -------
    new_points : ndarray float64 (N, 3)
    push : ndarray float64 (N,)
        Displacement length, metres.
    d : ndarray float64 (N,)
        Field distance: exact wherever it is below ``margin + smooth_k`` (the hard minimum is then
        below ``margin + 1.5 smooth_k``); elsewhere a value at or above ``margin`` (the hard
        minimum over the block's candidates), or ``inf`` when no capsule is near the block.
    """
    p, params, t, s = _inputs(points, params, tightness, softness, uvs)
    caps = prepare_capsules(a, b, ra, rb)
    n = p.shape[0]
    if order is None:
        order = spatial_order(p)
    order = np.ascontiguousarray(order, dtype=np.int64).reshape(-1)
    if order.shape[0] != n or (n and (order.min() < 0 or order.max() >= n)):
        raise KisekaeError(f"must be a permutation of the {n} garment vertices", "order")
    if int(block) < 1:
        raise KisekaeError(f"must be >= 1, got {block!r}", "block")
    # bounding sphere of each capsule: centre of the segment, half-length + larger radius
    mid = caps[:, 0:3] + 0.5 * caps[:, 6:7] * caps[:, 3:6]
    bound = np.ascontiguousarray(np.column_stack([mid, 0.5 * caps[:, 6] + np.maximum(caps[:, 9], caps[:, 10])]))
    out = p.copy()
    push = np.zeros(n)
    d = np.full(n, np.inf)
    if n and not _push_blocked(p, order, caps, bound, float(params.smooth_k), float(params.margin),
                               float(params.stiffness), float(params.max_push), float(params.skirt_bias), t, s,
                               np.asarray(up, dtype=np.float64), int(block), out, push, d):
        raise KisekaeError(f"must be a permutation of the {n} garment vertices (a vertex repeats)", "order")
    return out, push, d


# --------------------------------------------------------------------------- mesh helpers
def mesh_edges(faces) -> np.ndarray:
    """Unique undirected edges ``(E, 2)`` int64 of a triangle (or quad) list."""
    f = np.asarray(faces, dtype=np.int64)
    e = np.concatenate([f[:, [i, (i + 1) % f.shape[1]]] for i in range(f.shape[1])])
    e.sort(axis=1)
    return np.unique(e, axis=0)


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


def vertex_normals(vertices, faces) -> np.ndarray:
    """Area-weighted unit vertex normals ``(N, 3)`` float32 of a triangle mesh."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    n = np.zeros_like(v)
    for j in range(3):
        np.add.at(n, f[:, j], fn)
    ln = np.linalg.norm(n, axis=1, keepdims=True)
    return (n / np.where(ln > 0, ln, 1.0)).astype(np.float32)

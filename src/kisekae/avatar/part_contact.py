"""Contact between body parts that share no joint: a hand on the hip, an arm against the chest, thighs together.

The joint planes (:mod:`kisekae.avatar.contact`) settle the fold where two bones blend. Parts that meet away from
any joint they share, a forearm pressed into the belly or one thigh into the other, pass through each other under
linear blend skinning, and no plane separates them. This step is the per-bone distance fields of implicit skinning
(Vaillant et al. 2013), reduced to what a vertex stage can afford:

Bake, once per body (:func:`bake_part_fields`): each *part* (the vertices whose heaviest bone is one bone; parts of
at least :data:`MIN_PART_VERTICES` vertices, at most :data:`MAX_PARTS`) gets a signed distance grid of its own
triangles in the rest frame (:data:`CELL` cells, :data:`MARGIN` around the part; negative inside, the sign from the
part's winding number, so the open cut where it meets the next part closes along w = 0.5). Each vertex gets a mask
of the parts it is *not* tested against: any bone that skins it, and the parents and children of those bones (the
joints' own folds, which the planes handle).

Per frame (:func:`part_step`): a vertex of part A that comes within ``gap + band`` of another part B's field (B's
grid moved rigidly by B's bone) moves towards the contact surface ``f_B - f_A = gap`` (the offset bisector of
the two fields), through a smooth maximum over ``band``; the target never exceeds the vertex's rest value
``f_B - f_A`` minus ``band``, so the rest pose, and creases that already touch at rest, stay exactly as they are.
The move runs along ``grad f_B - max(-cos, 0) grad f_A``: the bisector's direction where the two surfaces face each
other, B's normal where they do not (a thin part inside a thick one). Penetrations deeper than :data:`DEEP` fade to
no move at twice that depth: a hand buried in the hip is a pose no vertex step can repair, and a partial repair
tears it. :func:`part_contact` then spreads the moves over the one-ring (:func:`kisekae.geom.ring.smooth_push`,
:data:`PASSES` passes: pushes grow to the neighbours, none shrinks) and takes the step once more from there.

Far from contact it equals its input bit for bit; the body of a pose without such contacts (every named pose of the
built-in avatar) is unchanged. Measurements and the choices behind the constants: docs/contact.md
"Contact between parts that share no joint".
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..errors import KisekaeError
from ..geom.ring import one_ring, smooth_push, smooth_push_numpy
from ..validate import as_faces, as_points

#: Grid cell of the part fields, metres.
CELL = 0.01
#: Grid margin around each part, metres.
MARGIN = 0.03
#: Parts with fewer vertices (fingers, clavicles) get no field: they are neither tested against nor moved.
MIN_PART_VERTICES = 150
#: At most this many parts get a field (the largest; one 64-bit mask per vertex).
MAX_PARTS = 64
#: Gap left between two parts in contact, metres.
GAP = 0.004
#: Width of the smooth maximum, metres.
BAND = 0.01
#: Penetration depth (metres) up to which a vertex moves fully; the move fades to none at twice this depth.
DEEP = 0.02
#: Largest move of one vertex against one part, metres.
MAX_MOVE = 0.03
#: Floor of the length of the move direction before normalising (a move at most ``1 / MIN_SPREAD`` times its step).
MIN_SPREAD = 0.5
#: One-ring smoothing passes between the two steps of :func:`part_contact`.
PASSES = 8


@dataclass
class PartFields:
    """What :func:`part_step` reads, baked once per body by :func:`bake_part_fields`.

    Attributes
    ----------
    grid : (C,) float64 signed distances of all parts, metres (negative inside), part ``s`` at
        ``grid[start[s]:start[s + 1]]`` in x-major order (index ``(ix * ny + iy) * nz + iz``)
    start : (P + 1,) int64
    lo : (P, 3) float64 rest-frame position of each grid's first sample, metres
    dims : (P, 3) int64 samples per axis (at least 2)
    bone : (P,) int64 bone of each part
    cell : float, metres
    rest : (N, 3) float64 rest vertices
    part : (N,) int64 part of each vertex's heaviest bone, or -1 (the vertex does not move)
    own_bone : (N,) int64 heaviest bone of each vertex
    skip : (N,) uint64 bit ``s`` set where the vertex is not tested against part ``s``
    ring : (ptr (N + 1,), idx) int64 welded one-ring of the body (:func:`kisekae.geom.ring.one_ring`)
    order : (M,) int64 the vertices with a part, sorted by part (stable)
    part_start : (P + 1,) int64 part ``s``'s vertices at ``order[part_start[s]:part_start[s + 1]]``
    """

    grid: np.ndarray
    start: np.ndarray
    lo: np.ndarray
    dims: np.ndarray
    bone: np.ndarray
    cell: float
    rest: np.ndarray
    part: np.ndarray
    own_bone: np.ndarray
    skip: np.ndarray
    ring: tuple
    order: np.ndarray = None
    part_start: np.ndarray = None

    def __post_init__(self):
        if self.order is None:
            self.order = np.flatnonzero(self.part >= 0)[np.argsort(self.part[self.part >= 0], kind="stable")]
            self.part_start = np.searchsorted(self.part[self.order], np.arange(len(self.bone) + 1)).astype(np.int64)

    @property
    def n_parts(self) -> int:
        return len(self.bone)


def heaviest_bones(skin) -> np.ndarray:
    """(N,) int64 bone of each vertex's largest skin weight (the first of equal ones)."""
    idx = np.asarray(skin.indices, dtype=np.int64)
    return idx[np.arange(len(idx)), np.argmax(np.asarray(skin.weights), axis=1)]


def skip_masks(skin, parents, bones) -> np.ndarray:
    """(N,) uint64: bit ``s`` set where a bone that skins the vertex (weight > 0) is ``bones[s]``, its parent or its
    child, so the vertex is not tested against that part (the joint's own fold)."""
    parents = np.asarray(parents, dtype=np.int64)
    idx = np.asarray(skin.indices, dtype=np.int64)
    live = np.asarray(skin.weights) > 0
    parent_of = np.where(idx >= 0, parents[np.clip(idx, 0, None)], -2)
    mask = np.zeros(len(idx), dtype=np.uint64)
    for s, b in enumerate(np.asarray(bones, dtype=np.int64)):
        near = live & ((idx == b) | (idx == parents[b]) | (parent_of == b))
        mask[near.any(axis=1)] |= np.uint64(1) << np.uint64(s)
    return mask


def field_parts(owner, min_vertices: int = MIN_PART_VERTICES, max_parts: int = MAX_PARTS) -> np.ndarray:
    """(P,) int64 bones that get a field: owners of at least ``min_vertices`` vertices, the ``max_parts`` largest,
    in bone order."""
    bones, count = np.unique(owner, return_counts=True)
    order = np.lexsort((bones, -count))
    keep = order[count[order] >= min_vertices][:max_parts]
    return np.sort(bones[keep]).astype(np.int64)


def _part_grid(rest, faces, sel, cell: float, margin: float):
    from ..geom.bvh import build_bvh, refit
    from ..geom.closest import surface_distance
    from ..geom.winding import winding_number

    tris = faces[sel[faces].sum(axis=1) >= 2]
    # half a cell more below: the part's extreme vertices (and the mirror planes of a symmetric part) fall mid-cell,
    # not on a cell face where the trilinear gradient jumps and rounding would pick either side
    lo = rest[sel].min(axis=0) - margin - 0.5 * cell
    dims = np.ceil((rest[sel].max(axis=0) + margin - lo) / cell).astype(np.int64) + 1
    axes = [lo[k] + cell * np.arange(dims[k]) for k in range(3)]
    pts = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    bvh = build_bvh(rest, tris)
    state = refit(bvh, rest, tris)
    d, _ = surface_distance(pts, bvh, state)
    return np.where(winding_number(pts, bvh, state) > 0.5, -d, d), lo, dims


def bake_part_fields(rest_vertices, faces, skin, parents, *, weld=None, edges=None, cell: float = CELL,
                     margin: float = MARGIN, min_vertices: int = MIN_PART_VERTICES) -> PartFields:
    """The part fields of a body (about 1 s for the built-in body's 20 parts at 1 cm).

    Parameters
    ----------
    rest_vertices : (N, 3) rest positions, metres
    faces : (F, 3) int triangles
    skin : :class:`kisekae.avatar.skinning.Skin`
    parents : (B,) int parent of each bone (-1 for a root)
    weld, edges : the body mesh's ``weld`` and ``edges`` (:class:`kisekae.avatar.mesh.Mesh`), for the one-ring;
        None: the triangles' edges, no welding
    cell, margin : float, metres
    min_vertices : int

    Returns
    -------
    PartFields
    """
    rest = as_points(rest_vertices, "body rest vertices")
    faces = as_faces(faces, len(rest), "body faces")
    if not (np.isfinite(cell) and cell > 0 and np.isfinite(margin) and margin >= cell):
        raise KisekaeError(f"need a cell > 0 and a margin >= the cell, got cell {cell!r}, margin {margin!r}",
                           "part fields")
    owner = heaviest_bones(skin)
    bones = field_parts(owner, min_vertices)
    grids, lows, dims = [], [], []
    for b in bones:
        g, lo, n = _part_grid(rest, faces, owner == b, float(cell), float(margin))
        grids.append(g)
        lows.append(lo)
        dims.append(n)
    part_of = np.full(int(max(np.max(owner), np.max(bones, initial=-1))) + 1, -1, dtype=np.int64)
    part_of[bones] = np.arange(len(bones))
    if edges is None:
        e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
        edges = np.unique(np.sort(e, axis=1), axis=0)
    return PartFields(
        grid=np.concatenate(grids) if grids else np.zeros(0), start=np.concatenate([[0], np.cumsum(
            [g.size for g in grids], dtype=np.int64)]).astype(np.int64),
        lo=np.array(lows, dtype=np.float64).reshape(-1, 3), dims=np.array(dims, dtype=np.int64).reshape(-1, 3),
        bone=bones, cell=float(cell), rest=rest, part=part_of[owner], own_bone=owner,
        skip=skip_masks(skin, parents, bones), ring=one_ring(len(rest), edges, weld))


def sample_field_numpy(fields: PartFields, s: int, points) -> tuple:
    """Part ``s``'s field at rest-frame ``points (M, 3)``, trilinear: ``(value (M,), gradient (M, 3), inside (M,))``;
    outside the grid the value is ``inf`` and the gradient zero."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    dims = fields.dims[s]
    f = (p - fields.lo[s]) / fields.cell
    inside = np.all((f >= 0) & (f <= dims - 1), axis=1)
    i = np.clip(np.floor(f).astype(np.int64), 0, dims - 2)
    t = np.where(inside[:, None], f - i, 0.0)
    g = fields.grid[fields.start[s]:fields.start[s + 1]].reshape(tuple(dims))
    c = np.empty((len(p), 2, 2, 2))
    for a in (0, 1):
        for b in (0, 1):
            for k in (0, 1):
                c[:, a, b, k] = g[i[:, 0] + a, i[:, 1] + b, i[:, 2] + k]
    wx = np.stack([1 - t[:, 0], t[:, 0]], 1)
    wy = np.stack([1 - t[:, 1], t[:, 1]], 1)
    wz = np.stack([1 - t[:, 2], t[:, 2]], 1)
    dw = np.array([-1.0, 1.0])
    value = np.einsum("nabk,na,nb,nk->n", c, wx, wy, wz)
    grad = np.stack([np.einsum("nabk,a,nb,nk->n", c, dw, wy, wz), np.einsum("nabk,na,b,nk->n", c, wx, dw, wz),
                     np.einsum("nabk,na,nb,k->n", c, wx, wy, dw)], axis=1) / fields.cell
    return np.where(inside, value, np.inf), np.where(inside[:, None], grad, 0.0), inside


def check_settings(gap, band, deep) -> None:
    """Raise :class:`KisekaeError` unless ``gap >= 0`` and ``band, deep > 0`` are finite numbers of metres."""
    for name, v, low in (("gap", gap, 0.0), ("band", band, 1e-9), ("deep", deep, 1e-9)):
        if isinstance(v, bool) or not (isinstance(v, (int, float, np.integer, np.floating)) and np.isfinite(v)
                                       and v >= low):
            raise KisekaeError(f"{name} must be a finite number of metres >= {low:g}, got {v!r}", "part contact")


def _check(points, fields: PartFields, skin_matrices, gap, band, deep):
    if not isinstance(fields, PartFields):
        raise KisekaeError(f"need PartFields (bake_part_fields), got {type(fields).__name__}", "part contact")
    p = as_points(points, "posed body vertices")
    if len(p) != len(fields.rest):
        raise KisekaeError(f"fields baked for {len(fields.rest)} body vertices, got {len(p)}", "part contact")
    m = np.asarray(skin_matrices, dtype=np.float64)
    if m.ndim != 3 or m.shape[1:] != (4, 4) or len(m) <= int(np.max(fields.own_bone, initial=-1)):
        raise KisekaeError(f"need (B, 4, 4) skinning matrices for the body's bones, got shape {m.shape}",
                           "part contact")
    if not np.all(np.isfinite(m)):
        raise KisekaeError("skinning matrices contain NaN or infinity", "part contact")
    check_settings(gap, band, deep)
    inv = np.linalg.inv(m)
    return p.astype(np.float64), np.ascontiguousarray(inv), float(gap), float(band), float(deep)


def _moves(fb, gb, fa, ga, fbr, far, gap, band, deep):
    """The move of vertices against one part (NumPy, the formulas of :func:`_move`), (M, 3) world metres."""
    target = np.minimum(gap, np.where(np.isfinite(fbr), fbr - far - band - 1e-6, np.inf))
    g = fb - fa
    t = np.maximum(band - np.abs(g - target), 0.0) / band
    step = np.maximum(g, target) + t * t * band / 4 - g
    step = np.where(g < target + band, step * np.clip(2.0 - (-fb) / deep, 0.0, 1.0), 0.0)
    nb = np.sqrt(np.einsum("ij,ij->i", gb, gb))
    na = np.sqrt(np.einsum("ij,ij->i", ga, ga))
    ok = (nb > 1e-6) & (na > 1e-6)
    cos = np.where(ok, np.einsum("ij,ij->i", gb, ga) / np.where(ok, nb * na, 1.0), 0.0)
    d = gb - np.maximum(-cos, 0.0)[:, None] * ga
    dn = np.sqrt(np.einsum("ij,ij->i", d, d))
    length = np.minimum(step / np.maximum(dn, MIN_SPREAD), MAX_MOVE)
    return np.where(((dn > 1e-6) & (step != 0.0))[:, None], (length / np.where(dn > 1e-6, dn, 1.0))[:, None] * d,
                    0.0)


def part_step_numpy(points, fields: PartFields, skin_matrices, *, gap: float = GAP, band: float = BAND,
                    deep: float = DEEP) -> np.ndarray:
    """One contact step against the other parts' fields, NumPy reference: each vertex's moves against every
    other part, all from its input position, added.

    Parameters
    ----------
    points : (N, 3) posed body, metres
    fields : PartFields
    skin_matrices : (B, 4, 4) the pose's skinning matrices (rest to posed)
    gap, band, deep : float, metres

    Returns
    -------
    (N, 3) float64
    """
    p, inv, gap, band, deep = _check(points, fields, skin_matrices, gap, band, deep)
    a = fields.part
    out = p.copy()
    for s, b in enumerate(fields.bone):
        act = np.flatnonzero((a >= 0) & ((fields.skip >> np.uint64(s)) & np.uint64(1) == 0))
        if len(act) == 0:
            continue
        q = p[act]
        fb, gb, _ = sample_field_numpy(fields, s, q @ inv[b, :3, :3].T + inv[b, :3, 3])
        near = np.flatnonzero(fb <= gap + band)
        if len(near) == 0:
            continue
        act, q, fb, gb = act[near], q[near], fb[near], gb[near]
        own = fields.own_bone[act]
        qa = np.einsum("nij,nj->ni", inv[own, :3, :3], q) + inv[own, :3, 3]
        fa, ga, fbr, far = (np.zeros(len(act)), np.zeros((len(act), 3)), np.zeros(len(act)), np.zeros(len(act)))
        rest = fields.rest[act]
        fbr = sample_field_numpy(fields, s, rest)[0]
        for sa in np.unique(a[act]):
            k = np.flatnonzero(a[act] == sa)
            v, g, ins = sample_field_numpy(fields, sa, qa[k])
            fa[k] = np.where(ins, v, 0.0)
            ga[k] = g
            v, _, ins = sample_field_numpy(fields, sa, rest[k])
            far[k] = np.where(ins, v, 0.0)
        # gradients to the world: the inverse transpose of the rest-to-posed map
        wb = gb @ inv[b, :3, :3]
        wa = np.einsum("ni,nij->nj", ga, inv[own, :3, :3])
        out[act] += _moves(fb, wb, fa, wa, fbr, far, gap, band, deep)
    return out


@numba.njit(cache=True, inline="always")
def _sample(grid, start, lo, dims, h, s, x, y, z):  # pragma: no cover - compiled
    """:func:`sample_field_numpy` at one point: ``(value, gx, gy, gz, inside)``."""
    fx = (x - lo[s, 0]) / h
    fy = (y - lo[s, 1]) / h
    fz = (z - lo[s, 2]) / h
    nx, ny, nz = dims[s, 0], dims[s, 1], dims[s, 2]
    if not (fx >= 0 and fy >= 0 and fz >= 0 and fx <= nx - 1 and fy <= ny - 1 and fz <= nz - 1):
        return np.inf, 0.0, 0.0, 0.0, False
    ix, iy, iz = min(int(np.floor(fx)), nx - 2), min(int(np.floor(fy)), ny - 2), min(int(np.floor(fz)), nz - 2)
    tx, ty, tz = fx - ix, fy - iy, fz - iz
    i0 = start[s] + (ix * ny + iy) * nz + iz
    sx, sy = ny * nz, nz
    c0, c1, c2, c3 = grid[i0], grid[i0 + 1], grid[i0 + sy], grid[i0 + sy + 1]
    c4, c5, c6, c7 = grid[i0 + sx], grid[i0 + sx + 1], grid[i0 + sx + sy], grid[i0 + sx + sy + 1]
    a00, a01 = c0 * (1 - tz) + c1 * tz, c2 * (1 - tz) + c3 * tz
    a10, a11 = c4 * (1 - tz) + c5 * tz, c6 * (1 - tz) + c7 * tz
    b0, b1 = a00 * (1 - ty) + a01 * ty, a10 * (1 - ty) + a11 * ty
    gz0 = (c1 - c0) * (1 - ty) + (c3 - c2) * ty
    gz1 = (c5 - c4) * (1 - ty) + (c7 - c6) * ty
    return (b0 * (1 - tx) + b1 * tx, (b1 - b0) / h, ((a01 - a00) * (1 - tx) + (a11 - a10) * tx) / h,
            (gz0 * (1 - tx) + gz1 * tx) / h, True)


@numba.njit(cache=True, inline="always")
def _to_rest(inv, b, p0, p1, p2):  # pragma: no cover - compiled
    return (inv[b, 0, 0] * p0 + inv[b, 0, 1] * p1 + inv[b, 0, 2] * p2 + inv[b, 0, 3],
            inv[b, 1, 0] * p0 + inv[b, 1, 1] * p1 + inv[b, 1, 2] * p2 + inv[b, 1, 3],
            inv[b, 2, 0] * p0 + inv[b, 2, 1] * p1 + inv[b, 2, 2] * p2 + inv[b, 2, 3])


@numba.njit(cache=True, inline="always")
def _to_world_gradient(inv, b, g0, g1, g2):  # pragma: no cover - compiled
    return (g0 * inv[b, 0, 0] + g1 * inv[b, 1, 0] + g2 * inv[b, 2, 0],
            g0 * inv[b, 0, 1] + g1 * inv[b, 1, 1] + g2 * inv[b, 2, 1],
            g0 * inv[b, 0, 2] + g1 * inv[b, 1, 2] + g2 * inv[b, 2, 2])


@numba.njit(cache=True, error_model="numpy")
def _part_step_kernel(p, grid, start, lo, dims, h, bone, rest, own_bone, skip, order, part_start, inv, active, gap,
                      band, deep):  # pragma: no cover - compiled
    """:func:`part_step_numpy`'s moves, pair by pair of the broad phase (``active``), added to a copy of ``p``."""
    out = p.copy()
    for s in range(bone.shape[0]):
        for sa in range(bone.shape[0]):
            if not active[sa, s]:
                continue
            for j in range(part_start[sa], part_start[sa + 1]):
                i = order[j]
                if (skip[i] >> np.uint64(s)) & np.uint64(1):
                    continue
                ob = own_bone[i]
                r0, r1, r2 = rest[i, 0], rest[i, 1], rest[i, 2]
                b = bone[s]
                y0, y1, y2 = _to_rest(inv, b, p[i, 0], p[i, 1], p[i, 2])
                fb, bx, by, bz, ok = _sample(grid, start, lo, dims, h, s, y0, y1, y2)
                if not ok or fb > gap + band:
                    continue
                fbr = _sample(grid, start, lo, dims, h, s, r0, r1, r2)[0]
                y0, y1, y2 = _to_rest(inv, ob, p[i, 0], p[i, 1], p[i, 2])
                fa, ax, ay, az, ok_a = _sample(grid, start, lo, dims, h, sa, y0, y1, y2)
                if not ok_a:
                    fa = 0.0
                far, _, _, _, ok_r = _sample(grid, start, lo, dims, h, sa, r0, r1, r2)
                if not ok_r:
                    far = 0.0
                target = gap
                if np.isfinite(fbr):
                    target = min(gap, fbr - far - band - 1e-6)
                g = fb - fa
                if g >= target + band:
                    continue
                t = max(band - abs(g - target), 0.0) / band
                step = (max(g, target) + t * t * band / 4 - g) * min(max(2.0 - (-fb) / deep, 0.0), 1.0)
                bx, by, bz = _to_world_gradient(inv, b, bx, by, bz)
                ax, ay, az = _to_world_gradient(inv, ob, ax, ay, az)
                nb = np.sqrt(bx * bx + by * by + bz * bz)
                na = np.sqrt(ax * ax + ay * ay + az * az)
                cos = 0.0
                if nb > 1e-6 and na > 1e-6:
                    cos = (bx * ax + by * ay + bz * az) / (nb * na)
                k = max(-cos, 0.0)
                dx, dy, dz = bx - k * ax, by - k * ay, bz - k * az
                dn = np.sqrt(dx * dx + dy * dy + dz * dz)
                if dn <= 1e-6 or step == 0.0:
                    continue
                length = min(step / max(dn, MIN_SPREAD), MAX_MOVE) / dn
                out[i, 0] += length * dx
                out[i, 1] += length * dy
                out[i, 2] += length * dz
    return out


def part_step(points, fields: PartFields, skin_matrices, *, gap: float = GAP, band: float = BAND,
              deep: float = DEEP) -> np.ndarray:
    """:func:`part_step_numpy` as a Numba kernel (one core): (N, 3) float64."""
    p, inv, gap, band, deep = _check(points, fields, skin_matrices, gap, band, deep)
    return _part_step_kernel(p, fields.grid, fields.start, fields.lo, fields.dims, fields.cell, fields.bone,
                             fields.rest, fields.own_bone, fields.skip, fields.order, fields.part_start, inv,
                             active_pairs(fields, p, skin_matrices), gap, band, deep)


def active_pairs(fields: PartFields, points, skin_matrices) -> np.ndarray:
    """(P, P) bool ``[a, s]``: the box around part ``a``'s posed vertices meets the box around part ``s``'s posed
    grid (its eight corners moved by the bone), both grown by 1 mm. Where it does not, no vertex of ``a`` is inside
    ``s``'s grid, so :func:`part_step` skips the pair (the broad phase: the same result as testing every vertex)."""
    m = np.ascontiguousarray(np.asarray(skin_matrices, dtype=np.float64)[fields.bone])
    return _active_kernel(np.asarray(points, dtype=np.float64), fields.order, fields.part_start, fields.lo,
                          fields.dims, fields.cell, m)


@numba.njit(cache=True)
def _active_kernel(p, order, part_start, lo, dims, h, m):  # pragma: no cover - compiled
    n = m.shape[0]
    box = np.empty((n, 2, 3))
    grid = np.empty((n, 2, 3))
    for s in range(n):
        for k in range(3):
            box[s, 0, k] = np.inf
            box[s, 1, k] = -np.inf
            grid[s, 0, k] = np.inf
            grid[s, 1, k] = -np.inf
        for j in range(part_start[s], part_start[s + 1]):
            for k in range(3):
                box[s, 0, k] = min(box[s, 0, k], p[order[j], k] - 1e-3)
                box[s, 1, k] = max(box[s, 1, k], p[order[j], k] + 1e-3)
        for c in range(8):
            x = lo[s, 0] + (c >> 2) * (dims[s, 0] - 1) * h
            y = lo[s, 1] + ((c >> 1) & 1) * (dims[s, 1] - 1) * h
            z = lo[s, 2] + (c & 1) * (dims[s, 2] - 1) * h
            for k in range(3):
                w = m[s, k, 0] * x + m[s, k, 1] * y + m[s, k, 2] * z + m[s, k, 3]
                grid[s, 0, k] = min(grid[s, 0, k], w - 1e-3)
                grid[s, 1, k] = max(grid[s, 1, k], w + 1e-3)
    active = np.zeros((n, n), dtype=np.bool_)
    for a in range(n):
        for s in range(n):
            if a != s:
                active[a, s] = (box[a, 0, 0] <= grid[s, 1, 0] and box[a, 1, 0] >= grid[s, 0, 0] and box[a, 0, 1] <= grid[
                    s, 1, 1] and box[a, 1, 1] >= grid[s, 0, 1] and box[a, 0, 2] <= grid[s, 1, 2] and box[a, 1, 2] >= grid[
                    s, 0, 2])
    return active


def part_contact(points, fields: PartFields, skin_matrices, *, gap: float = GAP, band: float = BAND,
                 deep: float = DEEP, passes: int = PASSES, numpy: bool = False) -> np.ndarray:
    """The whole step: :func:`part_step`, :data:`PASSES` one-ring passes of its moves
    (:func:`kisekae.geom.ring.smooth_push`), and :func:`part_step` again from there.

    Parameters
    ----------
    points : (N, 3) posed body (skinned, after the joint planes), metres
    fields : PartFields
    skin_matrices : (B, 4, 4)
    gap, band, deep : float, metres
    passes : int >= 0
    numpy : bool, the NumPy reference instead of the kernels

    Returns
    -------
    (N, 3) float64
    """
    if isinstance(passes, bool) or not isinstance(passes, (int, np.integer)) or passes < 0:
        raise KisekaeError(f"passes must be a whole number >= 0, got {passes!r}", "part contact")
    step = part_step_numpy if numpy else part_step
    smooth = smooth_push_numpy if numpy else smooth_push
    x = as_points(points, "posed body vertices").astype(np.float64)
    y = step(x, fields, skin_matrices, gap=gap, band=band, deep=deep)
    if passes == 0 or not np.any(y != x):
        return y  # nothing moved: the second step would give the same
    return step(x + smooth(y - x, fields.ring, int(passes)), fields, skin_matrices, gap=gap, band=band, deep=deep)


@dataclass
class PartContact:
    """The step as a body's ``deform`` (:class:`kisekae.avatar.avatar.SkinnedMesh`), after ``before`` (the joint
    planes, the correctives and planes, or None for plain skinning). :meth:`kisekae.avatar.avatar.Avatar.with_part_contact`
    makes one.

    Attributes
    ----------
    before : deform or None
    fields : PartFields
    gap, band, deep : float, metres
    passes : int
    """

    before: object
    fields: PartFields
    gap: float = GAP
    band: float = BAND
    deep: float = DEEP
    passes: int = PASSES

    def check(self) -> None:
        """Raise :class:`KisekaeError` for settings out of range."""
        if self.before is not None and hasattr(self.before, "check"):
            self.before.check()
        check_settings(self.gap, self.band, self.deep)
        if isinstance(self.passes, bool) or not isinstance(self.passes, (int, np.integer)) or self.passes < 0:
            raise KisekaeError(f"passes must be a whole number >= 0, got {self.passes!r}", "part contact")

    def __call__(self, points, skin_matrices) -> np.ndarray:
        y = points if self.before is None else self.before(points, skin_matrices)
        return self._after(y, skin_matrices)

    def pose(self, rest_vertices, skin, skin_matrices) -> np.ndarray:
        """(N, 3) float32 body of ``skin_matrices`` from its rest mesh: ``before`` (its one-pass ``pose`` where it
        has one), then the step."""
        from .skinning import lbs

        if self.before is not None and hasattr(self.before, "pose"):
            y = self.before.pose(rest_vertices, skin, skin_matrices)
        else:
            y = lbs(rest_vertices, skin.indices, skin.weights, skin_matrices)
            y = y if self.before is None else self.before(y, skin_matrices)
        return self._after(y, skin_matrices)

    def _after(self, y, skin_matrices) -> np.ndarray:
        return part_contact(y, self.fields, skin_matrices, gap=self.gap, band=self.band, deep=self.deep,
                            passes=self.passes).astype(np.float32)

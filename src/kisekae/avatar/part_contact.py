"""Contact between body parts that share no joint: a hand on the hip, an arm against the chest, the feet together.

The joint planes (:mod:`kisekae.avatar.contact`) settle the fold where two bones blend. Parts that meet away from
any joint they share, a forearm pressed into the belly or one thigh into the other, pass through each other under
linear blend skinning, and no plane separates them. This step is the per-bone distance fields of implicit skinning
(Vaillant et al. 2013), reduced to what a vertex stage can afford. The command line's contact body runs it last
(:func:`kisekae.avatar.contact.apply_contact`, ``--no-part-contact`` to compare).

Bake, once per body (:func:`bake_part_fields`, :func:`cached_part_fields`): each *part* (the vertices whose heaviest
bone is one bone; parts of at least :data:`MIN_PART_VERTICES` vertices and :data:`MIN_DEPTH_CELLS` cells thick, at
most :data:`MAX_PARTS`) gets a grid of the signed distance to its own triangles and its gradient in the rest frame
(:data:`CELL` cells, or :data:`FINE_CELL` for a part too thin for them, such as a hand; :data:`MARGIN` around the
part; negative inside, the sign from the part's winding number, so the open cut where it meets the next part closes
along w = 0.5). Each vertex gets a mask of the parts it is *not* tested
against: any bone that skins it, and the parents and children of those bones (the joints' own folds, which the
planes handle).

Per frame (:func:`part_contact`): a vertex of part A that comes within ``gap + band`` of another part B's field (B's
grid moved rigidly by B's bone) moves towards the contact surface ``f_B - f_A = gap`` (the offset bisector of
the two fields), through a smooth maximum over ``band``; the target never exceeds the vertex's rest value
``f_B - f_A`` minus ``band``, so the rest pose, and creases that already touch at rest, stay exactly as they are.
The move runs along ``grad f_B - max(-cos, 0) grad f_A``: the bisector's direction where the two surfaces face each
other, B's normal where they do not (a thin part inside a thick one), and is at most :attr:`PartFields.reach` (half
the part's thickness, at most :data:`MAX_MOVE`). Each pair's moves are scaled by :func:`pair_fade`: pairs lying
deeper than :data:`DEEP` in each other fade to nothing at twice that, and so do all pairs of their parts: a forearm
buried in the chest is a pose no vertex step can repair, and a partial repair tears it. The moves are spread over
the one-ring (:func:`kisekae.geom.ring.smooth_push`, :data:`PASSES` passes: pushes grow to the neighbours, none
shrinks) and the step is taken once more from there (:func:`part_step` is one step). Last, the flip guard
(:mod:`kisekae.avatar.flip_guard`) halves, then undoes, the moves around any body triangle that the step turned
over (a heavy body's hand pressed into its hip turned the wrist's triangles over).

Far from contact it equals its input bit for bit; the body of a pose without such contacts (every named pose of the
built-in avatar) is unchanged. Measurements and the choices behind the constants: docs/contact.md
"Contact between parts that share no joint". The HLSL core's ``kisekae_part_contact.hlsl`` is the same step;
:mod:`kisekae.shaders.part_bake` writes its data for an engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from ..errors import KisekaeError
from ..geom.edges import unique_edges
from ..geom.ring import nonzero_rows, one_ring, smooth_push, smooth_push_numpy, vertex_faces
from ..geom.spatial_order import spatial_order
from .flip_guard import (GUARD_COS, GUARD_HALVINGS, GUARD_REVERTS, _guard_kernel, check_face_table,
                         flip_guard_numpy)
from ..validate import as_faces, as_points

#: Version of the step's rules, part of the garment bakes' cache keys (:func:`kisekae.fit.runtime.candidates_cache_key`):
#: a change to how the body is posed must not reuse bakes made on the old body.
VERSION = 4  # 2: the flip guard ends the step; 3: thin parts get a finer grid (FINE_CELL); 4: six undoing passes
#: Grid cell of the part fields, metres.
CELL = 0.01
#: Grid margin around each part, metres.
MARGIN = 0.03
#: Parts with fewer vertices (fingers, clavicles) get no field: they are neither tested against nor moved.
MIN_PART_VERTICES = 150
#: At most this many parts get a field (the largest; one 64-bit mask per vertex).
MAX_PARTS = 64
#: A part whose deepest point lies less than this many cells inside it gets no field at that cell (at 1 cm the built-in
#: body's hands, 17 mm, and toes, 11 mm: two hands pressed together flipped their faces with one) ...
MIN_DEPTH_CELLS = 2.0
#: ... and is baked again at this finer cell (metres), where it gets a field if it is MIN_DEPTH_CELLS of these deep: the
#: built-in body's hands and toes, so a hand on the hip keeps out of it.
FINE_CELL = 0.005
#: Gap left between two parts in contact, metres.
GAP = 0.004
#: Width of the smooth maximum, metres.
BAND = 0.01
#: How deep (metres) two parts may lie in each other and still move fully; their pair fades to none at twice this
#: depth (:func:`pair_fade`).
DEEP = 0.02
#: Largest move of one vertex against one part, metres.
MAX_MOVE = 0.03
#: ... and at most this fraction of its own part's thickness (its deepest point's depth): a thin part (a heavy body's
#: hand, 22 mm) pressed into the belly is not pushed through itself.
REACH_FRACTION = 0.5
#: Floor of the length of the move direction before normalising (a move at most ``1 / MIN_SPREAD`` times its step).
MIN_SPREAD = 0.5
#: One-ring smoothing passes between the two steps of :func:`part_contact`.
PASSES = 8
#: Metres kept between a vertex's rest value ``f_B - f_A`` (less the band) and its target.
REST_SLACK = 1e-6
#: Vertices per run of the broad phase: a part's vertices are walked in runs this long (Morton order of the rest
#: positions within the part, so a run stays compact in every pose), and a run whose box cannot reach another part's
#: grid is skipped as a whole (:func:`_depth_kernel`).
CHUNK = 32


@dataclass
class PartFields:
    """What :func:`part_step` reads, baked once per body by :func:`bake_part_fields`.

    Attributes
    ----------
    grid : (C, 4) float64 samples of all parts: signed distance (metres, negative inside) and its gradient (central
        differences, one-sided at the border), part ``s`` at ``grid[start[s]:start[s + 1]]`` in x-major order (index
        ``(ix * ny + iy) * nz + iz``). All four are interpolated trilinearly, so the gradient is continuous: a point
        on a cell face reads the same from either cell, and float32 (the shader) and float64 agree
    start : (P + 1,) int64
    lo : (P, 3) float64 rest-frame position of each grid's first sample, metres
    dims : (P, 3) int64 samples per axis (at least 2)
    bone : (P,) int64 bone of each part
    cell : float, metres, the grids' cell (``part_cell`` holds each part's: :data:`FINE_CELL` for thin parts)
    rest : (N, 3) float64 rest vertices
    part : (N,) int64 part of each vertex's heaviest bone, or -1 (the vertex does not move)
    own_bone : (N,) int64 heaviest bone of each vertex
    skip : (N,) uint64 bit ``s`` set where the vertex is not tested against part ``s``
    ring : (ptr (N + 1,), idx) int64 welded one-ring of the body (:func:`kisekae.geom.ring.one_ring`)
    order : (M,) int64 the vertices with a part, sorted by part, within a part in the Morton order of their rest
        positions (:func:`kisekae.geom.spatial_order.spatial_order`)
    part_start : (P + 1,) int64 part ``s``'s vertices at ``order[part_start[s]:part_start[s + 1]]``
    chunk_start : (K + 1,) int64, derived: run ``c`` of :data:`CHUNK` vertices (or fewer, at a part's end) at
        ``order[chunk_start[c]:chunk_start[c + 1]]``
    part_chunks : (P + 1,) int64, derived: part ``s``'s runs are ``part_chunks[s]:part_chunks[s + 1]``
    pair_live : (P, P) bool ``[a, s]``: some vertex of part ``a`` is tested against part ``s`` (a joint's pair is not)
    reach : (P,) float64 the largest move of a vertex of each part against one other part, metres:
        ``min(MAX_MOVE, REACH_FRACTION * depth)`` with ``depth`` the part's deepest sample's depth
    part_cell : (P,) float64 each part's grid cell, metres (None: ``cell`` for every part)
    faces : (F, 3) int64 the body's triangles, or None (no flip guard)
    vertex_faces : (ptr (N + 1,), idx) the faces around each welded vertex (:func:`kisekae.geom.ring.vertex_faces`),
        made from ``faces`` (and the weld the ring was made with) when None
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
    pair_live: np.ndarray = None
    reach: np.ndarray = None
    part_cell: np.ndarray = None
    faces: np.ndarray = None
    vertex_faces: tuple = None
    chunk_start: np.ndarray = field(init=False, repr=False)
    part_chunks: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        cell = np.full(len(self.bone), float(self.cell)) if self.part_cell is None else self.part_cell
        self.part_cell = np.ascontiguousarray(cell, dtype=np.float64).reshape(len(self.bone))
        if self.faces is not None:
            self.faces = np.ascontiguousarray(self.faces, dtype=np.int64).reshape(-1, 3)
            if self.vertex_faces is None:
                self.vertex_faces = vertex_faces(self.faces, len(self.rest), source="body faces")
            self.faces, *table = check_face_table(self.faces, self.vertex_faces, len(self.rest), "part fields")
            self.vertex_faces = tuple(table)
        if self.order is None:
            runs = [np.flatnonzero(self.part == s) for s in range(len(self.bone))]
            self.order = np.concatenate([np.zeros(0, np.int64)] + [v[spatial_order(self.rest[v])] for v in runs])
            self.part_start = np.concatenate([[0], np.cumsum([len(v) for v in runs])]).astype(np.int64)
        runs = [np.arange(self.part_start[s], self.part_start[s + 1], CHUNK) for s in range(len(self.bone))]
        self.chunk_start = np.concatenate([np.zeros(0, np.int64)] + runs + [self.part_start[-1:]]).astype(np.int64)
        self.part_chunks = np.concatenate([[0], np.cumsum([len(r) for r in runs])]).astype(np.int64)
        if self.pair_live is None:  # [a, s]: some vertex of part a is tested against part s
            n = len(self.bone)
            tested = (self.skip[self.order, None] >> np.arange(n, dtype=np.uint64)) & np.uint64(1) == 0
            self.pair_live = np.zeros((n, n), dtype=np.bool_)
            for a in range(n):
                self.pair_live[a] = tested[self.part_start[a]:self.part_start[a + 1]].any(axis=0)
            self.pair_live[np.arange(n), np.arange(n)] = False
        if self.reach is None:
            depth = np.array([max(-self.grid[self.start[s]:self.start[s + 1], 0].min(initial=0.0), 0.0)
                              for s in range(len(self.bone))], dtype=np.float64)
            self.reach = np.minimum(MAX_MOVE, REACH_FRACTION * depth)

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
    f = np.where(winding_number(pts, bvh, state) > 0.5, -d, d).reshape(tuple(dims))
    grad = np.gradient(f, cell, edge_order=1)
    return np.stack([f, *grad], axis=-1).reshape(-1, 4), lo, dims


def bake_part_fields(rest_vertices, faces, skin, parents, *, weld=None, edges=None, cell: float = CELL,
                     margin: float = MARGIN, min_vertices: int = MIN_PART_VERTICES,
                     fine_cell: float | None = FINE_CELL) -> PartFields:
    """The part fields of a body (about 1.5 s for the built-in body: 16 parts at 1 cm, hands and toes at 5 mm).

    Parameters
    ----------
    rest_vertices : (N, 3) rest positions, metres
    faces : (F, 3) int triangles
    skin : :class:`kisekae.avatar.skinning.Skin`
    parents : (B,) int parent of each bone (-1 for a root)
    weld, edges : the body mesh's ``weld`` and ``edges`` (:class:`kisekae.avatar.mesh.Mesh`), for the one-ring;
        None: no welding, the triangles' edges (between welded representatives with a ``weld``)
    cell, margin : float, metres
    min_vertices : int
    fine_cell : float or None, metres: a part too thin for ``cell`` (:data:`MIN_DEPTH_CELLS`) is baked again at this
        cell (None: it gets no field)

    Returns
    -------
    PartFields
    """
    rest = as_points(rest_vertices, "body rest vertices")
    faces = as_faces(faces, len(rest), "body faces")
    if not (np.isfinite(cell) and cell > 0 and np.isfinite(margin) and margin >= cell) or (
            fine_cell is not None and not (np.isfinite(fine_cell) and 0 < fine_cell <= cell)):
        raise KisekaeError(f"need a cell > 0, a margin >= the cell and a fine cell in (0, cell], got cell {cell!r}, "
                           f"margin {margin!r}, fine cell {fine_cell!r}", "part fields")
    owner = heaviest_bones(skin)
    grids, lows, dims, kept, cells = [], [], [], [], []
    for b in field_parts(owner, min_vertices):
        for h in (float(cell),) if fine_cell is None or fine_cell == cell else (float(cell), float(fine_cell)):
            g, lo, n = _part_grid(rest, faces, owner == b, h, float(margin))
            if -g[:, 0].min() >= MIN_DEPTH_CELLS * h:
                break  # else thinner than the grid resolves (a hand, the toes at 1 cm): its field would crush it
        else:
            continue  # too thin at every cell: no field
        grids.append(g)
        lows.append(lo)
        dims.append(n)
        kept.append(b)
        cells.append(h)
    bones = np.array(kept, dtype=np.int64)
    part_of = np.full(int(max(np.max(owner), np.max(bones, initial=-1))) + 1, -1, dtype=np.int64)
    part_of[bones] = np.arange(len(bones))
    if edges is None:
        edges = unique_edges(faces, weld, n_vertices=len(rest))
    return PartFields(
        grid=np.concatenate(grids) if grids else np.zeros((0, 4)), start=np.concatenate([[0], np.cumsum(
            [len(g) for g in grids], dtype=np.int64)]).astype(np.int64),
        lo=np.array(lows, dtype=np.float64).reshape(-1, 3), dims=np.array(dims, dtype=np.int64).reshape(-1, 3),
        bone=bones, cell=float(cell), part_cell=np.array(cells, dtype=np.float64), rest=rest, part=part_of[owner],
        own_bone=owner,
        skip=skip_masks(skin, parents, bones), ring=one_ring(len(rest), edges, weld), faces=faces,
        vertex_faces=vertex_faces(faces, len(rest), weld, "body faces"))


def sample_field_numpy(fields: PartFields, s: int, points) -> tuple:
    """Part ``s``'s field at rest-frame ``points (M, 3)``, trilinear: ``(value (M,), gradient (M, 3), inside (M,))``;
    outside the grid the value is ``inf`` and the gradient zero."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    dims = fields.dims[s]
    f = (p - fields.lo[s]) / fields.part_cell[s]
    inside = np.all((f >= 0) & (f <= dims - 1), axis=1)
    i = np.clip(np.floor(f).astype(np.int64), 0, dims - 2)
    t = np.where(inside[:, None], f - i, 0.0)
    g = fields.grid[fields.start[s]:fields.start[s + 1]].reshape(*dims, 4)
    out = np.zeros((len(p), 4))
    for a in (0, 1):
        for b in (0, 1):
            for k in (0, 1):
                w = (t[:, 0] if a else 1 - t[:, 0]) * (t[:, 1] if b else 1 - t[:, 1]) * (t[:, 2] if k else 1 - t[:, 2])
                out += w[:, None] * g[i[:, 0] + a, i[:, 1] + b, i[:, 2] + k]
    return np.where(inside, out[:, 0], np.inf), np.where(inside[:, None], out[:, 1:], 0.0), inside


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
    return p.astype(np.float64), m, float(gap), float(band), float(deep)


#: A part bone's skinning matrix whose 3 x 3 determinant is below this is singular (a bone scaled to zero, as
#: animations hide props): its part neither moves nor pushes that frame.
MIN_DETERMINANT = 1e-12


def bone_inverses(skin_matrices, bones=None) -> np.ndarray:
    """(B, 4, 4) inverse of each skinning matrix, or only of ``bones`` (the others zero); zeros for a singular one
    (:data:`MIN_DETERMINANT`)."""
    m = np.asarray(skin_matrices, dtype=np.float64)
    inv = np.zeros_like(m)
    which = np.arange(len(m)) if bones is None else np.asarray(bones, dtype=np.int64)
    sub = m[which]
    live = np.abs(np.linalg.det(sub[:, :3, :3])) > MIN_DETERMINANT
    if live.any():
        inv[which[live]] = np.linalg.inv(sub[live])
    return np.ascontiguousarray(inv)


def live_parts(fields: PartFields, skin_matrices) -> np.ndarray:
    """(P,) bool: the parts whose bone's skinning matrix is not singular this frame."""
    m = np.asarray(skin_matrices, dtype=np.float64)[fields.bone]
    return np.abs(np.linalg.det(m[:, :3, :3])) > MIN_DETERMINANT


def _moves(fb, gb, fa, ga, fbr, far, gap, band, fade, reach):
    """The moves of vertices against one part (NumPy; ``fade`` (M,) their pairs' :func:`pair_fade`, ``reach`` (M,)
    their parts' :attr:`PartFields.reach`), (M, 3) world metres."""
    target = np.minimum(gap, np.where(np.isfinite(fbr), fbr - far - band - REST_SLACK, np.inf))
    g = fb - fa
    t = np.maximum(band - np.abs(g - target), 0.0) / band
    step = np.maximum(g, target) + t * t * band / 4 - g
    step = np.where(g < target + band, step * fade, 0.0)
    nb = np.sqrt(np.einsum("ij,ij->i", gb, gb))
    na = np.sqrt(np.einsum("ij,ij->i", ga, ga))
    ok = (nb > 1e-6) & (na > 1e-6)
    cos = np.where(ok, np.einsum("ij,ij->i", gb, ga) / np.where(ok, nb * na, 1.0), 0.0)
    d = gb - np.maximum(-cos, 0.0)[:, None] * ga
    dn = np.sqrt(np.einsum("ij,ij->i", d, d))
    length = np.minimum(step / np.maximum(dn, MIN_SPREAD), reach)
    return np.where(((dn > 1e-6) & (step != 0.0))[:, None], (length / np.where(dn > 1e-6, dn, 1.0))[:, None] * d,
                    0.0)


def _tested(fields: PartFields, s: int, live) -> np.ndarray:
    """The vertices that move and are tested against part ``s`` (none when ``s`` is not ``live``)."""
    if not live[s]:
        return np.zeros(0, dtype=np.int64)
    mine = np.where(fields.part >= 0, live[np.clip(fields.part, 0, None)], False)
    return np.flatnonzero(mine & ((fields.skip >> np.uint64(s)) & np.uint64(1) == 0))


def pair_depths_numpy(points, fields: PartFields, skin_matrices) -> np.ndarray:
    """(P, P) ``[a, s]``: how deep (metres, >= 0) the deepest vertex of part ``a`` that is tested against part ``s``
    lies inside ``s``'s field, NumPy reference."""
    p, m, *_ = _check(points, fields, skin_matrices, GAP, BAND, DEEP)
    inv = bone_inverses(m, fields.bone)  # the parts' bones only: the steps read no other
    depth = np.zeros((fields.n_parts, fields.n_parts))
    live = live_parts(fields, skin_matrices)
    for s, b in enumerate(fields.bone):
        act = _tested(fields, s, live)
        fb = sample_field_numpy(fields, s, p[act] @ inv[b, :3, :3].T + inv[b, :3, 3])[0]
        inside = fb < 0
        np.maximum.at(depth[:, s], fields.part[act][inside], -fb[inside])
    return depth


def pair_fade(depths, deep: float = DEEP, live=None) -> np.ndarray:
    """(P, P) factor of each pair's moves: 1 while the deeper of the pair's two :func:`pair_depths_numpy` is at
    most ``deep``, falling linearly to 0 at twice that, and no more than the least factor of any pair of either part.
    A forearm buried in the chest is a pose no vertex step can repair, and a partial repair tears it: the forearm and
    the chest are then left alone, also where they touch something else. With ``live`` (:func:`live_parts`), the
    pairs of parts that are not are 0."""
    d = np.asarray(depths, dtype=np.float64)
    fade = np.clip(2.0 - np.maximum(d, d.T) / float(deep), 0.0, 1.0)
    part = fade.min(axis=1, initial=1.0)
    fade = np.minimum(fade, np.minimum(part[:, None], part[None, :]))
    if live is not None:  # a part whose bone is singular this frame (live_parts): 0 for all its pairs
        fade = fade * (np.asarray(live)[:, None] & np.asarray(live)[None, :])
    return fade


def part_step_numpy(points, fields: PartFields, skin_matrices, *, gap: float = GAP, band: float = BAND,
                    deep: float = DEEP, fade=None) -> np.ndarray:
    """One contact step against the other parts' fields, NumPy reference: each vertex's moves against every
    other part, all from its input position, added.

    Parameters
    ----------
    points : (N, 3) posed body, metres
    fields : PartFields
    skin_matrices : (B, 4, 4) the pose's skinning matrices (rest to posed)
    gap, band, deep : float, metres
    fade : (P, P) or None, :func:`pair_fade` (None: of these points)

    Returns
    -------
    (N, 3) float64
    """
    p, m, gap, band, deep = _check(points, fields, skin_matrices, gap, band, deep)
    inv = bone_inverses(m, fields.bone)
    if fade is None:
        fade = pair_fade(pair_depths_numpy(p, fields, skin_matrices), deep, live_parts(fields, skin_matrices))
    a = fields.part
    out = p.copy()
    live = live_parts(fields, skin_matrices)
    for s, b in enumerate(fields.bone):
        act = _tested(fields, s, live)
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
        out[act] += _moves(fb, wb, fa, wa, fbr, far, gap, band, fade[a[act], s], fields.reach[a[act]])
    return out


@numba.njit(cache=True, inline="always")
def _sample(grid, start, lo, dims, h, s, x, y, z):  # pragma: no cover - compiled
    """:func:`sample_field_numpy` at one point: ``(value, gx, gy, gz, inside)``."""
    fx = (x - lo[s, 0]) / h[s]
    fy = (y - lo[s, 1]) / h[s]
    fz = (z - lo[s, 2]) / h[s]
    nx, ny, nz = dims[s, 0], dims[s, 1], dims[s, 2]
    if not (fx >= 0 and fy >= 0 and fz >= 0 and fx <= nx - 1 and fy <= ny - 1 and fz <= nz - 1):
        return np.inf, 0.0, 0.0, 0.0, False
    ix, iy, iz = min(int(np.floor(fx)), nx - 2), min(int(np.floor(fy)), ny - 2), min(int(np.floor(fz)), nz - 2)
    tx, ty, tz = fx - ix, fy - iy, fz - iz
    v0 = v1 = v2 = v3 = 0.0
    for a in range(2):
        wa = tx if a else 1 - tx
        for b in range(2):
            wb = wa * (ty if b else 1 - ty)
            for k in range(2):
                w = wb * (tz if k else 1 - tz)
                row = start[s] + ((ix + a) * ny + iy + b) * nz + iz + k
                v0 += w * grid[row, 0]
                v1 += w * grid[row, 1]
                v2 += w * grid[row, 2]
                v3 += w * grid[row, 3]
    return v0, v1, v2, v3, True


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


@numba.njit(cache=True, inline="always", error_model="numpy")
def _pair_move(p, i, s, sa, fb, bx, by, bz, grid, start, lo, dims, h, bone, rest, own_bone, inv, gap, band, fade,
               reach):  # pragma: no cover - compiled
    """The move of vertex ``i`` (of part ``sa``, at ``p[i]``) against part ``s``, whose field there :func:`_sample`
    read as ``fb`` with rest-frame gradient ``(bx, by, bz)``, within reach: ``(dx, dy, dz)``."""
    ob = own_bone[i]
    r0, r1, r2 = rest[i, 0], rest[i, 1], rest[i, 2]
    b = bone[s]
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
        target = min(gap, fbr - far - band - REST_SLACK)
    g = fb - fa
    if g >= target + band:
        return 0.0, 0.0, 0.0
    w = max(band - abs(g - target), 0.0) / band
    step = (max(g, target) + w * w * band / 4 - g) * fade[sa, s]
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
        return 0.0, 0.0, 0.0
    length = min(step / max(dn, MIN_SPREAD), reach[sa]) / dn
    return length * dx, length * dy, length * dz


@numba.njit(cache=True, error_model="numpy")
def _listed_step_kernel(p, grid, start, lo, dims, h, bone, rest, own_bone, part, near_i, near_s, count, gap, band,
                        fade, reach, inv):  # pragma: no cover - compiled
    """A step over the (vertex, part) tests :func:`_depth_kernel` found within reach, in its order (part by part, so
    each vertex adds its moves against its parts in increasing order); the tests out of reach move nothing."""
    out = p.copy()
    for k in range(count):
        i, s = near_i[k], near_s[k]
        sa = part[i]
        if not fade[sa, s] > 0.0:
            continue
        y0, y1, y2 = _to_rest(inv, bone[s], p[i, 0], p[i, 1], p[i, 2])
        fb, bx, by, bz, ok = _sample(grid, start, lo, dims, h, s, y0, y1, y2)
        if not ok or fb > gap + band:
            continue
        dx, dy, dz = _pair_move(p, i, s, sa, fb, bx, by, bz, grid, start, lo, dims, h, bone, rest, own_bone, inv, gap,
                                band, fade, reach)
        out[i, 0] += dx
        out[i, 1] += dy
        out[i, 2] += dz
    return out


@numba.njit(cache=True, error_model="numpy")
def _subset_step_kernel(p, subset, grid, start, lo, dims, h, bone, rest, own_bone, part, skip, tested, gap, band, fade,
                        reach, inv):  # pragma: no cover - compiled
    """A step of the vertices ``subset`` only (the others keep ``p``), each against its parts in increasing order (the
    order in which :func:`_listed_step_kernel` adds them: the same numbers)."""
    out = p.copy()
    for i in subset:
        sa = part[i]
        if sa < 0:
            continue
        for s in range(bone.shape[0]):
            if not tested[sa, s] or (skip[i] >> np.uint64(s)) & np.uint64(1):
                continue
            y0, y1, y2 = _to_rest(inv, bone[s], p[i, 0], p[i, 1], p[i, 2])
            fb, bx, by, bz, ok = _sample(grid, start, lo, dims, h, s, y0, y1, y2)
            if not ok or fb > gap + band:
                continue
            dx, dy, dz = _pair_move(p, i, s, sa, fb, bx, by, bz, grid, start, lo, dims, h, bone, rest, own_bone, inv,
                                    gap, band, fade, reach)
            out[i, 0] += dx
            out[i, 1] += dy
            out[i, 2] += dz
    return out


def part_step(points, fields: PartFields, skin_matrices, *, gap: float = GAP, band: float = BAND,
              deep: float = DEEP, fade=None) -> np.ndarray:
    """:func:`part_step_numpy` as a Numba kernel (one core): (N, 3) float64."""
    p, m, gap, band, deep = _check(points, fields, skin_matrices, gap, band, deep)
    inv, live, active, chunk, _ = _frame(fields, p, m)
    depth, near, *tests = _tests(p, fields, inv, active, chunk, gap + band)
    if not near:
        return p.copy()  # no vertex within reach of another part
    if fade is None:
        fade = pair_fade(depth, deep, live)
    return _listed_step(p, fields, inv, tests, gap, band, fade)


def pair_depths(points, fields: PartFields, skin_matrices) -> np.ndarray:
    """:func:`pair_depths_numpy` as a Numba kernel over the broad phase's pairs."""
    p, m, *_ = _check(points, fields, skin_matrices, GAP, BAND, DEEP)
    inv, _, active, chunk, _ = _frame(fields, p, m)
    return _tests(p, fields, inv, active, chunk, GAP + BAND)[0]


def _tests(p, fields: PartFields, inv, active, chunk, reach) -> tuple:
    """:func:`_depth_kernel` on the fields: ``(depths, whether any tested vertex comes within reach of another part
    (else no step moves anything), near_i, near_s, count)``."""
    return _depth_kernel(p, fields.grid, fields.start, fields.lo, fields.dims, fields.part_cell, fields.bone, fields.skip,
                         fields.order, fields.part_start, fields.chunk_start, fields.part_chunks, chunk, inv, active,
                         reach)


def _listed_step(p, fields: PartFields, inv, tests, gap, band, fade) -> np.ndarray:
    """:func:`_listed_step_kernel` over ``tests`` (``near_i, near_s, count`` of :func:`_tests`)."""
    return _listed_step_kernel(p, fields.grid, fields.start, fields.lo, fields.dims, fields.part_cell, fields.bone,
                               fields.rest, fields.own_bone, fields.part, *tests, gap, band, fade, fields.reach, inv)


@numba.njit(cache=True, inline="always")
def _run_misses(chunk, c, inv, b, l0, l1, l2, t0, t1, t2):  # pragma: no cover - compiled
    """Whether run ``c``'s posed box, taken by bone ``b``'s inverse to its rest frame (the box around the moved box),
    lies outside ``[l, t]`` by more than a micrometre (the rounding of the vertices' own transforms is far below)."""
    e0 = 0.5 * (chunk[c, 1, 0] - chunk[c, 0, 0])
    e1 = 0.5 * (chunk[c, 1, 1] - chunk[c, 0, 1])
    e2 = 0.5 * (chunk[c, 1, 2] - chunk[c, 0, 2])
    c0, c1, c2 = _to_rest(inv, b, chunk[c, 0, 0] + e0, chunk[c, 0, 1] + e1, chunk[c, 0, 2] + e2)
    r0 = abs(inv[b, 0, 0]) * e0 + abs(inv[b, 0, 1]) * e1 + abs(inv[b, 0, 2]) * e2 + 1e-6
    r1 = abs(inv[b, 1, 0]) * e0 + abs(inv[b, 1, 1]) * e1 + abs(inv[b, 1, 2]) * e2 + 1e-6
    r2 = abs(inv[b, 2, 0]) * e0 + abs(inv[b, 2, 1]) * e1 + abs(inv[b, 2, 2]) * e2 + 1e-6
    return c0 + r0 < l0 or c0 - r0 > t0 or c1 + r1 < l1 or c1 - r1 > t1 or c2 + r2 < l2 or c2 - r2 > t2


@numba.njit(cache=True, error_model="numpy")
def _depth_kernel(p, grid, start, lo, dims, h, bone, skip, order, part_start, chunk_start, part_chunks, chunk, inv,
                  active, reach):  # pragma: no cover - compiled
    """The pairs' depths, whether any test came within ``reach``, and those tests: ``(depth, near, near_i, near_s,
    count)``, part by part, so :func:`_listed_step_kernel` can take a step over them alone. A run of vertices whose
    posed box (``chunk``), taken to the part's rest frame, misses the part's grid is skipped: each of its vertices
    would sample nothing there (the same tests listed, the same depths)."""
    n = bone.shape[0]
    depth = np.zeros((n, n))
    bound = 0
    for s in range(n):
        for sa in range(n):
            if active[sa, s]:
                bound += part_start[sa + 1] - part_start[sa]
    near_i = np.empty(bound, dtype=np.int64)
    near_s = np.empty(bound, dtype=np.int64)
    count = 0
    for s in range(n):
        b = bone[s]
        top0, top1, top2 = (lo[s, 0] + (dims[s, 0] - 1) * h[s], lo[s, 1] + (dims[s, 1] - 1) * h[s],
                            lo[s, 2] + (dims[s, 2] - 1) * h[s])
        for sa in range(n):
            if not active[sa, s]:
                continue
            for c in range(part_chunks[sa], part_chunks[sa + 1]):
                if _run_misses(chunk, c, inv, b, lo[s, 0], lo[s, 1], lo[s, 2], top0, top1, top2):
                    continue
                for j in range(chunk_start[c], chunk_start[c + 1]):
                    i = order[j]
                    if (skip[i] >> np.uint64(s)) & np.uint64(1):
                        continue
                    y0, y1, y2 = _to_rest(inv, b, p[i, 0], p[i, 1], p[i, 2])
                    fb = _sample(grid, start, lo, dims, h, s, y0, y1, y2)[0]
                    if fb <= reach:
                        near_i[count] = i
                        near_s[count] = s
                        count += 1
                    if fb < 0 and -fb > depth[sa, s]:
                        depth[sa, s] = -fb
    return depth, count > 0, near_i, near_s, count


def active_pairs(fields: PartFields, points, skin_matrices) -> np.ndarray:
    """(P, P) bool ``[a, s]``: the box around part ``a``'s posed vertices meets the box around part ``s``'s posed
    grid (its eight corners moved by the bone), both grown by 1 mm, for the pairs of :attr:`PartFields.pair_live`
    whose two bones are not singular this frame (:func:`live_parts`).
    Where it does not, no vertex of ``a`` is inside ``s``'s grid, so :func:`part_step` skips the pair (the broad
    phase: the same result as testing every vertex)."""
    return _frame(fields, np.asarray(points, dtype=np.float64), np.asarray(skin_matrices, dtype=np.float64))[2]


def _frame(fields: PartFields, p, m) -> tuple:
    """What a frame needs before its tests, in one kernel where the part bones' matrices are affine (last row
    0, 0, 0, 1, as skinning matrices are): ``(inverses (B, 4, 4) as :func:`bone_inverses` of the part bones, live
    (P,) as :func:`live_parts`, active (P, P) as :func:`active_pairs`, the posed box of each run of
    :attr:`PartFields.chunk_start` (K, 2, 3), (each part's vertex box, each part's posed grid box) (P, 2, 3) both grown
    by 1 mm)``; NumPy's inverse for any other matrix.
    ``p`` (N, 3) float64 and ``m`` (B, 4, 4) float64, both checked."""
    inv, live, chunk, box, grid, affine = _frame_kernel(p, m, fields.bone, fields.order, fields.chunk_start,
                                                        fields.part_chunks, fields.lo, fields.dims, fields.part_cell,
                                                        MIN_DETERMINANT)
    if not affine:
        inv = bone_inverses(m, fields.bone)
    active = _meets(box, grid, 0.0, fields.pair_live & live[:, None] & live[None, :])
    return inv, live, active, chunk, (box, grid)


@numba.njit(cache=True, error_model="numpy")
def _affine_inverse(a, out):  # pragma: no cover - compiled
    """``out`` = the inverse of the affine 4 x 4 ``a`` (adjugate of its 3 x 3 over the determinant); returns the
    determinant (``out`` untouched where it is 0)."""
    c00 = a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1]
    c01 = a[1, 2] * a[2, 0] - a[1, 0] * a[2, 2]
    c02 = a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]
    det = a[0, 0] * c00 + a[0, 1] * c01 + a[0, 2] * c02
    if det == 0.0:
        return det
    r = 1.0 / det
    out[0, 0], out[1, 0], out[2, 0] = c00 * r, c01 * r, c02 * r
    out[0, 1] = (a[0, 2] * a[2, 1] - a[0, 1] * a[2, 2]) * r
    out[1, 1] = (a[0, 0] * a[2, 2] - a[0, 2] * a[2, 0]) * r
    out[2, 1] = (a[0, 1] * a[2, 0] - a[0, 0] * a[2, 1]) * r
    out[0, 2] = (a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1]) * r
    out[1, 2] = (a[0, 2] * a[1, 0] - a[0, 0] * a[1, 2]) * r
    out[2, 2] = (a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]) * r
    for k in range(3):
        out[k, 3] = -(out[k, 0] * a[0, 3] + out[k, 1] * a[1, 3] + out[k, 2] * a[2, 3])
    out[3, 3] = 1.0
    return det


@numba.njit(cache=True, error_model="numpy")
def _frame_kernel(p, m, bones, order, chunk_start, part_chunks, lo, dims, h, min_det):  # pragma: no cover - compiled
    n = bones.shape[0]
    chunk = np.empty((chunk_start.shape[0] - 1, 2, 3))
    inv = np.zeros(m.shape)
    live = np.zeros(n, dtype=np.bool_)
    affine = True
    box = np.empty((n, 2, 3))
    grid = np.empty((n, 2, 3))
    for s in range(n):
        a = m[bones[s]]
        affine &= a[3, 0] == 0.0 and a[3, 1] == 0.0 and a[3, 2] == 0.0 and a[3, 3] == 1.0
        live[s] = abs(_affine_inverse(a, inv[bones[s]])) > min_det
        if not live[s]:
            inv[bones[s]] = 0.0
        lx = ly = lz = np.inf  # the part's box in scalars: the compiler keeps them in registers
        hx = hy = hz = -np.inf
        for c in range(part_chunks[s], part_chunks[s + 1]):
            cx = cy = cz = np.inf
            dx = dy = dz = -np.inf
            for j in range(chunk_start[c], chunk_start[c + 1]):
                i = order[j]
                cx, dx = min(cx, p[i, 0]), max(dx, p[i, 0])
                cy, dy = min(cy, p[i, 1]), max(dy, p[i, 1])
                cz, dz = min(cz, p[i, 2]), max(dz, p[i, 2])
            chunk[c, 0, 0], chunk[c, 0, 1], chunk[c, 0, 2] = cx, cy, cz
            chunk[c, 1, 0], chunk[c, 1, 1], chunk[c, 1, 2] = dx, dy, dz
            lx, hx, ly, hy, lz, hz = min(lx, cx), max(hx, dx), min(ly, cy), max(hy, dy), min(lz, cz), max(hz, dz)
        box[s, 0, 0], box[s, 0, 1], box[s, 0, 2] = lx - 1e-3, ly - 1e-3, lz - 1e-3
        box[s, 1, 0], box[s, 1, 1], box[s, 1, 2] = hx + 1e-3, hy + 1e-3, hz + 1e-3
        for k in range(3):
            grid[s, 0, k] = np.inf
            grid[s, 1, k] = -np.inf
        for c in range(8):
            x = lo[s, 0] + (c >> 2) * (dims[s, 0] - 1) * h[s]
            y = lo[s, 1] + ((c >> 1) & 1) * (dims[s, 1] - 1) * h[s]
            z = lo[s, 2] + (c & 1) * (dims[s, 2] - 1) * h[s]
            for k in range(3):
                w = a[k, 0] * x + a[k, 1] * y + a[k, 2] * z + a[k, 3]
                grid[s, 0, k] = min(grid[s, 0, k], w - 1e-3)
                grid[s, 1, k] = max(grid[s, 1, k], w + 1e-3)
    return inv, live, chunk, box, grid, affine


@numba.njit(cache=True)
def _meets(box, grid, grow, mask):  # pragma: no cover - compiled
    """(P, P) bool ``[a, s]``: ``mask`` where part ``a``'s box grown by ``grow`` (metres) meets part ``s``'s grid box."""
    n = box.shape[0]
    out = np.zeros((n, n), dtype=np.bool_)
    for a in range(n):
        for s in range(n):
            if mask[a, s]:
                hit = True
                for k in range(3):
                    hit &= box[a, 0, k] - grow <= grid[s, 1, k] and box[a, 1, k] + grow >= grid[s, 0, k]
                out[a, s] = hit
    return out


@numba.njit(cache=True, error_model="numpy")
def _fade_kernel(depths, deep, live):  # pragma: no cover - compiled
    """:func:`pair_fade` of ``depths`` (P, P) with ``live`` (P,) in one kernel: the same operations, element by
    element, so the same numbers."""
    n = depths.shape[0]
    fade = np.empty((n, n))
    part = np.ones(n)
    for a in range(n):
        for b in range(n):
            fade[a, b] = min(max(2.0 - max(depths[a, b], depths[b, a]) / deep, 0.0), 1.0)
            part[a] = min(part[a], fade[a, b])
    for a in range(n):
        for b in range(n):
            fade[a, b] = min(fade[a, b], min(part[a], part[b])) * (1.0 if live[a] and live[b] else 0.0)
    return fade


def part_contact(points, fields: PartFields, skin_matrices, *, gap: float = GAP, band: float = BAND,
                 deep: float = DEEP, passes: int = PASSES, numpy: bool = False) -> np.ndarray:
    """The whole step: :func:`part_step`, :data:`PASSES` one-ring passes of its moves
    (:func:`kisekae.geom.ring.smooth_push`), :func:`part_step` again from there, and the flip guard
    (:func:`kisekae.avatar.flip_guard.flip_guard`, when the fields hold the body's faces).

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
    if numpy:
        return part_contact_numpy_steps(points, fields, skin_matrices, int(passes), deep=deep,
                                        step=lambda y, fade: part_step_numpy(y, fields, skin_matrices, gap=gap,
                                                                             band=band, deep=deep, fade=fade))
    x, m, gap, band, deep = _check(points, fields, skin_matrices, gap, band, deep)
    return _contact(x, fields, m, gap, band, deep, int(passes))


def _contact(x, fields: PartFields, m, gap: float, band: float, deep: float, passes: int) -> np.ndarray:
    """:func:`part_contact`'s kernels on checked input: ``x`` (N, 3) float64, ``m`` (B, 4, 4) float64 finite."""
    inv, live, active, chunk, boxes = _frame(fields, x, m)
    depth, near, *tests = _tests(x, fields, inv, active, chunk, gap + band)
    if not near:
        return x  # no vertex within reach of another part: the steps would move nothing
    fade = _fade_kernel(depth, float(deep), live)  # pair_fade's numbers; once: both steps treat a pair alike
    y = _listed_step(x, fields, inv, tests, gap, band, fade)  # the first step over the tests within reach
    moved = y - x
    if not np.any(moved):
        return y  # nothing moved: the second step would give the same
    if passes > 0:
        # the second step of the vertices the smoothed moves reached: any other one is where it started, unmoved by
        # the first step from there, and the second would give it the same
        d = smooth_push(moved, fields.ring, int(passes))
        subset = nonzero_rows(d)
        # the passes average moves, so no coordinate of d exceeds the first step's largest: a part's vertices lie in its
        # box grown by that, and a pair whose grown box misses the other grid's moves nothing (as in active_pairs)
        grow = float(np.abs(moved[tests[0][:tests[2]]]).max(initial=0.0))
        y = _subset_step_kernel(x + d, subset, fields.grid, fields.start, fields.lo, fields.dims, fields.part_cell,
                                fields.bone, fields.rest, fields.own_bone, fields.part, fields.skip,
                                _meets(*boxes, grow, fields.pair_live & (fade > 0)), gap, band, fade, fields.reach,
                                inv)
    if fields.faces is None:
        return y
    # the fields' faces were checked when they were made: straight to the guard's kernel
    return x + _guard_kernel(x, y - x, fields.faces, *fields.vertex_faces, GUARD_COS, GUARD_HALVINGS, GUARD_REVERTS)


def part_contact_numpy_steps(points, fields: PartFields, skin_matrices, passes: int = PASSES, *, deep: float = DEEP,
                             step=None) -> np.ndarray:
    """:func:`part_contact`'s sequence in NumPy: the pairs' :func:`pair_fade` from the input, a step, ``passes``
    one-ring passes of its moves (:func:`kisekae.geom.ring.smooth_push_numpy`), a step from there. ``step(points,
    fade) -> (N, 3)`` takes the two steps (None: :func:`part_step_numpy` with the default settings; the conformance
    checks pass the shader's); then :func:`kisekae.avatar.flip_guard.flip_guard_numpy` where the fields hold the
    body's faces."""
    if step is None:
        def step(y, fade):
            return part_step_numpy(y, fields, skin_matrices, fade=fade)
    x = as_points(points, "posed body vertices")
    fade = pair_fade(pair_depths_numpy(x, fields, skin_matrices), deep, live_parts(fields, skin_matrices))
    y = np.asarray(step(x, fade), dtype=np.float64)
    if not np.any(y != x):
        return y
    if passes > 0:
        y = np.asarray(step(x + smooth_push_numpy(y - x, fields.ring, int(passes)), fade), dtype=np.float64)
    return y if fields.faces is None else flip_guard_numpy(x, y, fields.faces, fields.vertex_faces)


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
        m = np.asarray(skin_matrices, dtype=np.float64)
        if y.shape != (len(self.fields.rest), 3) or m.ndim != 3 or m.shape[1:] != (4, 4) or not np.isfinite(m).all():
            return self._after(y, skin_matrices)  # part_contact's checks name what is wrong
        # posed here from the checked rest mesh by finite matrices: straight to the kernels
        return _contact(y.astype(np.float64), self.fields, m, self.gap, self.band, self.deep,
                        self.passes).astype(np.float32)

    def _after(self, y, skin_matrices) -> np.ndarray:
        return part_contact(y, self.fields, skin_matrices, gap=self.gap, band=self.band, deep=self.deep,
                            passes=self.passes).astype(np.float32)


def inner_deform(deform):
    """The deform a :class:`PartContact` runs after (``before``), or ``deform`` itself: the joint planes, the
    correctives and planes, or None."""
    return deform.before if isinstance(deform, PartContact) else deform


_FIELDS: dict = {}


def cached_part_fields(body, parents) -> PartFields:
    """:func:`bake_part_fields` of a :class:`kisekae.avatar.avatar.SkinnedMesh` body, baked once per process and body
    (keyed by :func:`kisekae.avatar.correctives.mesh_hash` of the rest mesh and skin, and the bone parents; the eight
    most recent are kept)."""
    from .correctives import mesh_hash

    key = (mesh_hash(body.mesh.vertices, body.mesh.faces, body.skin), np.asarray(parents, np.int64).tobytes())
    if key not in _FIELDS:
        if len(_FIELDS) >= 8:
            _FIELDS.pop(next(iter(_FIELDS)))
        _FIELDS[key] = bake_part_fields(body.mesh.vertices, body.mesh.faces, body.skin, parents, weld=body.mesh.weld,
                                        edges=body.mesh.edges)
    return _FIELDS[key]

"""Shape-preserving fix: the garment leaves the body as a smooth sheet, not vertex by vertex.

The exact push-out (:mod:`kisekae.fit.exact`) projects every contact vertex on its own, so where
the body folds, neighbouring vertices land on different surfaces and the cloth crumples. This
solver instead looks for the *displacement field* ``d`` (added to the skinned garment ``x_s``)
that keeps the skinned shape, subject to every vertex staying outside the body (and the layers
beneath) by its clearance:

    minimise   Σ_edges |y_i − y_j − p_e|²           (edge springs: p_e is the edge's current
                                                       direction at its skinned length)
             + Σ_i b_i |(L d)_i|²                   (bending of the displacement: no cones)
             + Σ_i (2 A_i / λ²) |d_i|²              (screening: the move dies off over λ)
    subject to s(x_s + d) ≥ gap_i                    (signed distance to the body / layers)

This is projective dynamics (Bouaziz et al. 2014): a local step puts every edge back to its
skinned length along its current direction (the cloth may turn and bend, it may not stretch), a
global step solves one sparse symmetric system, whose matrix (graph Laplacian + bending +
screening) never changes. Contacts are an active set: each active vertex is held on the plane
through its feasible target with the surface's outward normal, exactly (the solve runs in that
plane's two tangent directions by projected conjugate gradients, so contact vertices slide), and
is released when the shape terms alone would lift it off (the sign of its Lagrange multiplier).
Garment edges that cross the body or a layer lift both ends until the chord clears. Where the
iterations leave a vertex inside (the body overlaps itself deeper than any smooth sheet can
clear), it is pinned to its projection and the system solved again; a last per-vertex projection
closes what remains and is reported in ``info["forced"]``.

Parameters of the seed note keep their meaning: ``margin`` and ``stiffness`` set the clearance
(``gap = stiffness · (1 − tightness / 2) · margin`` as in the exact solver), ``max_push`` caps every
target, ``skirt_bias`` tilts the push directions outward-horizontal and adds bending so skirts
bridge between the legs, and ``softness`` lowers the bending locally (soft cloth drapes closer).
docs/fit.md gives the measurements behind the defaults.
"""

from __future__ import annotations

import time

import numba
import numpy as np
import scipy.sparse as sp

from ..errors import KisekaeError
from ..validate import as_points
from ..geom.bvh import build_bvh, refit
from ..geom.crossings import edge_crossings
from ..geom.normals import face_normals
from .exact import exposed_body_edges, march_out, signed_body_distance
from .pushout import PushParams, UP, bias_direction, resolve_mask

#: Bending weight relative to the membrane term (per vertex, dimensionless).
BENDING = 1.0
#: Extra bending factor for skirts (times ``skirt_bias``): a skirt bridges rather than wraps.
SKIRT_BENDING = 8.0
#: Falloff length of a displacement (metres): the screening term's λ.
FALLOFF = 0.15
#: Relative residual and most iterations of the conjugate gradients in each solve.
CG_TOL = 1e-9
CG_ITERATIONS = 2000
#: The springs count as settled when no vertex moves more than this (metres) between iterations.
SETTLE = 1e-4
#: Most active-set iterations per solve.
ITERATIONS = 30
#: Samples along a crossing edge when looking for its deepest point.
EDGE_SAMPLES = 9
#: Spacing (metres) of those samples along long edges.
EDGE_STEP = 0.004
#: A vertex short of its clearance by less than this (metres) counts as clear: positions that
#: sit on their constraint plane differ by rounding only, wherever the scene stands.
SLACK = 1e-6
#: Farthest move (metres) beyond the deepest penetration of the garment (issue 15's bound).
EXTRA_MOVE = 0.02
#: A contact is released only when the shape terms pull it off by more than this (metres of
#: displacement-equivalent force): a vertex in balance keeps its contact whatever the rounding.
RELEASE = 1e-7
#: Extra clearance (metres) aimed for beyond the gap, so the penalty's residual stays outside.
OVERSHOOT = 2e-4


def shape_operator(skinned, faces, edges, weld=None, *, bending: float | np.ndarray = BENDING,
                   falloff: float = FALLOFF):
    """The quadratic form of the shape energy over the welded vertices.

    Parameters
    ----------
    skinned : (N, 3) float, the skinned garment, metres
    faces : (F, 3) int triangles
    edges : (E, 2) int unique welded edges
    weld : (N,) int representative of each vertex (seam duplicates), or None
    bending : float or (N,) per-vertex bending weight (dimensionless)
    falloff : float, metres, the screening length λ

    Returns
    -------
    reps : (R,) int, the representative vertices (sorted)
    index : (N,) int, row of each vertex's representative in ``reps``
    M : (R, R) scipy.sparse.csc_matrix, symmetric positive definite
    """
    x = as_points(skinned, "skinned garment")
    n = len(x)
    w = np.arange(n) if weld is None else np.asarray(weld, dtype=np.int64)
    reps, index = np.unique(w, return_inverse=True)
    r = len(reps)
    e = index[np.asarray(edges, dtype=np.int64).reshape(-1, 2)]
    e = e[e[:, 0] != e[:, 1]]
    if falloff <= 0 or not np.isfinite(falloff):
        raise KisekaeError(f"must be > 0 metres, got {falloff!r}", "falloff")
    ones = np.ones(len(e))
    adj = sp.coo_matrix((np.r_[ones, ones], (np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]])), (r, r)).tocsr()
    adj.data[:] = 1.0
    deg = np.asarray(adj.sum(axis=1)).ravel()
    membrane = sp.diags(deg) - adj
    lap = sp.eye(r) - sp.diags(1.0 / np.maximum(deg, 1.0)) @ adj
    b = np.broadcast_to(np.asarray(bending, dtype=np.float64), (n,))
    b_rep = np.zeros(r)
    np.maximum.at(b_rep, index, b)
    bend = lap.T @ sp.diags(b_rep) @ lap
    f = index[np.asarray(faces, dtype=np.int64)]
    area = 0.5 * np.linalg.norm(np.cross(x[reps][f[:, 1]] - x[reps][f[:, 0]], x[reps][f[:, 2]] - x[reps][f[:, 0]]), axis=1)
    vertex_area = np.bincount(f.ravel(), np.repeat(area / 3.0, 3), minlength=r)
    # Uniform edge weights read |grad d|² about 1.7 times per unit area on a regular mesh, so the
    # screening of a vertex is twice its area over λ²: the move fades over λ whatever the resolution.
    screen = sp.diags(2.0 * vertex_area / falloff**2)
    M = (membrane + bend + screen).tocsc()
    return reps, index, M


class ShapeSolve:
    """State of one :func:`solve_shape_preserving` call (one garment, one pose).

    Attributes after :meth:`run`: ``positions`` (N, 3) float64, ``active`` (R,) bool contact set,
    ``iterations``, ``forced`` (N,) bool vertices the final per-vertex projection had to move.
    """

    def __init__(self, query, skinned, mesh, params: PushParams, *, directions=None, layers=(), tightness=None,
                 softness=None, up=UP, iterations: int = ITERATIONS, falloff: float = FALLOFF):
        params.validate()
        self.query = query
        self.xs = as_points(skinned, "skinned garment")
        n = len(self.xs)
        if n != mesh.n_vertices:
            raise KisekaeError(f"has {n} vertices but the rest mesh has {mesh.n_vertices}", "skinned garment")
        self.params = params
        uvs = mesh.uvs.get("uv0")
        tight = resolve_mask(tightness, n, "tightness", uvs, default=params.tightness)
        soft = resolve_mask(softness, n, "softness", uvs, default=params.softness)
        bending = (BENDING + SKIRT_BENDING * params.skirt_bias) * (1.0 - 0.75 * soft)
        self.reps, self.index, M = shape_operator(self.xs, mesh.faces, mesh.edges, mesh.weld,
                                                       bending=bending, falloff=falloff)
        self.M = M.tocsr()
        self.inv_diag = np.ascontiguousarray(1.0 / self.M.diagonal())  # the CG's Jacobi preconditioner
        self.origin = self.xs[0].copy()
        self.x0 = self.snap(self.xs[self.reps])
        self.r = len(self.reps)
        gap_v = params.stiffness * (1.0 - 0.5 * tight) * params.margin
        self.gap = np.zeros(self.r)
        np.maximum.at(self.gap, self.index, gap_v)
        self.edges = np.unique(np.sort(self.index[np.asarray(mesh.edges, dtype=np.int64)], axis=1), axis=0)
        self.edges = self.edges[self.edges[:, 0] != self.edges[:, 1]]
        f = self.index[np.asarray(mesh.faces, dtype=np.int64)]
        self.faces = f[(f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])]
        self._bvh = None  # the garment's BVH over ``faces`` (:meth:`_pierced`)
        ne = len(self.edges)
        self.G = sp.csr_matrix((np.r_[-np.ones(ne), np.ones(ne)], (np.r_[np.arange(ne), np.arange(ne)],
                                np.r_[self.edges[:, 0], self.edges[:, 1]])), shape=(ne, self.r))
        self.edge_length = np.linalg.norm(self.G @ self.x0, axis=1)
        self.dirs = None
        if directions is not None:
            dirs = as_points(directions, "directions")
            if len(dirs) != n:
                raise KisekaeError(f"expected {n} directions, got {len(dirs)}", "directions")
            dirs = dirs[self.reps]
            self.dirs = dirs / np.maximum(np.linalg.norm(dirs, axis=1, keepdims=True), 1e-12)
        self.layers = list(layers)
        self.up = np.asarray(up, dtype=np.float64)
        self.iterations = int(iterations)
        self.dist0 = query.distance(self.x0)
        self.inside0 = query.inside(self.x0)
        for layer in self.layers:
            sl, _n = layer.signed_distance(self.x0)
            self.dist0 = np.minimum(self.dist0, np.abs(sl) - layer.thickness)
            self.inside0 |= sl < 0
        # No target farther than the deepest penetration plus EXTRA_MOVE (nor than max_push): a
        # vertex that could only get out farther away stays inside and is reported. Over layers the
        # layers' own moves add up, so only max_push applies.
        deepest = float(self.dist0[self.inside0].max(initial=0.0))
        self.reach = params.max_push if self.layers else min(
            params.max_push, deepest + float(self.gap.max(initial=0.0)) + EXTRA_MOVE)

    def spring_force(self, y):
        """(R, 3) pull of the edge springs at positions ``y``: the local step of projective dynamics.

        Each welded edge wants its skinned length along its current direction, so the cloth may
        turn and bend freely; only stretching and compressing cost. In displacement form the
        membrane term ``|d_i − d_j − (p_e − Δx_e)|²`` has the same matrix as before and this force.
        """
        vec = self.G @ y
        ln = np.linalg.norm(vec, axis=1, keepdims=True)
        rest = self.G @ self.x0
        goal = np.where(ln > 1e-12, vec * (self.edge_length[:, None] / np.maximum(ln, 1e-300)), rest)
        return self.G.T @ (goal - rest)

    def snap(self, x):
        """Positions rounded to float32 steps around the garment's first vertex.

        Sums inside NumPy (and so the last bits of a solve) differ between NumPy versions; the
        active set and the closest faces of points deep in the body react to any change. Rounding
        every iterate to a fixed grid (0.06 µm at 1 m from the origin) makes the result the same
        under every NumPy version and wherever the body stands in the world.
        """
        return (np.asarray(x, dtype=np.float64) - self.origin).astype(np.float32).astype(np.float64) + self.origin

    # --- constraints -------------------------------------------------------------------------
    def violations(self, y, idx):
        """Signed clearance deficit and outward direction of points ``y[idx]``.

        Returns ``(deficit, direction, inside)``: ``deficit > 0`` where the point is closer than its
        gap to the body or to a layer beneath (metres), with the direction to move along.
        """
        p = y[idx]
        s, nrm, inside = signed_body_distance(self.query, p)
        deficit = self.gap[idx] + OVERSHOOT - s
        direction = bias_direction(nrm, self.params.skirt_bias, self.up) if self.params.skirt_bias > 0 else nrm
        for layer in self.layers:
            sl, nl = layer.signed_distance(p)
            dl = self.gap[idx] + layer.thickness + OVERSHOOT - sl
            worse = dl > deficit
            deficit = np.where(worse, dl, deficit)
            direction = np.where(worse[:, None], nl, direction)
        return deficit, direction, inside

    def targets(self, y, idx):
        """Feasible targets for the points ``y[idx]`` (themselves where already clear)."""
        deficit, direction, inside = self.violations(y, idx)
        self.last_direction = direction
        t = y[idx].copy()
        need = deficit > SLACK
        t[need] += deficit[need, None] * direction[need]
        # A target still inside the union (the closest surface is buried in another part): march
        # along the outward direction and along the preferred one to where the union ends, and take
        # the shorter way out.
        check = np.flatnonzero(need & inside)
        if check.size:
            bad = check[self.query.inside(t[check])]
            if bad.size:
                t[bad] = self._march(y[idx[bad]], direction[bad], idx[bad])
                self.last_direction[bad] = _unit(t[bad] - y[idx[bad]], direction[bad])
        return self._cap(t, idx), need

    def _cap(self, t, idx):
        """Targets ``t`` of vertices ``idx`` pulled back to at most :attr:`reach` from skinning."""
        move = t - self.x0[idx]
        ln = np.linalg.norm(move, axis=1)
        over = ln > self.reach
        t[over] = self.x0[idx[over]] + move[over] * (self.reach / ln[over])[:, None]
        return t

    def _march(self, p, direction, ids):
        """Exit points (plus the gap) of rays from ``p``: the shorter of ``direction`` and ``self.dirs``."""
        ways = [direction] if self.dirs is None else [direction, self.dirs[ids]]
        best = p.copy()
        best_len = np.full(len(p), np.inf)
        for way in ways:
            ex, dist = march_out(self.query, p, way, self.reach)
            better = dist < best_len
            best[better] = ex[better] + (self.gap[ids[better]] + OVERSHOOT)[:, None] * way[better]
            best_len[better] = dist[better]
        return best

    def crossing_targets(self, y):
        """Targets for the ends of garment edges that cross the body or a layer beneath, and for the
        corners of garment faces that skin pokes through (:meth:`_pierced`).

        Each crossing edge is sampled at interior points :data:`EDGE_STEP` apart (at least
        :data:`EDGE_SAMPLES`); both ends move out by the deepest sample's deficit (at least the gap),
        so the chord clears the surface over the iterations: along each end's preferred direction
        where that agrees with the surface's normal there (the crossed body triangle's, a layer's at
        the deepest sample; :meth:`_lift_direction`).
        """
        ends, amount, dirs = [], [], []
        cross, tri = self.query.crossing_edges(y, self.edges, return_triangles=True)
        if np.any(cross):
            e = self.edges[cross]
            s, _n = self._deepest(y, e, lambda p: signed_body_distance(self.query, p)[:2])
            ends.append(e.ravel())
            amount.append(np.repeat(self._lift(e, s), 2))
            dirs.append(self._lift_direction(e, self.query.face_normals[tri[cross]]))
        for layer in self.layers:
            cross = layer.crossing_edges(y, self.edges)
            if np.any(cross):
                e = self.edges[cross]
                s, nrm = self._deepest(y, e, layer.signed_distance)
                ends.append(e.ravel())
                amount.append(np.repeat(self._lift(e, s - layer.thickness), 2))
                dirs.append(self._lift_direction(e, nrm))
        # Skin through the middle of faces is looked for once no edge crosses (every surface
        # intersection has body edges through garment faces too; those are handled above).
        pierced = None if ends else self._pierced(y)
        if pierced is not None:
            for part, values in zip((ends, amount, dirs), pierced):
                part.append(values)
        if not ends:
            return np.zeros(0, np.int64), np.zeros((0, 3))
        ends, amount, dirs = np.concatenate(ends), np.concatenate(amount), np.concatenate(dirs)
        order = np.lexsort((-amount, ends))
        ends, amount, dirs = ends[order], amount[order], dirs[order]
        first = np.r_[True, ends[1:] != ends[:-1]]
        ends = ends[first]
        return ends, self._cap(y[ends] + amount[first, None] * dirs[first], ends)

    def _pierced(self, y):
        """Corners of garment triangles that exposed skin pokes through (a kneecap through the
        middle of a face, no garment edge crossing): ``(corners, lift, directions)`` or None. Each
        corner rises along the face's outward normal until the bump's tip is a gap below it."""
        faces = self.faces
        if self._bvh is None:  # built once on the skinned garment, refitted to each iterate (its boxes follow)
            self._bvh = build_bvh(self.x0, faces)
        vb = np.asarray(self.query.vertices, dtype=np.float64)
        be = exposed_body_edges(self.query)
        hit, tri = edge_crossings(vb, be, self._bvh, refit(self._bvh, y, faces), return_triangles=True)
        if not hit.any():
            return None
        be, f = be[hit], faces[tri[hit]]
        fn = face_normals(y, faces)[tri[hit]].astype(np.float64)
        _s, nb, _in = signed_body_distance(self.query, y[f].mean(axis=1))
        fn = np.where((np.einsum("ij,ij->i", fn, nb) < 0)[:, None], -fn, fn)
        tip = np.maximum(np.einsum("ij,ij->i", vb[be[:, 0]] - y[f[:, 0]], fn),
                         np.einsum("ij,ij->i", vb[be[:, 1]] - y[f[:, 0]], fn))
        lift = np.maximum(tip, 0.0) + np.maximum(self.gap[f].max(axis=1), 1e-4)
        return f.ravel(), np.repeat(lift, 3), np.repeat(fn, 3, axis=0)

    def _lift_direction(self, e, surface_normal):
        """(2E, 3) lift directions of the ends of edges ``e``: each end's preferred (cloth) direction
        where it agrees with the crossed surface's normal, so a chord over a crease rises out of both
        walls rather than into the opposite one; the surface normal elsewhere."""
        fn = np.repeat(surface_normal, 2, axis=0)
        if self.dirs is None:
            return fn
        pref = self.dirs[e.ravel()]
        return np.where((np.einsum("ij,ij->i", pref, fn) > 0.2)[:, None], pref, fn)

    def _lift(self, e, s):
        """How far both ends of edges ``e`` go when their deepest sample has clearance ``s``."""
        gap = self.gap[e].max(axis=1)
        return np.maximum(gap + OVERSHOOT - s, gap)

    @staticmethod
    def _deepest(y, e, signed):
        """Clearance and direction at the deepest interior sample of each edge ``e`` (rows)."""
        longest = float(np.linalg.norm(y[e[:, 0]] - y[e[:, 1]], axis=1).max())
        k = int(np.clip(np.ceil(longest / EDGE_STEP), EDGE_SAMPLES, 3 * EDGE_SAMPLES))
        u = (np.arange(k) + 1.0) / (k + 1.0)
        pts = y[e[:, 0], None, :] * (1.0 - u)[None, :, None] + y[e[:, 1], None, :] * u[None, :, None]
        s, nrm = signed(pts.reshape(-1, 3))
        s = np.asarray(s).reshape(len(e), -1)
        j = np.argmin(s, axis=1)
        rows = np.arange(len(e))
        return s[rows, j], np.asarray(nrm).reshape(len(e), -1, 3)[rows, j]

    # --- solve -------------------------------------------------------------------------------
    def solve(self, active, target, normal, start=None, force=None):
        """Displacement minimising the shape energy with each ``active`` vertex held on the plane
        through its ``target`` with normal ``normal`` (it may slide along the plane).

        ``force`` (R, 3) is the linear term of the energy (the edge springs' pull,
        :meth:`spring_force`): the solve minimises ``d·M d / 2 − force·d``.

        The constraint is exact: an active vertex's displacement is ``b n + z`` with ``z`` in its
        tangent plane, and the tangential part of every vertex comes from preconditioned conjugate
        gradients on the projected system (no factorisation, warm-started from ``start``).
        """
        ids = np.flatnonzero(active)
        n = np.zeros((self.r, 3))  # the constraint normal of each active vertex, 0 elsewhere (no projection)
        n[ids] = normal[ids]
        b = np.einsum("ij,ij->i", n[ids], target[ids] - self.x0[ids])
        base = np.zeros((self.r, 3))
        base[ids] = b[:, None] * n[ids]
        rhs = (0.0 if force is None else force) - self.M @ base
        z = np.zeros_like(base) if start is None else start - base
        M = self.M
        _projected_cg(M.indptr, M.indices, M.data, self.inv_diag, n, rhs, z, CG_ITERATIONS, CG_TOL)
        return base + z

    def near(self, d, active) -> np.ndarray:
        """Vertices that may be closer than their gap after displacement ``d``.

        The distance to the body is 1-Lipschitz, so a vertex that started outside at ``dist0`` and
        moved by ``|d|`` is still outside and at least ``dist0 − |d|`` away: only vertices where
        that bound is below the gap (plus active and initially inside ones) need a query.
        """
        bound = self.dist0 - np.linalg.norm(d, axis=1)
        return np.flatnonzero(active | self.inside0 | (bound <= self.gap + OVERSHOOT + 1e-4))

    def run(self):
        y = self.x0.copy()
        active = np.zeros(self.r, bool)
        sticky = np.zeros(self.r, bool)
        released = np.zeros(self.r, bool)
        target = self.x0.copy()
        normal = np.zeros_like(y)
        d = np.zeros_like(y)
        it = 0
        settled = False
        for it in range(1, self.iterations + 1):
            near = self.near(d, active)
            t, need = self.targets(y, near)
            newly = near[need]
            f = self.spring_force(y)
            # A vertex released before that needs the body again stays active from now on.
            sticky[newly[released[newly]]] = True
            self._release(d, f, near, active, sticky, need, released)
            active[newly] = True
            # Ends lifted over a crossing keep their lift plane unless the body itself needs them.
            keep = sticky[near] & ~need
            target[near[~keep]] = t[~keep]
            normal[near[~keep]] = self.last_direction[~keep]
            ce, ct = self.crossing_targets(y)
            if ce.size:
                active[ce] = True
                sticky[ce] = True
                target[ce] = ct
                normal[ce] = _unit(target[ce] - y[ce], normal[ce])
            if not newly.size and not ce.size and it > 1 and settled:
                break
            d_new = self.solve(active, target, normal, d, f)
            settled = float(np.abs(d_new - d).max(initial=0.0)) < SETTLE
            d = d_new
            y = self.snap(self.x0 + d)
            d = y - self.x0
        self.iterations_used = it
        forced = self.force_outside(y, active, target, normal)
        self.active = active
        self.positions = y[self.index]
        self.forced = forced[self.index]
        return self

    def _release(self, d, spring, near, active, sticky, need, released) -> None:
        """Drop active vertices the shape terms alone would lift off (their multiplier's sign);
        ``spring`` is :meth:`spring_force` at ``x0 + d``."""
        pick = active[near] & ~sticky[near] & ~need
        ids = near[pick]
        if not ids.size:
            return
        force = (spring - self.M @ d)[ids]
        lift = np.einsum("ij,ij->i", force, self.last_direction[pick]) > RELEASE
        active[ids[lift]] = False
        released[ids[lift]] = True

    def force_outside(self, y, active, target, normal):
        """Vertices still inside after the iterations: pin them to their projections and solve again
        (twice), then, as a last resort, project the rest one by one (in place). Returns the mask of
        vertices the last resort moved."""
        forced = np.zeros(self.r, bool)
        for attempt in range(3):
            inside = np.zeros(self.r, bool)
            near = self.near(y - self.x0, active)
            inside[near] = self.query.inside(y[near])
            idx = np.flatnonzero(inside)
            if not idx.size:
                break
            t, need = self.targets(y, idx)
            if attempt < 2:
                active[idx[need]] = True
                target[idx[need]] = t[need]
                normal[idx] = self.last_direction
                y[:] = self.snap(self.x0 + self.solve(active, target, normal, y - self.x0, self.spring_force(y)))
            else:
                y[idx[need]] = t[need]
                forced[idx[need]] = True
        return forced


@numba.njit(cache=True, error_model="numpy")
def _project(x, n):  # pragma: no cover - compiled
    """``x`` without its component along ``n`` in each row, in place (rows with ``n`` = 0 keep all of it)."""
    for i in range(x.shape[0]):
        d = x[i, 0] * n[i, 0] + x[i, 1] * n[i, 1] + x[i, 2] * n[i, 2]
        x[i, 0] -= d * n[i, 0]
        x[i, 1] -= d * n[i, 1]
        x[i, 2] -= d * n[i, 2]


@numba.njit(cache=True, error_model="numpy")
def _matmul(indptr, indices, data, x, out):  # pragma: no cover - compiled
    """``out = M x`` for a CSR matrix ``M`` and (R, 3) ``x``."""
    for i in range(out.shape[0]):
        a0 = a1 = a2 = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            w = data[k]
            a0 += w * x[j, 0]
            a1 += w * x[j, 1]
            a2 += w * x[j, 2]
        out[i, 0] = a0
        out[i, 1] = a1
        out[i, 2] = a2


@numba.njit(cache=True, error_model="numpy")
def _projected_cg(indptr, indices, data, inv_diag, n, rhs, z, iterations, tol):  # pragma: no cover - compiled
    """Preconditioned conjugate gradients for ``P M P z = P rhs`` (``P``: each row without its component along
    ``n``; Jacobi preconditioner ``inv_diag``), warm-started from and written to ``z`` (R, 3); ``rhs`` is projected
    in place. Stops when the residual is below ``tol`` times the right-hand side, or after ``iterations``."""
    r = z.shape[0]
    _project(rhs, n)
    _project(z, n)
    q = np.empty((r, 3))
    _matmul(indptr, indices, data, z, q)
    _project(q, n)
    res = rhs - q
    pre = res * inv_diag[:, None]
    _project(pre, n)
    p = pre.copy()
    rz = np.sum(res * pre)
    stop = tol * tol * max(np.sum(rhs * rhs), 1e-30)
    for _ in range(iterations):
        if np.sum(res * res) <= stop:
            break
        _matmul(indptr, indices, data, p, q)
        _project(q, n)
        alpha = rz / np.sum(p * q)
        rz_new = 0.0
        for i in range(r):
            for c in range(3):
                z[i, c] += alpha * p[i, c]
                res[i, c] -= alpha * q[i, c]
                pre[i, c] = res[i, c] * inv_diag[i]
        _project(pre, n)
        for i in range(r):
            for c in range(3):
                rz_new += res[i, c] * pre[i, c]
        beta = rz_new / rz
        rz = rz_new
        for i in range(r):
            for c in range(3):
                p[i, c] = pre[i, c] + beta * p[i, c]


def solve_shape_preserving(query, skinned, mesh, params: PushParams | None = None, *, directions=None, layers=(),
                           tightness=None, softness=None, iterations: int = ITERATIONS, falloff: float = FALLOFF):
    """Fix one garment against one posed body, keeping the garment's skinned shape.

    Parameters
    ----------
    query : kisekae.qa.BodyQuery
        The posed body (plain or contact-aware skinning).
    skinned : (N, 3) float
        The skinned garment, metres.
    mesh : kisekae.avatar.mesh.Mesh
        The garment at rest (faces, welded edges, weld, UVs for texture masks).
    params : PushParams, optional
        Clearance, cap, skirt bias and masks' defaults (module docstring).
    directions : (N, 3) float, optional
        Preferred outward directions (the skinned rest normals), used where the nearest body
        surface is buried in another part.
    layers : sequence of :class:`kisekae.fit.layers.LayerSurface`
        Fixed garments beneath this one; it stays outside each by the gap plus their thickness.
    tightness, softness : per-vertex arrays, UV textures or None (the params' defaults)
    iterations : int, most active-set iterations
    falloff : float, metres, how far a push spreads over the cloth

    Returns
    -------
    positions : (N, 3) float64, metres
    info : dict with ``contact`` (N,) bool (active at the end or moved by the last projection),
        ``forced`` (N,) bool, ``iterations`` and ``time_ms``
    """
    t0 = time.perf_counter()
    s = ShapeSolve(query, skinned, mesh, params or PushParams(), directions=directions, layers=layers,
                   tightness=tightness, softness=softness, iterations=iterations, falloff=falloff).run()
    contact = s.active[s.index] | s.forced
    info = {"contact": contact, "forced": s.forced, "iterations": s.iterations_used,
            "time_ms": (time.perf_counter() - t0) * 1e3}
    return s.positions, info


def _unit(v, fallback):
    """Rows of ``v`` as unit vectors; ``fallback`` rows where ``v`` is (nearly) zero."""
    ln = np.linalg.norm(v, axis=1, keepdims=True)
    return np.where(ln > 1e-12, v / np.maximum(ln, 1e-300), fallback)

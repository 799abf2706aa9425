"""Exact-skin push-out: garments end up outside the real skinned body surface.

Capsules only approximate the body. This solver judges against the posed body triangles
themselves, with the same inside test the penetration check uses (generalized winding number,
:mod:`kisekae.qa`), so "outside" means the same thing for the solver and for the check.

The body a garment must stay outside is the *union* of the posed body parts. Where linear blend
skinning makes the body overlap itself (the thigh sinks into the belly in a crouch) the nearest
body surface can itself be inside another part, so pushing to the nearest surface - what
Blender's Shrinkwrap "nearest surface point, outside" does - leaves vertices inside. This solver
projects onto the union's boundary instead. Per pose:

1. Signed distance of every garment vertex (unsigned distance and closest point from the BVH,
   sign from the winding number).
2. *Contact* vertices - closer than ``margin``, or an end of an edge that crosses the body - move
   by the push law of :func:`kisekae.fit.pushout.push_amount` along the outward direction at
   their closest surface point (skirt-biased when ``skirt_bias > 0``).
3. A pushed vertex that is still inside (it reached a surface buried in another part) marches
   along its preferred direction (the garment's rest normal carried by skinning, so neighbours
   move alike) to where that ray leaves the union; failing that, it goes to the nearest *exposed*
   body point: a posed body vertex whose point one gap out along its normal is outside the union
   (tested lazily, only near such vertices), plus the gap. Nothing beyond ``max_push`` is taken.
   (Trying the exposed point first keeps garments inside deep folds and looks tidier there, but
   leaves 2-4 times more crossing edges: leg_raise 9 / 1 against 1 / 0, sit 28 / 4 against 7 / 0.)
4. The displacement is smoothed over contact neighbours; a vertex that smoothing would put back
   inside keeps its unsmoothed position. Vertices that were clear never move. Then a short
   position-based projection restores the skinned edge lengths over the contact vertices (each
   iteration followed by putting escaped vertices back outside), so a trapped patch slides out
   as a piece rather than as scattered vertices with long edges between them.
5. Garment edges that still cross the body are lifted: both ends move along the outward
   direction at the chord's deepest sample by its depth plus the gap, shared by the ends'
   remaining ``max_push`` budgets; where the budgets cannot pay, the looser end is pulled back to
   just before the point where the edge enters the body.

Every displacement is capped at ``max_push``; the returned info says what, if anything, could
not be resolved within it.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.spatial import cKDTree

from ..errors import KisekaeError
from ..geom.bvh import build_bvh, refit
from ..geom.closest import closest_point_triangles_numpy, surface_distance
from ..geom.crossings import edge_crossings
from ..geom.edges import unique_edges
from ..geom.normals import face_normals, vertex_normals
from ..validate import as_points
from .pushout import (PushParams, bias_direction, cap_displacement, push_amount, resolve_mask,
                      smooth_displacement)

#: Displacements below this are numerical noise, not moves (metres).
MOVE_EPS = 1e-5
#: The "moved unnecessarily" threshold of the issue (metres).
UNNECESSARY = 1e-4


def signed_body_distance(query, points):
    """Signed distance to the posed body (metres, negative inside) with outward directions.

    Parameters
    ----------
    query : kisekae.qa.BodyQuery
        The posed body.
    points : array_like (P, 3)

    Returns
    -------
    d : ndarray (P,)
        Signed distance, metres.
    n : ndarray (P, 3)
        Unit outward direction (from the closest surface point towards outside).
    inside : ndarray bool (P,)
    """
    p = as_points(points, "garment vertices")
    inside = query.inside(p)
    dist, tri_id = surface_distance(p, query.topology.bvh, query.state)
    faces = query.topology.faces
    tri = query.vertices[faces[np.maximum(tri_id, 0)]]
    cp = closest_point_triangles_numpy(p, tri[:, 0], tri[:, 1], tri[:, 2])[0]
    fn = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]) * query.topology.orientation
    fn /= np.maximum(np.linalg.norm(fn, axis=1, keepdims=True), 1e-30)
    v = p - cp
    ln = np.linalg.norm(v, axis=1)
    sign = np.where(inside, -1.0, 1.0)
    n = np.where((ln > 1e-7)[:, None], v * (sign / np.maximum(ln, 1e-30))[:, None], fn)
    return sign * dist, n, inside





class _Exposure:
    """Lazily tested *exposed* body points: vertex + gap·normal that lie outside the union."""

    def __init__(self, query, offset):
        self.query = query
        self.v = np.asarray(query.vertices, dtype=np.float64)
        self.n = vertex_normals(self.v, query.topology.faces).astype(np.float64) * query.topology.orientation
        self.offset = offset
        self.state = np.full(len(self.v), -1, dtype=np.int8)  # -1 unknown, 0 buried, 1 exposed
        self.tree = cKDTree(self.v)

    def nearest(self, points, radius, k=6):
        """For each point the up to ``k`` nearest exposed offset points within ``radius`` (sorted)."""
        pts = np.asarray(points, dtype=np.float64)
        near = self.tree.query_ball_point(pts, r=radius)
        ids = np.unique(np.concatenate([np.asarray(x, dtype=np.int64) for x in near])) if len(pts) else []
        ids = np.asarray(ids, dtype=np.int64)
        unknown = ids[self.state[ids] < 0]
        if unknown.size:
            probe = self.v[unknown] + self.n[unknown] * self.offset
            self.state[unknown] = (~self.query.inside(probe)).astype(np.int8)
        exposed = ids[self.state[ids] == 1]
        out = []
        if exposed.size == 0:
            return [np.zeros(0, np.int64) for _ in range(len(pts))]
        sub = cKDTree(self.v[exposed] + self.n[exposed] * self.offset)
        dist, idx = sub.query(pts, k=min(k, exposed.size), distance_upper_bound=radius)
        dist = dist.reshape(len(pts), -1)
        idx = idx.reshape(len(pts), -1)
        for row_d, row_i in zip(dist, idx):
            out.append(exposed[row_i[np.isfinite(row_d)]])
        return out


#: Iterations and relaxation of the edge-length projection over contact vertices.
PBD_ITERATIONS = 20
PBD_RELAX = 0.5
#: Rounds of the final local search over crossing edges (0 disables it).
LOCAL_SEARCH_ROUNDS = 4

#: Step (metres) of the march along a preferred direction out of the body union.
MARCH_STEP = 0.003


def march_out(query, starts, directions, max_length: float, step: float = MARCH_STEP):
    """Where rays first leave the body (the union of overlapping parts), by winding number.

    Parameters
    ----------
    query : BodyQuery
    starts : (P, 3) points (usually inside), metres
    directions : (P, 3) unit directions
    max_length : float, metres

    Returns
    -------
    exit_points : (P, 3), the first outside sample refined by bisection
    distance : (P,) metres along the ray, ``inf`` where no exit lies within ``max_length``
    """
    starts = np.asarray(starts, dtype=np.float64)
    dirs = np.asarray(directions, dtype=np.float64)
    t = np.arange(1, int(np.ceil(max_length / step)) + 1) * step
    t = t[t <= max_length + 1e-12]
    if len(starts) == 0 or len(t) == 0:
        return starts.copy(), np.full(len(starts), np.inf)
    pts = starts[:, None, :] + t[None, :, None] * dirs[:, None, :]
    inside = query.inside(pts.reshape(-1, 3)).reshape(len(starts), len(t))
    outside = ~inside
    found = outside.any(axis=1)
    j = np.argmax(outside, axis=1)
    hi = np.where(found, t[j], np.inf)
    lo = np.where(j > 0, t[np.maximum(j - 1, 0)], 0.0)
    rows = np.flatnonzero(found)
    for _ in range(4):
        if rows.size == 0:
            break
        mid = 0.5 * (lo[rows] + hi[rows])
        ins = query.inside(starts[rows] + mid[:, None] * dirs[rows])
        lo[rows] = np.where(ins, mid, lo[rows])
        hi[rows] = np.where(ins, hi[rows], mid)
    exit_points = starts + np.where(found, hi, 0.0)[:, None] * dirs
    return exit_points, hi


#: Samples along a crossing edge used to find where it first enters the body.
EDGE_SAMPLES = 16
#: An edge end displaced more than this (metres) is "loose": it may be pulled back to its neighbour's side.
LOOSE = 0.005


def _fix_crossings(query, p, p0, edges, contact, gap, max_push) -> bool:
    """One round of resolving garment edges that cross the body, in place. Returns False when none cross.

    Usually both ends of a crossing edge are outside and the chord between them dips under a
    convex piece of skin. Both ends then move by the same vector: along the outward direction at
    the chord's deepest sample, by that depth plus the gap, which lifts the whole chord out.
    Where that lift would exceed ``max_push``, the looser end (the one displaced more) is instead
    pulled back to just before the point where the edge enters the body, seen from the other end.
    """
    cross = query.crossing_edges(p, edges)
    if not cross.any():
        return False
    ce = edges[cross]
    move = np.linalg.norm(p - p0, axis=1)
    a, b = ce[:, 0].copy(), ce[:, 1].copy()
    swap = move[a] > move[b]  # make b the looser end
    a[swap], b[swap] = ce[swap, 1], ce[swap, 0]
    s = np.arange(1, EDGE_SAMPLES) / EDGE_SAMPLES
    samples = p[a][:, None, :] + s[None, :, None] * (p[b] - p[a])[:, None, :]
    d, nn, inside = signed_body_distance(query, samples.reshape(-1, 3))
    d = d.reshape(len(ce), -1)
    nn = nn.reshape(len(ce), -1, 3)
    inside = inside.reshape(len(ce), -1)
    deepest = np.argmin(d, axis=1)
    rows = np.arange(len(ce))
    depth = np.maximum(-d[rows, deepest], 0.0)
    direction = nn[rows, deepest]
    need = depth + np.maximum(np.maximum(gap[a], gap[b]), 1e-4) + 1e-4
    s_deep = s[deepest]
    # Share the lift by the ends' remaining budgets: the chord point at s rises by (1 - s)·α + s·β.
    budget_a = np.maximum(max_push - move[a], 0.0)
    budget_b = np.maximum(max_push - move[b], 0.0)
    reach = (1.0 - s_deep) * budget_a + s_deep * budget_b
    k = need / np.maximum(reach, 1e-12)
    delta = np.zeros((len(p), 3))
    count = np.zeros(len(p))
    snap = []
    for i in range(len(ce)):
        if k[i] > 1.0:
            snap.append(i)
            continue
        # Equal lifts when both ends can afford the full need (a rigid lift keeps the edge's shape).
        if budget_a[i] >= need[i] and budget_b[i] >= need[i]:
            alpha = beta = need[i]
        else:
            alpha, beta = k[i] * budget_a[i], k[i] * budget_b[i]
        delta[a[i]] += alpha * direction[i]
        delta[b[i]] += beta * direction[i]
        count[a[i]] += 1
        count[b[i]] += 1
    m = count > 0
    p[m] += delta[m] / count[m, None]
    contact[m] = True
    done = np.zeros(len(p), dtype=bool)
    for i in snap:
        if done[b[i]] or not inside[i].any():
            continue
        j = int(np.argmax(inside[i]))
        t_first = s[j - 1] if j > 0 else 0.0
        # Closest to the loose end first; t = 0 collapses it onto the other end (always outside).
        for t in (t_first, 0.5 * t_first, 0.0):
            target = p[a[i]] + t * (p[b[i]] - p[a[i]])
            if np.linalg.norm(target - p0[b[i]]) > max_push:
                continue
            if t > 0 and query.inside(target[None])[0]:
                continue
            p[b[i]] = target
            done[b[i]] = True
            contact[b[i]] = True
            break
    cap_displacement(p, p0, max_push)
    return True


def _body_edges(query) -> np.ndarray:
    """Unique edges of the body triangles, cached on the body topology."""
    e = getattr(query.topology, "_edges", None)
    if e is None:
        e = unique_edges(query.topology.faces).astype(np.int64)
        query.topology._edges = e
    return e


def exposed_body_edges(query, offset: float = 1e-3) -> np.ndarray:
    """Body edges with both ends on the outside of the body union (cached on the query).

    A vertex is exposed when the point ``offset`` out along its normal is outside the union
    (winding number); skin buried inside another body part cannot show through cloth.
    """
    e = getattr(query, "_exposed_edges", None)
    if e is None:
        v = np.asarray(query.vertices, dtype=np.float64)
        n = vertex_normals(v, query.topology.faces).astype(np.float64) * query.topology.orientation
        exposed = ~query.inside(v + offset * n)
        be = _body_edges(query)
        e = be[exposed[be[:, 0]] & exposed[be[:, 1]]]
        query._exposed_edges = e
    return e


def _lift_pierced_faces(query, p, p0, faces, contact, gap, max_push) -> int:
    """One round of lifting garment triangles that exposed skin pierces (in place).

    Skin can show through cloth without any garment edge crossing it: a bump (a knuckle, a
    kneecap) pokes through the middle of a garment face. For each exposed body edge through a
    garment triangle, the triangle's corners rise along its outward normal until the bump's tip
    is a gap below the face. Returns how many piercing body edges were found.
    """

    bvh = build_bvh(p, faces)
    state = refit(bvh, p, faces)
    vb = np.asarray(query.vertices, dtype=np.float64)
    be = exposed_body_edges(query)
    hit, tri = edge_crossings(vb, be, bvh, state, return_triangles=True)
    if not hit.any():
        return 0
    be = be[hit]
    f = faces[tri[hit]]
    fn = face_normals(p, faces)[tri[hit]]
    # Outward: the side the body's outward normal points to at the face.
    _, nb, _ = signed_body_distance(query, p[f].mean(axis=1))
    fn = np.where((np.einsum("ij,ij->i", fn, nb) < 0)[:, None], -fn, fn)
    tip = np.maximum(np.einsum("ij,ij->i", vb[be[:, 0]] - p[f[:, 0]], fn),
                     np.einsum("ij,ij->i", vb[be[:, 1]] - p[f[:, 0]], fn))
    lift = np.maximum(tip, 0.0) + np.maximum(gap[f].max(axis=1), 1e-4)
    need = np.zeros(len(p))
    dsum = np.zeros((len(p), 3))
    for col in range(3):
        np.maximum.at(need, f[:, col], lift)
        np.add.at(dsum, f[:, col], fn)
    moved = need > 0
    d = dsum[moved] / np.maximum(np.linalg.norm(dsum[moved], axis=1, keepdims=True), 1e-12)
    p[moved] += need[moved, None] * d
    contact[moved] = True
    cap_displacement(p, p0, max_push)
    return int(hit.sum())


def _resolve_crossings_locally(query, p, p0, edges, contact, max_push, rounds: int = 4) -> int:
    """Greedy local search that only ever lowers the number of garment edges through the body.

    For each crossing edge between two contact vertices, candidate moves of one of its ends are
    tried in order - onto the other end (both are outside, so a zero-length edge crosses nothing),
    halfway to it, then onto or halfway to each garment vertex within two edges - and a move is
    kept only if it stays within ``max_push``, stays outside the body, and strictly lowers the
    number of crossing edges around the moved vertex. The count can only fall. In place; returns
    the crossings left.
    """
    from scipy import sparse

    n = len(p)
    inc = sparse.csr_matrix((np.ones(2 * len(edges)), (np.concatenate([edges[:, 0], edges[:, 1]]),
                                                        np.tile(np.arange(len(edges)), 2))), shape=(n, len(edges)))

    adj = [[] for _ in range(n)]
    for u, v in edges:
        adj[u].append(int(v))
        adj[v].append(int(u))

    def local_count(vertices):
        rows = np.unique(inc[vertices].indices)
        return int(query.crossing_edges(p, edges[rows]).sum())

    left = 0
    for _ in range(rounds):
        cross = query.crossing_edges(p, edges)
        left = int(cross.sum())
        if left == 0:
            break
        improved = False
        for a, b in edges[cross]:
            if not (contact[a] and contact[b]):
                continue
            if not query.crossing_edges(p, np.array([[a, b]]))[0]:
                continue  # fixed by an earlier move this round
            cands = [(b, a, 1.0), (a, b, 1.0), (a, b, 0.5), (b, a, 0.5)]
            for m in (a, b):
                ring = set(adj[m])
                for nb in adj[m]:
                    ring.update(adj[nb])
                ring.discard(m)
                for nb in sorted(ring):
                    cands += [(m, nb, 1.0), (m, nb, 0.5)]
            for mover, toward, f in cands:
                target = p[mover] + f * (p[toward] - p[mover])
                if np.linalg.norm(target - p0[mover]) > max_push:
                    continue
                if query.inside(target[None])[0]:
                    continue
                touched = np.array([mover])
                before = local_count(touched)
                old = p[mover].copy()
                p[mover] = target
                if local_count(touched) < before:
                    improved = True
                    break
                p[mover] = old
        if not improved:
            break
    return left


class _ExactSolve:
    """State of one :func:`push_out_exact` call, with one method per step of the module docstring.

    ``p0`` (N, 3) are the posed garment vertices, ``p`` the current positions (changed in place by
    every step), ``contact`` (N,) the vertices that needed to move, ``gap`` (N,) the clearance
    each contact vertex keeps from the skin (metres), ``dirs`` / ``floor`` the push direction and
    length of step 2 (smoothing keeps at least that much).
    """

    def __init__(self, query, points, edges, params: PushParams, tightness, softness, uvs, max_rounds, up,
                 directions):
        params.validate()
        self.query = query
        self.p0 = p0 = as_points(points, "garment vertices")
        self.n = n = len(p0)
        e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        if e.size and (e.min() < 0 or e.max() >= n):
            raise KisekaeError(f"edge index out of range for {n} vertices", "edges")
        self.e = e
        self.params = params
        self.tight = resolve_mask(tightness, n, "tightness", uvs, default=params.tightness)
        self.soft = resolve_mask(softness, n, "softness", uvs, default=params.softness)
        self.up = np.asarray(up, dtype=np.float64)
        self.margin, self.max_push = params.margin, params.max_push
        self.max_rounds = max_rounds
        self.gap = params.stiffness * (1.0 - 0.5 * self.tight) * self.margin
        self.probe_gap = max(float(self.gap.max(initial=0.0)), 0.25 * self.margin, 1e-4)
        self.exposure = None
        self.pref = None
        if directions is not None:
            pref = as_points(directions, "directions")
            if len(pref) != n:
                raise KisekaeError(f"expected {n} directions, got {len(pref)}", "directions")
            self.pref = pref / np.maximum(np.linalg.norm(pref, axis=1, keepdims=True), 1e-12)
        self.rounds = 0

    def push_contacts(self) -> None:
        """Steps 1-2: signed distance, contact vertices, the push law along the outward direction."""
        q, p0, e, n = self.query, self.p0, self.e, self.n
        self.d0, n0, _inside0 = signed_body_distance(q, p0)
        crossing0 = q.crossing_edges(p0, e) if e.size else np.zeros(0, bool)
        contact = self.d0 < self.margin
        if crossing0.any():
            contact[e[crossing0].ravel()] = True
        self.contact = contact
        self.p = p0.copy()
        self.idx = idx = np.flatnonzero(contact)
        self.dirs = np.zeros((n, 3))
        self.floor = np.zeros(n)
        if idx.size:
            prm = self.params
            amount = push_amount(self.d0[idx], self.margin, prm.stiffness, self.max_push, self.tight[idx],
                                 self.soft[idx], prm.skirt_bias)
            direction = bias_direction(n0[idx], prm.skirt_bias, self.up)
            self.p[idx] += amount[:, None] * direction
            self.dirs[idx] = direction
            self.floor[idx] = amount
        self.last_good = None

    def reproject(self, p) -> int:
        """Step 3: move contact vertices of ``p`` that are still inside (in place); how many were."""
        q, p0, gap, max_push = self.query, self.p0, self.gap, self.max_push
        cand = np.flatnonzero(self.contact)
        if cand.size == 0:
            return 0
        bad = cand[q.inside(p[cand])]
        if bad.size == 0:
            return 0
        # First try: the closest surface point plus the gap (one body part).
        d, nn, inside = signed_body_distance(q, p[bad])
        trial = p[bad] + (np.maximum(-d, 0.0) + gap[bad])[:, None] * nn
        ok = (np.linalg.norm(trial - p0[bad], axis=1) <= max_push) & ~q.inside(trial)
        p[bad[ok]] = trial[ok]
        bad = bad[~ok]
        if bad.size == 0:
            return 0
        # Then: march along the preferred direction to where the union ends.
        if self.pref is not None:
            ex, dist = march_out(q, p[bad], self.pref[bad], max_push)
            trial = ex + gap[bad][:, None] * self.pref[bad]
            ok = np.isfinite(dist) & (np.linalg.norm(trial - p0[bad], axis=1) <= max_push)
            ok[ok] = ~q.inside(trial[ok])
            p[bad[ok]] = trial[ok]
            bad = bad[~ok]
            if bad.size == 0:
                return 0
        # Then: the nearest exposed point of the union's boundary.
        self._to_exposed(p, bad)
        return int(bad.size)

    def _to_exposed(self, p, bad) -> None:
        """Move each vertex ``bad`` to the nearest exposed body point within its budget, if any."""
        if self.exposure is None:
            self.exposure = _Exposure(self.query, self.probe_gap)
        exposure, gap = self.exposure, self.gap
        near = exposure.nearest(p[bad], radius=self.max_push + self.probe_gap)
        for i, cands in zip(bad, near):
            for v in cands:
                target = exposure.v[v] + exposure.n[v] * max(gap[i], 1e-4)
                if np.linalg.norm(target - self.p0[i]) > self.max_push:
                    continue
                if gap[i] != self.probe_gap and self.query.inside(target[None])[0]:
                    continue
                p[i] = target
                break

    def project(self, p) -> int:
        """Up to ``max_rounds`` rounds of :meth:`reproject` until nothing is inside; rounds used."""
        r = 0
        while r < self.max_rounds and self.reproject(p):
            r += 1
        return r

    def _put_back(self, p, before) -> np.ndarray:
        """Contact vertices of ``p`` that are inside go back to ``before``; returns their indices."""
        c = np.flatnonzero(self.contact)
        back = c[self.query.inside(p[c])]
        p[back] = before[back]
        return back

    def relax(self) -> None:
        """Steps 3-4: project, then smooth the displacement over contact neighbours (three sweeps)."""
        smooth_iters = max(int(self.params.smooth_iterations), 0)
        for _sweep in range(3):
            self.rounds += self.project(self.p)
            if smooth_iters == 0 or self.idx.size == 0:
                break
            # Relax the displacement over contact neighbours so projected vertices form a coherent
            # sheet; a vertex that relaxing puts back inside keeps its previous position.
            before = self.p.copy()
            disp = smooth_displacement(self.p - self.p0, self.contact, self.e, smooth_iters, 0.5, self.floor,
                                       self.dirs)
            self.p = cap_displacement(self.p0 + disp, self.p0, self.max_push)
            if self._put_back(self.p, before).size == 0:
                break

    def keep_edge_lengths(self) -> None:
        """Step 4, second half: position-based projection restoring skinned edge lengths.

        Each Jacobi iteration restores the edge lengths over the contact vertices and then puts any
        vertex that went inside back outside, so trapped patches slide out as a piece instead of
        each vertex going its own way (fewer long edges cut through the body).
        """
        e, p, p0, n = self.e, self.p, self.p0, self.n
        if not (e.size and PBD_ITERATIONS):
            return
        rest_len = np.linalg.norm(p0[e[:, 0]] - p0[e[:, 1]], axis=1)
        mov = self.contact.astype(np.float64)
        wa, wb = mov[e[:, 0]], mov[e[:, 1]]
        wsum = wa + wb
        for _ in range(PBD_ITERATIONS):
            d = p[e[:, 1]] - p[e[:, 0]]
            ln = np.linalg.norm(d, axis=1)
            active = (wsum > 0) & (ln > 1e-12)
            corr = np.zeros_like(d)
            corr[active] = ((ln[active] - rest_len[active]) / ln[active])[:, None] * d[active] / wsum[active, None]
            acc = np.zeros((n, 3))
            cnt = np.zeros(n)
            np.add.at(acc, e[:, 0], wa[:, None] * corr)
            np.add.at(acc, e[:, 1], -wb[:, None] * corr)
            np.add.at(cnt, e[:, 0], wa * active)
            np.add.at(cnt, e[:, 1], wb * active)
            m = self.contact & (cnt > 0)
            before = p.copy()
            p[m] += PBD_RELAX * acc[m] / cnt[m, None]
            cap_displacement(p, p0, self.max_push)
            self.project(p)
            self._put_back(p, before)

    def settle(self) -> None:
        """Project; a contact vertex still inside returns to its last position outside.

        A lift that pushes a vertex into another body part beyond repair is undone rather than
        left inside.
        """
        if self.last_good is None:
            self.last_good = self.p.copy()
        self.project(self.p)
        c = np.flatnonzero(self.contact)
        if c.size:
            inside = self.query.inside(self.p[c])
            self.last_good[c[~inside]] = self.p[c[~inside]]
            self.p[c[inside]] = self.last_good[c[inside]]

    def lift_crossings(self, garment_faces, crossing_rounds: int, pierce_rounds: int) -> None:
        """Step 5: garment edges through the body (:func:`_fix_crossings`), then skin bumps through
        the middle of garment faces (:func:`_lift_pierced_faces`); lifting faces can make new edge
        crossings, so the two alternate. Last, a local search over what still crosses."""
        q, p, p0, e, contact, gap, max_push = self.query, self.p, self.p0, self.e, self.contact, self.gap, self.max_push
        faces = None if garment_faces is None else np.asarray(garment_faces, dtype=np.int64)
        for sweep in range(2 if faces is not None and len(faces) else 1):
            if e.size:
                for _ in range(crossing_rounds if sweep == 0 else max(crossing_rounds // 3, 1)):
                    if not _fix_crossings(q, p, p0, e, contact, gap, max_push):
                        break
                    self.settle()
            if faces is None or not len(faces):
                break
            pierced = 0
            for _ in range(pierce_rounds):
                pierced = _lift_pierced_faces(q, p, p0, faces, contact, gap, max_push)
                if not pierced:
                    break
                self.settle()
            if not pierced and not (e.size and q.crossing_edges(p, e).any()):
                break
        if e.size and LOCAL_SEARCH_ROUNDS:
            _resolve_crossings_locally(q, p, p0, e, contact, max_push, LOCAL_SEARCH_ROUNDS)

    def result(self, t0: float):
        """``(new_points float32 (N, 3), info)`` as :func:`push_out_exact` returns them."""
        p, p0, contact = self.p, self.p0, self.contact
        push = np.linalg.norm(p - p0, axis=1)
        unresolved = np.zeros(self.n, dtype=bool)
        if contact.any():
            c = np.flatnonzero(contact)
            unresolved[c] = self.query.inside(p[c])
        return p.astype(np.float32), {
            "push": push,
            "d_before": self.d0,
            "moved": push > MOVE_EPS,
            "contact": contact,
            "unresolved": unresolved,
            "rounds": self.rounds,
            "time_ms": (time.perf_counter() - t0) * 1e3,
        }


def push_out_exact(query, points, edges, params: PushParams | None = None, tightness=None, softness=None, uvs=None,
                   max_rounds: int = 4, up=(0.0, 1.0, 0.0), garment_faces=None, crossing_rounds: int = 30,
                   directions=None, pierce_rounds: int = 6):
    """Push a posed garment outside the posed body surface (see the module docstring).

    Parameters
    ----------
    query : kisekae.qa.BodyQuery
        The posed body (``BodyQuery(topology, posed_body_vertices)``).
    points : array_like (N, 3)
        Posed garment vertices, metres.
    edges : array_like int (E, 2)
        Welded garment edges (smoothing and the crossing fix).
    params : PushParams, optional
    tightness, softness : None, float, (N,) or texture
        Masks (see :func:`kisekae.fit.pushout.resolve_mask`).
    uvs : array_like (N, 2), optional
        Needed when a mask is a texture.
    max_rounds : int
        Rounds of re-projecting vertices that are still inside.
    up : array_like (3,)
        World up (skirt bias).
    garment_faces : (F, 3) int array, optional
        Garment triangles. With them, body edges that pierce a garment face between its vertices
        (a knuckle through a glove's face) lift that face (``pierce_rounds`` rounds).
    crossing_rounds : int
        Rounds of the edge-crossing fix.
    directions : (N, 3) array, optional
        Preferred outward directions, consistent over the garment (e.g. the garment's rest normals
        carried by skinning). A vertex trapped where body parts overlap marches along its own
        preferred direction to where it leaves the body, so neighbours stay neighbours.

    Returns
    -------
    new_points : ndarray float32 (N, 3)
    info : dict
        ``push`` (N,) displacement length (m), ``d_before`` (N,) signed distance before (m),
        ``moved`` (N,) bool, ``contact`` (N,) bool (needed to move), ``unresolved`` (N,) bool
        (still inside after the solver), ``rounds`` int, ``time_ms`` float.
    """
    t0 = time.perf_counter()
    s = _ExactSolve(query, points, edges, params or PushParams(), tightness, softness, uvs, max_rounds, up,
                    directions)
    s.push_contacts()  # steps 1-2
    s.relax()  # steps 3-4 (projections inside)
    s.keep_edge_lengths()
    s.settle()
    s.lift_crossings(garment_faces, crossing_rounds, pierce_rounds)  # step 5
    return s.result(t0)

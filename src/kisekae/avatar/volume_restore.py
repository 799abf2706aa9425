"""Give back the volume that skinning and the contact take from each body part.

Linear blend skinning collapses the flesh at a bent joint, and a contact step that flattens two parts
against each other removes the volume where they overlapped: in the crouch the built-in body loses 8 % of
its volume to skinning alone and 13 % once the parts are kept apart. Real flesh keeps its volume: what is
pressed in bulges out beside the contact. This step measures the volume of each bone's part and moves the
surface out along its normal, away from the contacts, until each part has its rest volume again.

Parts: each triangle belongs to the bone with the largest skin weight summed over its corners. A part is an
open surface; it is closed by capping each of its cuts, the loop of edges it shares with a neighbouring part,
with a fan to the centroid of that pair's cut vertices (:func:`part_caps`). The two parts on either side of a
cut use the same fan with opposite orientation, so the parts' closed volumes sum exactly to the body's
(:func:`part_volumes`), a part that moves rigidly keeps its volume, and the measure does not depend on where
the body stands.

Each round solves one bulge amplitude per bone, ``α_b >= 0``, so that the displacement

    δ_i = ψ_i n̂_i Σ_b w_ib α_b

gives each part back, to first order, the volume it lost (non-negative least squares ``K α = D`` with one
unknown per bone: ``K_pb = Σ_i ψ_i (n̂_i · g_ip) w_ib``, ``g_ip`` the derivative of part ``p``'s volume by vertex
``i``). ``ψ`` is 1 away from the contacts and 0 on the vertices of contact pairs, smoothed over a few rings so the
bulge fades into the contact (:func:`contact_falloff`). Parts that gained volume are left as they are; skin
weights are smooth, so the bulge is smooth across the cuts. The rest pose is unchanged (no part has lost
volume), and every sum runs in a fixed order (deterministic).

Functions work on plain arrays: :func:`face_parts`, :func:`part_caps`, :func:`part_volumes`,
:func:`contact_falloff` and :func:`restore_part_volumes`; :class:`PartVolumes` holds what is made once per body.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import nnls

from ..errors import KisekaeError
from ..geom.normals import vertex_normals

#: Default rounds of (measure, solve, displace) per call; the bulge is solved to first order, so further rounds
#: take up what the curvature of the surface left.
ROUNDS = 3
#: Default ring passes that spread the contact mask (the bulge fades to nothing over about this many rings).
FALLOFF_PASSES = 4
#: Default weight that ties a bone's bulge amplitude to its parent's (relative to the system's scale).
SPREAD = 0.1
#: Parts smaller than this fraction of the body's rest volume get no bulge of their own, and their volume is held
#: where it is: fingers, toes and hands are too small to bulge and sit in creases that touch at rest.
MIN_PART_FRACTION = 0.01
#: Default ring passes that smooth the bulge's directions (a navel or a skin crease would close on itself if each
#: vertex moved along its own normal).
NORMAL_PASSES = 8
#: Ridge added to the bulge system, relative to its largest diagonal entry (parts with almost no free surface).
RIDGE = 1e-6


def face_parts(tri, idx, w, n_bones: int) -> np.ndarray:
    """(T,) int64 part of each triangle: the bone with the largest skin weight summed over its three corners
    (the lowest bone id on a tie)."""
    t = np.asarray(tri, dtype=np.int64)
    idx = np.asarray(idx, dtype=np.int64)
    w = np.asarray(w, dtype=np.float64)
    acc = np.zeros((len(t), n_bones))
    rows = np.repeat(np.arange(len(t)), idx.shape[1])
    for k in range(3):
        np.add.at(acc, (rows, idx[t[:, k]].ravel()), w[t[:, k]].ravel())
    return np.argmax(acc, axis=1)


def part_caps(tri, parts) -> tuple:
    """The cuts between parts: every directed edge of a part's triangle whose twin lies in another part.

    Returns
    -------
    cap_edges : (C, 2) int64, the edge reversed (so the fan triangle ``(a, b, centre)`` closes the part)
    cap_part : (C,) int64, the part the edge closes
    cap_pair : (C,) int64, the cut (an id per unordered pair of parts) whose centre the fan uses
    pair_vertices : list of int64 arrays, the vertices of each cut
    """
    t = np.asarray(tri, dtype=np.int64)
    parts = np.asarray(parts, dtype=np.int64)
    e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    owner = np.tile(parts, 3)
    key = np.sort(e, axis=1)
    _, inv, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    first = np.full(len(counts), -1, dtype=np.int64)
    second = np.full(len(counts), -1, dtype=np.int64)
    order = np.argsort(inv, kind="stable")
    sorted_inv = inv[order]
    starts = np.searchsorted(sorted_inv, np.arange(len(counts)))
    two = counts == 2  # a manifold edge; open or non-manifold edges close no cut
    first[two] = order[starts[two]]
    second[two] = order[starts[two] + 1]
    a, b = first[two], second[two]
    cut = owner[a] != owner[b]
    a, b = a[cut], b[cut]
    edges = np.concatenate([e[a][:, ::-1], e[b][:, ::-1]])
    cap_part = np.concatenate([owner[a], owner[b]])
    pairs = np.sort(np.stack([owner[a], owner[b]], axis=1), axis=1)
    uniq, pair_of = np.unique(pairs, axis=0, return_inverse=True)
    pair_of = pair_of.ravel()
    cap_pair = np.concatenate([pair_of, pair_of])
    pair_vertices = [np.unique(e[a][pair_of == k]) for k in range(len(uniq))]
    return edges, cap_part, cap_pair, pair_vertices


def part_volumes(points, tri, parts, caps, n_parts: int, orientation: float = 1.0) -> np.ndarray:
    """(n_parts,) closed volume of each part (module docstring), m³, from :func:`face_parts` and :func:`part_caps`.

    ``points`` are best given relative to a point near the body (rounding).
    """
    y = np.asarray(points, dtype=np.float64)
    t = np.asarray(tri, dtype=np.int64)
    edges, cap_part, cap_pair, pair_vertices = caps
    centre = np.array([y[v].mean(axis=0) for v in pair_vertices]).reshape(-1, 3)
    face = np.einsum("ij,ij->i", y[t[:, 0]], np.cross(y[t[:, 1]], y[t[:, 2]]))
    fan = np.einsum("ij,ij->i", y[edges[:, 0]], np.cross(y[edges[:, 1]], centre[cap_pair]))
    vol = np.bincount(parts, weights=face, minlength=n_parts) + np.bincount(cap_part, weights=fan, minlength=n_parts)
    return vol * orientation / 6.0


def contact_falloff(m: int, contact, ring_ptr, ring_idx, passes: int = FALLOFF_PASSES) -> np.ndarray:
    """(M,) bulge mask ψ: 0 on the ``contact`` vertices, rising to 1 over ``passes`` rings.

    Each pass replaces ψ by the minimum of itself and its ring's mean, so the contact vertices stay at 0 and
    the mask is smooth around them.
    """
    psi = np.ones(m)
    psi[np.asarray(contact, dtype=np.int64)] = 0.0
    count = np.diff(ring_ptr)
    owner = np.repeat(np.arange(m), count)
    for _ in range(int(passes)):
        mean = np.bincount(owner, weights=psi[ring_idx], minlength=m) / np.maximum(count, 1)
        psi = np.minimum(psi, np.where(count > 0, mean, psi))
    return psi


def smooth_directions(normal, ring_ptr, ring_idx, passes: int) -> np.ndarray:
    """(M, 3) unit directions: ``normal`` averaged with its one-ring ``passes`` times, renormalised (a pit or a
    small crease moves with the surface around it instead of closing on itself)."""
    d = np.asarray(normal, dtype=np.float64).copy()
    count = np.diff(ring_ptr)
    owner = np.repeat(np.arange(len(d)), count)
    for _ in range(int(passes)):
        acc = d.copy()
        for a in range(3):
            acc[:, a] += np.bincount(owner, weights=d[ring_idx, a], minlength=len(d))
        d = acc
    size = np.linalg.norm(d, axis=1)
    return np.divide(d, size[:, None], out=np.zeros_like(d), where=size[:, None] > 0)


def _bulge_system(points, tri, parts, normal, psi, idx, w, n_bones: int, orientation: float) -> np.ndarray:
    """(B, B) K of the module docstring: how each bone's amplitude changes each part's volume."""
    y = np.asarray(points, dtype=np.float64)
    t = np.asarray(tri, dtype=np.int64)
    n = np.cross(y[t[:, 1]] - y[t[:, 0]], y[t[:, 2]] - y[t[:, 0]]) * (orientation / 6.0)
    K = np.zeros((n_bones, n_bones))
    kk = idx.shape[1]
    for c in range(3):
        v = t[:, c]
        g = np.einsum("ij,ij->i", normal[v], n) * psi[v]
        np.add.at(K, (np.repeat(parts, kk), idx[v].ravel()), (g[:, None] * w[v]).ravel())
    return K


def _smoothing_rows(parents, n_bones: int) -> np.ndarray:
    """(E, B) rows ``α_b − α_parent(b)``, one per bone with a parent."""
    parents = np.asarray(parents, dtype=np.int64)
    child = np.flatnonzero(parents >= 0)
    rows = np.zeros((len(child), n_bones))
    rows[np.arange(len(child)), child] = 1.0
    rows[np.arange(len(child)), parents[child]] = -1.0
    return rows


def restore_part_volumes(y, rest_volumes, tri, parts, caps, idx, w, psi, *, orientation: float = 1.0,
                         rounds: int = ROUNDS, parents=None, spread: float = SPREAD, free=None, ring=None,
                         normal_passes: int = NORMAL_PASSES) -> tuple:
    """Move ``y`` out along its normals until each bone's part has its rest volume again.

    Parameters
    ----------
    y : (M, 3) body positions to correct, metres
    rest_volumes : (B,) each part's volume at rest (:func:`part_volumes` of the rest mesh), m³
    tri : (T, 3) triangles; parts : (T,) :func:`face_parts`; caps : :func:`part_caps`
    idx, w : (M, K) skin; psi : (M,) bulge mask in [0, 1] (:func:`contact_falloff`)
    orientation : +1 or -1, the outward sign of the triangles
    rounds : int >= 0
    parents : (B,) int parent of each bone (-1 for a root) or None; with ``spread > 0`` the amplitudes of a
        bone and its parent are tied (weight ``spread`` relative to the system's largest diagonal entry), so a
        part that lost much shares its bulge with its neighbours instead of ballooning alone
    ring : (ring_ptr, ring_idx) CSR one-ring or None; with it the bulge goes along the normals smoothed over
        ``normal_passes`` rings (:func:`smooth_directions`), else along the vertex normals
    free : (B,) bool or None (all), the parts that may bulge; the others get no amplitude and their volume is
        held where it is (their loss is not restored, and no neighbour's bulge may spill into them)

    Returns
    -------
    (corrected (M, 3) float64 positions, amplitudes (B,) metres summed over the rounds)
    """
    idx = np.asarray(idx, dtype=np.int64)
    w = np.asarray(w, dtype=np.float64)
    rest_volumes = np.asarray(rest_volumes, dtype=np.float64)
    n_bones = len(rest_volumes)
    if idx.shape != w.shape or idx.shape[0] != len(y) or len(psi) != len(y):
        raise KisekaeError("skin, mask and positions disagree in length", "volume restore")
    free = np.ones(n_bones, dtype=bool) if free is None else np.asarray(free, dtype=bool)
    y = np.asarray(y, dtype=np.float64)
    origin = y.mean(axis=0)
    out = y - origin
    total = np.zeros(n_bones)
    for _ in range(int(rounds)):
        lost = np.where(free, rest_volumes - part_volumes(out, tri, parts, caps, n_bones, orientation), 0.0)
        if not np.any(lost > 0):
            break
        normal = vertex_normals(out, tri, dtype=np.float64) * orientation
        if ring is not None and normal_passes > 0:
            normal = smooth_directions(normal, ring[0], ring[1], normal_passes)
        K = _bulge_system(out, tri, parts, normal, psi, idx, w, n_bones, orientation)
        scale = max(float(np.max(np.abs(np.diag(K)))), 1e-30)
        A = [K + RIDGE * scale * np.eye(n_bones)]
        b = [lost]
        if parents is not None and spread > 0:
            tie = _smoothing_rows(parents, n_bones)
            A.append(np.sqrt(spread) * scale * tie)
            b.append(np.zeros(len(tie)))
        alpha = np.zeros(n_bones)
        alpha[free] = nnls(np.vstack(A)[:, free], np.concatenate(b))[0]
        out = out + (psi * np.einsum("mk,mk->m", w, alpha[idx]))[:, None] * normal
        total += alpha
    return out + origin, total


class PartVolumes:
    """What :func:`restore_part_volumes` needs of one body, made once from its rest mesh and skin.

    Parameters
    ----------
    rest : (M, 3) rest positions, metres; tri : (T, 3) triangles; idx, w : (M, K) skin; n_bones : int
    orientation : +1 or -1, the outward sign of the triangles
    ring_ptr, ring_idx : CSR one-ring (for :func:`contact_falloff`)
    parents : (B,) int or None, the skeleton's parents (the bulge of a bone is tied to its parent's)
    held : int array or None, vertices that never bulge (creases that touch at rest, such as
        :func:`kisekae.avatar.contact_solve.crease_vertices` of the rest mesh), besides each call's contacts
    """

    def __init__(self, rest, tri, idx, w, n_bones: int, orientation: float, ring_ptr, ring_idx, parents=None,
                 held=None):
        rest = np.asarray(rest, dtype=np.float64)
        self.tri = np.asarray(tri, dtype=np.int64)
        self.idx = np.ascontiguousarray(idx, dtype=np.int64)
        self.w = np.ascontiguousarray(w, dtype=np.float64)
        if self.idx.ndim != 2 or self.idx.shape != self.w.shape or self.idx.shape[0] != len(rest):
            raise KisekaeError(f"skin of {self.idx.shape[0]} vertices for a body of {len(rest)}", "volume restore")
        if not np.all(np.isfinite(self.w)) or (self.idx.size and (self.idx.min() < 0 or self.idx.max() >= n_bones)):
            raise KisekaeError("skin weights must be finite and bone ids within the skeleton", "volume restore")
        self.orientation = float(orientation)
        self.n_bones = int(n_bones)
        self.ring_ptr, self.ring_idx = ring_ptr, ring_idx
        self.held = np.zeros(0, dtype=np.int64) if held is None else np.asarray(held, dtype=np.int64).ravel()
        if self.held.size and (self.held.min() < 0 or self.held.max() >= len(rest)):
            raise KisekaeError(f"held vertex ids must lie in [0, {len(rest)})", "volume restore")
        self.parents = None if parents is None else np.asarray(parents, dtype=np.int64)
        if self.parents is not None and self.parents.shape != (self.n_bones,):
            raise KisekaeError(f"parents must hold {self.n_bones} bone ids", "volume restore")
        self.parts = face_parts(self.tri, self.idx, self.w, self.n_bones)
        self.caps = part_caps(self.tri, self.parts)
        self.rest_volumes = part_volumes(rest - rest.mean(axis=0), self.tri, self.parts, self.caps, self.n_bones,
                                         self.orientation)
        self.free = self.rest_volumes >= MIN_PART_FRACTION * self.rest_volumes.sum()

    def volumes(self, y) -> np.ndarray:
        """(B,) each part's closed volume in ``y``, m³."""
        y = np.asarray(y, dtype=np.float64)
        return part_volumes(y - y.mean(axis=0), self.tri, self.parts, self.caps, self.n_bones, self.orientation)

    def restore(self, y, contact, *, rounds: int = ROUNDS, passes: int = FALLOFF_PASSES) -> np.ndarray:
        """(M, 3) ``y`` with each part's lost volume given back away from the ``contact`` vertex ids."""
        psi = contact_falloff(len(y), np.concatenate([np.asarray(contact, dtype=np.int64).ravel(), self.held]),
                              self.ring_ptr, self.ring_idx, passes)
        return restore_part_volumes(y, self.rest_volumes, self.tri, self.parts, self.caps, self.idx, self.w, psi,
                                    orientation=self.orientation, rounds=rounds, parents=self.parents, free=self.free,
                                    ring=(self.ring_ptr, self.ring_idx))[0]

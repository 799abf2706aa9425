"""Fit tapered capsules to a skinned body, and report how well they fit.

Two methods. The *medial* method (:func:`fit_capsules_medial`, used by :func:`fit_capsules` when
the body triangles are given) keeps every capsule inside the body up to a small ``bulge`` and
covers flat parts (the torso) with up to three parallel capsule chains per bone. The *quantile*
method (no triangles needed) follows.

Quantile method: for each bone, the body vertices it dominates (largest skin weight, at least ``min_weight``) are
moved into the bone's rest space. Their principal axis gives the capsule axis; the extent along
it (trimmed by ``trim`` quantiles) gives the segment; the radius at each end is the
``radius_quantile`` of the radial distances of the points in the first / last ``end_fraction``
of the segment. Long bones are split into up to ``max_per_bone`` capsules so that each is at
most ``split_ratio`` radii long. End spheres are pulled in by their radius so the rounded caps do
not overshoot the bone's region.
"""

from __future__ import annotations

import numpy as np

from ..errors import KisekaeError
from ..validate import as_points
from ..avatar.capsules import CapsuleRig, validate_capsules
from .sdf import capsule_field


def _skinned_body(vertices, skin_indices, skin_weights, rest_matrices):
    """Validated ``(vertices, indices, weights, rest)`` of a skinned body (shared by both fitting methods)."""
    v = as_points(vertices, "body vertices")
    idx = np.asarray(skin_indices)
    w = np.asarray(skin_weights, dtype=np.float64)
    if idx.shape != w.shape or idx.ndim != 2 or idx.shape[0] != len(v):
        raise KisekaeError(f"skin indices {idx.shape} and weights {w.shape} must both be ({len(v)}, K)", "skin")
    rest = np.asarray(rest_matrices, dtype=np.float64)
    if rest.ndim != 3 or rest.shape[1:] != (4, 4):
        raise KisekaeError(f"expected shape (B, 4, 4), got {rest.shape}", "rest_matrices")
    return v, idx, w, rest


def _bone_vertices(idx, w, n_bones: int, min_weight: float, min_points: int):
    """``(bone, mask)`` for every bone that dominates at least ``min_points`` vertices with weight >= ``min_weight``."""
    top = np.argmax(w, axis=1)
    rows = np.arange(len(w))
    dom, dom_w = idx[rows, top], w[rows, top]
    for b in range(n_bones):
        sel = (dom == b) & (dom_w >= min_weight)
        if sel.sum() >= min_points:
            yield b, sel


def _rig(pieces, n_bones: int, bone_names) -> CapsuleRig:
    """A validated rig from ``[(bone, p0, p1, r0, r1), ...]`` in bone space."""
    bone = np.array([c[0] for c in pieces], dtype=np.int32)
    p0 = np.array([c[1] for c in pieces]).reshape(-1, 3)
    p1 = np.array([c[2] for c in pieces]).reshape(-1, 3)
    arrays = validate_capsules(bone, p0, p1, np.array([c[3] for c in pieces]), np.array([c[4] for c in pieces]),
                               n_bones=n_bones)
    return CapsuleRig(*arrays, bone_names=list(bone_names) if bone_names is not None else [])


def _quantile_pieces(pts, radius_quantile, trim, end_fraction, max_per_bone, split_ratio) -> list:
    """Capsules ``[(p0, p1, r0, r1), ...]`` along the principal axis of one bone's points (bone space).

    The axis runs between the ``trim`` and ``1 − trim`` axial quantiles, split into up to
    ``max_per_bone`` pieces; each end radius is the ``radius_quantile`` of the radial distances
    within ``end_fraction`` of that end. Empty when the points are too thin (radius <= 0.1 mm).
    """
    ctr = pts.mean(axis=0)
    _, _, vt = np.linalg.svd(pts - ctr, full_matrices=False)
    axis = vt[0]
    x = (pts - ctr) @ axis
    lo, hi = np.quantile(x, [trim, 1 - trim])
    radial = np.linalg.norm((pts - ctr) - x[:, None] * axis, axis=1)
    mean_r = float(np.quantile(radial, radius_quantile))
    if mean_r <= 1e-4:
        return []
    pieces = int(np.clip(np.ceil((hi - lo) / (split_ratio * mean_r)), 1, max_per_bone))
    edges = np.linspace(lo, hi, pieces + 1)
    out = []
    for k in range(pieces):
        a, c = edges[k], edges[k + 1]
        span = c - a
        near_a = (x >= a) & (x <= a + end_fraction * span)
        near_c = (x <= c) & (x >= c - end_fraction * span)
        ra = float(np.quantile(radial[near_a], radius_quantile)) if near_a.sum() >= 5 else mean_r
        rc = float(np.quantile(radial[near_c], radius_quantile)) if near_c.sum() >= 5 else mean_r
        ra, rc = max(ra, 1e-3), max(rc, 1e-3)
        # keep the caps inside the bone's extent, but leave a usable segment
        sa = a + min(ra, 0.4 * span) if k == 0 else a
        sc = c - min(rc, 0.4 * span) if k == pieces - 1 else c
        length = sc - sa
        if length <= abs(ra - rc) + 1e-4:  # one end sphere would swallow the other
            ra = rc = 0.5 * (ra + rc)
            if length < 1e-4:
                sa, sc = a + 0.3 * span, c - 0.3 * span
        out.append((ctr + sa * axis, ctr + sc * axis, ra, rc))
    return out


def fit_capsules(vertices, skin_indices, skin_weights, rest_matrices, bone_names=None, *, min_weight: float = 0.5,
                 min_points: int = 30, radius_quantile: float = 0.35, trim: float = 0.02, end_fraction: float = 0.25,
                 max_per_bone: int = 2, split_ratio: float = 5.0, faces=None, bulge: float = 0.002,
                 max_lanes: int = 3) -> CapsuleRig:
    """Fit a capsule rig from rest-pose body vertices and skin weights.

    With ``faces`` (the closed body surface) the *medial* method is used (recommended; see
    :func:`fit_capsules_medial`); without, the quantile method described in the module docstring.

    Parameters
    ----------
    vertices : array_like (N, 3)
        Rest-pose body vertices, metres.
    skin_indices : array_like int (N, K)
        Bone ids per vertex.
    skin_weights : array_like (N, K)
        Weights per vertex (rows sum to 1).
    rest_matrices : array_like (B, 4, 4)
        World rest matrices of the bones (bone space -> world).
    bone_names : list of str, optional
    min_weight : float
        A vertex belongs to its dominant bone when that weight is at least this.
    min_points : int
        Bones with fewer vertices get no capsule.
    radius_quantile : float
        Quantile (0..1) of radial distance used as radius (lower = capsule inside the body).
    trim : float
        Axial quantile trimmed at each end.
    end_fraction : float
        Fraction of the segment used to measure each end radius.
    max_per_bone : int
        Most capsules per bone (along its axis; per lane in the medial method).
    split_ratio : float
        A bone gets ``ceil(length / (split_ratio * mean radius))`` capsules (capped).
    faces : array_like int (F, 3), optional
        Body triangles; selects the medial method.
    bulge : float
        Medial method: how far (metres) a capsule may reach outside the body. Default 2 mm.
    max_lanes : int
        Medial method: most parallel capsule chains per bone (1, 2 or 3).

    Returns
    -------
    CapsuleRig
    """
    if faces is not None:
        return fit_capsules_medial(vertices, faces, skin_indices, skin_weights, rest_matrices, bone_names,
                                   min_weight=min_weight, min_points=min_points, trim=trim, max_per_bone=max_per_bone,
                                   bulge=bulge, max_lanes=max_lanes)
    v, idx, w, rest = _skinned_body(vertices, skin_indices, skin_weights, rest_matrices)
    if not 0 < radius_quantile < 1:
        raise KisekaeError(f"must be in (0, 1), got {radius_quantile}", "radius_quantile")
    pieces = []
    for b, sel in _bone_vertices(idx, w, rest.shape[0], min_weight, min_points):
        inv = np.linalg.inv(rest[b])
        pieces += [(b, *c) for c in _quantile_pieces(v[sel] @ inv[:3, :3].T + inv[:3, 3], radius_quantile, trim,
                                                      end_fraction, max_per_bone, split_ratio)]
    return _rig(pieces, rest.shape[0], bone_names)


def fit_report(rig: CapsuleRig, vertices, skin_indices, skin_weights, rest_matrices, body_query=None,
               samples_per_capsule: int = 200) -> list:
    """Per-bone fit quality of a capsule rig at rest.

    Parameters
    ----------
    rig : CapsuleRig
    vertices, skin_indices, skin_weights, rest_matrices : arrays
        As :func:`fit_capsules`.
    body_query : kisekae.qa.BodyQuery, optional
        The rest body; when given, capsule surface samples are tested against it to measure bulge.
    samples_per_capsule : int
        Surface samples per capsule for the bulge measure.

    Returns
    -------
    list of dict
        One per bone with capsules: ``bone``, ``capsules``, ``points``, ``outside_p95_m`` and
        ``outside_max_m`` (body vertices of the bone lying outside the whole field, metres), and
        with ``body_query`` ``bulge_p95_m`` and ``bulge_max_m`` (how far capsule surface samples
        lie outside the body).
    """
    v = as_points(vertices, "body vertices")
    w = np.asarray(skin_weights, dtype=np.float64)
    idx = np.asarray(skin_indices)
    a, b, ra, rb = rig.posed(rest_matrices)
    f, _, _ = capsule_field(v, a, b, ra, rb)
    outside = np.maximum(f, 0.0)
    dom = idx[np.arange(len(v)), np.argmax(w, axis=1)]
    rng = np.random.default_rng(0)
    out = []
    for bone_id in np.unique(rig.bone):
        caps = np.flatnonzero(rig.bone == bone_id)
        sel = dom == bone_id
        rec = {
            "bone": rig.bone_names[bone_id] if rig.bone_names else int(bone_id),
            "capsules": int(caps.size),
            "points": int(sel.sum()),
            "outside_p95_m": float(np.percentile(outside[sel], 95)) if sel.any() else 0.0,
            "outside_max_m": float(outside[sel].max()) if sel.any() else 0.0,
        }
        if body_query is not None:
            samples = []
            for c in caps:
                t = rng.uniform(0, 1, samples_per_capsule)
                dirs = rng.normal(size=(samples_per_capsule, 3))
                dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
                ctr = a[c] + t[:, None] * (b[c] - a[c])
                r = ra[c] + t * (rb[c] - ra[c])
                pts = ctr + r[:, None] * dirs
                fc, gc, _ = capsule_field(pts, a[c:c + 1], b[c:c + 1], ra[c:c + 1], rb[c:c + 1])
                samples.append(pts - fc[:, None] * gc)  # project onto this capsule's surface
            pts = np.concatenate(samples)
            outside_body = ~body_query.inside(pts)
            bulge = np.zeros(len(pts))
            if outside_body.any():
                bulge[outside_body] = body_query.distance(pts[outside_body])
            rec["bulge_p95_m"] = float(np.percentile(bulge, 95))
            rec["bulge_max_m"] = float(bulge.max())
        out.append(rec)
    return out


# --------------------------------------------------------------------------- medial method
def _signed_depth(query, pts):
    """Distance to the body surface, positive inside, negative outside (metres)."""
    d = query.distance(pts)
    return np.where(query.inside(pts), d, -d)


def _fit_radii(t, depth, t0, t1, bulge, min_radius):
    """Largest ``r0 + r1`` with the linearly tapered radius below ``depth + bulge`` on ``[t0, t1]``.

    A sphere whose radius is at most the depth of its centre lies inside the body, so the capsule
    reaches at most ``bulge`` outside (up to the small difference between the round cone and the
    swept sphere). Returns ``None`` when no radius >= ``min_radius`` fits.
    """
    from scipy.optimize import linprog

    L = t1 - t0
    sel = (t >= t0 - 1e-12) & (t <= t1 + 1e-12)
    lam = (t[sel] - t0) / L
    a_ub = np.column_stack([1 - lam, lam])
    b_ub = depth[sel] + bulge
    # |r0 - r1| < L keeps the round cone valid (neither end sphere inside the other)
    a_ub = np.vstack([a_ub, [1, -1], [-1, 1]])
    b_ub = np.concatenate([b_ub, [0.9 * L, 0.9 * L]])
    res = linprog([-1.0, -1.0], A_ub=a_ub, b_ub=b_ub, bounds=[(min_radius, None), (min_radius, None)], method="highs")
    if res.status != 0:
        return None
    return float(res.x[0]), float(res.x[1])


def _lane_capsules(query, ctr, e1, offset, lo, hi, max_pieces, bulge, min_radius, samples=48):
    """Capsules along one axis line ``ctr + offset + t e1``, ``t`` in ``[lo, hi]`` (world space)."""
    t = np.linspace(lo, hi, samples)
    pts = ctr + offset + t[:, None] * e1
    depth = _signed_depth(query, pts)
    ok = depth > min_radius
    if not ok.any():
        return []
    # the longest run of axis samples that lie inside the body
    best_len, best = 0, (0, 0)
    i = 0
    while i < samples:
        if ok[i]:
            j = i
            while j + 1 < samples and ok[j + 1]:
                j += 1
            if j - i > best_len or best_len == 0:
                best_len, best = j - i, (i, j)
            i = j + 1
        else:
            i += 1
    i0, i1 = best
    if i1 - i0 < 2:
        return []
    t, depth = t[i0:i1 + 1], depth[i0:i1 + 1]
    pieces = int(max_pieces)
    edges = np.linspace(t[0], t[-1], pieces + 1)
    out = []
    for k in range(pieces):
        a, c = edges[k], edges[k + 1]
        mid = 0.5 * (a + c)
        first = (t >= a - 1e-12) & (t <= mid)
        last = (t >= mid) & (t <= c + 1e-12)
        if not first.any() or not last.any():
            continue
        # end spheres where they reach farthest along the axis (a sphere of radius depth(t))
        t0 = t[first][np.argmin(t[first] - depth[first])] if k == 0 else a
        t1 = t[last][np.argmax(t[last] + depth[last])] if k == pieces - 1 else c
        if t1 - t0 < 1e-3:
            continue
        radii = _fit_radii(t, depth, t0, t1, bulge, min_radius)
        if radii is None:
            continue
        out.append((ctr + offset + t0 * e1, ctr + offset + t1 * e1, radii[0], radii[1]))
    return out


def _lane_offsets(query, pts, ctr, e1, e2, x_mid, max_lanes, grid=25):
    """Greedy lane placement in the bone's mid cross-section (offsets from ``ctr``, world vectors).

    The cross-section plane (through ``ctr + x_mid e1``, spanned by ``e2`` and ``e3 = e1 x e2``)
    is sampled on a ``grid x grid`` raster over the bone's vertices' extent. Each inside sample
    ``c`` is the centre of an inscribed disc of radius ``depth(c)``. The first lane is the
    deepest sample; each next one is the sample whose disc adds the most not-yet-covered inside
    area. Returns up to ``max_lanes`` offsets (vectors orthogonal to ``e1``, plus ``x_mid e1``
    is *not* included).
    """
    e3 = np.cross(e1, e2)
    rel = pts - ctr
    u, w = rel @ e2, rel @ e3
    us = np.linspace(u.min(), u.max(), grid)
    ws = np.linspace(w.min(), w.max(), grid)
    uu, ww = (g.ravel() for g in np.meshgrid(us, ws, indexing="ij"))
    samples = ctr + x_mid * e1 + uu[:, None] * e2 + ww[:, None] * e3
    depth = _signed_depth(query, samples)
    inside = depth > 0
    if not inside.any():
        return [np.zeros(3)]
    cu, cw, cd = uu[inside], ww[inside], depth[inside]
    dist = np.hypot(cu[:, None] - cu[None], cw[:, None] - cw[None])
    cover = dist <= cd[:, None]  # cover[i, j]: disc i covers sample j
    covered = np.zeros(len(cu), dtype=bool)
    out = []
    for k in range(max_lanes):
        gain = cover[:, ~covered].sum(axis=1) if k else cd
        i = int(np.argmax(gain))
        if k and gain[i] == 0:
            break
        covered |= cover[i]
        out.append(cu[i] * e2 + cw[i] * e3)
    return out


def _outside_p95(points, caps):
    if not caps:
        return np.inf
    a = np.array([c[0] for c in caps])
    b = np.array([c[1] for c in caps])
    ra = np.array([c[2] for c in caps])
    rb = np.array([c[3] for c in caps])
    f, _, _ = capsule_field(points, a, b, ra, rb)
    return float(np.percentile(np.maximum(f, 0.0), 95))


def fit_capsules_medial(vertices, faces, skin_indices, skin_weights, rest_matrices, bone_names=None, *,
                        min_weight: float = 0.5, min_points: int = 30, trim: float = 0.02, max_per_bone: int = 2,
                        bulge: float = 0.002, max_lanes: int = 3, min_radius: float = 0.002,
                        capsule_penalty: float = 0.002) -> CapsuleRig:
    """Fit capsules that stay inside the body (within ``bulge``) and cover it, one or more lanes per bone.

    Method. For each bone, its dominant vertices (rest pose, world space) give a centre, the bone's
    own direction ``e1`` (head to tail) and the widest direction ``e2`` of their cross-section. A
    *lane* is an axis line parallel to ``e1``. Lane positions come from the bone's mid
    cross-section (:func:`_lane_offsets`): the deepest point first, then greedily the points whose
    inscribed discs add the most uncovered cross-section, up to ``max_lanes``. Along a lane the
    signed depth ``D(t)`` of the axis point below the body surface is sampled (winding-number
    inside test and exact closest-point distance against ``faces``). The lane's longest inside run
    is cut into ``1..max_per_bone`` pieces; the outer end spheres are placed where ``t -/+ D(t)``
    reaches farthest, and each piece's radii solve the small linear program ``max r0 + r1``
    subject to ``(1 - s) r0 + s r1 <= D(t) + bulge`` at every sample (a sphere no larger than its
    centre's depth lies inside the body). Among all lane and piece counts, the set with the
    smallest 95th percentile of the bone's vertices outside its capsules wins, each extra capsule
    costing ``capsule_penalty`` metres.

    Parameters
    ----------
    vertices : array_like (N, 3)
        Rest-pose body vertices, metres.
    faces : array_like int (F, 3)
        Body triangles (a closed surface).
    skin_indices, skin_weights : array_like (N, K)
        Skin of the body.
    rest_matrices : array_like (B, 4, 4)
        World rest matrices (bone space -> world).
    bone_names : list of str, optional
    min_weight, min_points, trim : as :func:`fit_capsules`
    max_per_bone : int
        Most capsules per lane along the bone.
    bulge : float
        Allowed reach outside the body, metres (default 2 mm).
    max_lanes : int
        1, 2 or 3.
    min_radius : float
        Smallest radius, metres.
    capsule_penalty : float
        Metres of p95 improvement an extra capsule must buy (default 2 mm).

    Returns
    -------
    CapsuleRig
    """
    from ..qa.penetration import BodyQuery, BodyTopology

    v, idx, w, rest = _skinned_body(vertices, skin_indices, skin_weights, rest_matrices)
    if not np.isfinite(bulge) or bulge < 0:
        raise KisekaeError(f"must be >= 0 metres, got {bulge!r}", "bulge")
    if int(max_lanes) not in (1, 2, 3):
        raise KisekaeError(f"must be 1, 2 or 3, got {max_lanes!r}", "max_lanes")
    query = BodyQuery(BodyTopology.from_mesh(v, faces), v)
    pieces = []
    for b, sel in _bone_vertices(idx, w, rest.shape[0], min_weight, min_points):
        best = _medial_bone(query, v[sel], rest[b], trim, int(max_lanes), int(max_per_bone), bulge, min_radius,
                            capsule_penalty)
        inv = np.linalg.inv(rest[b])
        pieces += [(b, inv[:3, :3] @ a + inv[:3, 3], inv[:3, :3] @ c + inv[:3, 3], ra, rc) for a, c, ra, rc in best]
    return _rig(pieces, rest.shape[0], bone_names)


def _medial_bone(query, pts, rest, trim, max_lanes, max_per_bone, bulge, min_radius, capsule_penalty) -> list:
    """The best lane and piece counts for one bone's points (world space): ``[(p0, p1, r0, r1), ...]``."""
    ctr = pts.mean(axis=0)
    e1 = rest[:3, 1] / np.linalg.norm(rest[:3, 1])  # the bone's own direction (head -> tail)
    rel = pts - ctr
    flat = rel - np.outer(rel @ e1, e1)
    _, _, vt = np.linalg.svd(flat, full_matrices=False)
    e2 = vt[0] - (vt[0] @ e1) * e1
    e2 /= np.linalg.norm(e2)
    x = rel @ e1
    lo, hi = np.quantile(x, [trim, 1 - trim])
    lanes = _lane_offsets(query, pts, ctr, e1, e2, 0.5 * (lo + hi), max_lanes)
    best, best_score = [], np.inf
    for n_lanes in range(1, len(lanes) + 1):
        for pieces in range(1, max_per_bone + 1):
            caps = []
            for off in lanes[:n_lanes]:
                caps += _lane_capsules(query, ctr, e1, off, lo, hi, pieces, bulge, min_radius)
            score = _outside_p95(pts, caps) + capsule_penalty * (len(caps) - 1)
            if score < best_score:
                best, best_score = caps, score
    return best

"""Fit tapered capsules to a skinned body, and report how well they fit.

For each bone, the body vertices it dominates (largest skin weight, at least ``min_weight``) are
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
from .capsules import CapsuleRig, validate_capsules
from .sdf import capsule_field


def fit_capsules(vertices, skin_indices, skin_weights, rest_matrices, bone_names=None, *, min_weight: float = 0.5,
                 min_points: int = 30, radius_quantile: float = 0.35, trim: float = 0.02, end_fraction: float = 0.25,
                 max_per_bone: int = 2, split_ratio: float = 5.0) -> CapsuleRig:
    """Fit a capsule rig from rest-pose body vertices and skin weights.

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
        Most capsules per bone.
    split_ratio : float
        A bone gets ``ceil(length / (split_ratio * mean radius))`` capsules (capped).

    Returns
    -------
    CapsuleRig
    """
    v = as_points(vertices, "body vertices")
    idx = np.asarray(skin_indices)
    w = np.asarray(skin_weights, dtype=np.float64)
    if idx.shape != w.shape or idx.ndim != 2 or idx.shape[0] != len(v):
        raise KisekaeError(f"skin indices {idx.shape} and weights {w.shape} must both be ({len(v)}, K)", "skin")
    rest = np.asarray(rest_matrices, dtype=np.float64)
    if rest.ndim != 3 or rest.shape[1:] != (4, 4):
        raise KisekaeError(f"expected shape (B, 4, 4), got {rest.shape}", "rest_matrices")
    if not 0 < radius_quantile < 1:
        raise KisekaeError(f"must be in (0, 1), got {radius_quantile}", "radius_quantile")
    top = np.argmax(w, axis=1)
    dom = idx[np.arange(len(v)), top]
    dom_w = w[np.arange(len(v)), top]
    bone, p0, p1, r0, r1 = [], [], [], [], []
    for b in range(rest.shape[0]):
        sel = (dom == b) & (dom_w >= min_weight)
        if sel.sum() < min_points:
            continue
        inv = np.linalg.inv(rest[b])
        pts = v[sel] @ inv[:3, :3].T + inv[:3, 3]
        ctr = pts.mean(axis=0)
        _, _, vt = np.linalg.svd(pts - ctr, full_matrices=False)
        axis = vt[0]
        x = (pts - ctr) @ axis
        lo, hi = np.quantile(x, [trim, 1 - trim])
        radial = np.linalg.norm((pts - ctr) - x[:, None] * axis, axis=1)
        mean_r = float(np.quantile(radial, radius_quantile))
        if mean_r <= 1e-4:
            continue
        pieces = int(np.clip(np.ceil((hi - lo) / (split_ratio * mean_r)), 1, max_per_bone))
        edges = np.linspace(lo, hi, pieces + 1)
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
            bone.append(b)
            p0.append(ctr + sa * axis)
            p1.append(ctr + sc * axis)
            r0.append(ra)
            r1.append(rc)
    arrays = validate_capsules(np.array(bone, dtype=np.int32), np.array(p0).reshape(-1, 3), np.array(p1).reshape(-1, 3),
                               np.array(r0), np.array(r1), n_bones=rest.shape[0])
    return CapsuleRig(*arrays, bone_names=list(bone_names) if bone_names is not None else [])


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

"""Conformance of the HLSL core with the Python references, on the built-in avatar and edge cases.

:func:`run_checks` executes every core function on the GPU (llvmpipe in CI) through
:mod:`kisekae.shaders.execute` and compares it with the reference that specifies it:

=====================  ==========================================  =============================
core function          reference                                   tolerance
=====================  ==========================================  =============================
KisekaeCapsuleField    kisekae.fit.sdf.capsule_field               distance 1e-6 m, gradient 1e-4
KisekaeCapsuleDistance kisekae.fit.sdf.capsule_distance, and an    distance 1e-6 m
                       independent 1-D minimisation (min over the
                       swept spheres)
KisekaePushOut         kisekae.fit.pushout.push_out_reference      positions 1e-4 m
KisekaePushAmount      kisekae.fit.pushout.push_amount             1e-6 m
KisekaeTensionFromRatio kisekae.tension.blender.map_ratio          1e-5
KisekaeBoundPushOut    kisekae.fit.bound.push_out_bound            positions 1e-4 m, clearance 1e-6 m
KisekaeSkinPushOut     kisekae.fit.bound.push_out_runtime          positions 1e-4 m
KisekaeTightLook       kisekae.fit.pressure.tight_look (presets)   colours 1/255 (and 1e-6), normals 1e-5
KisekaeWrinkleWeights  kisekae.tension.wrinkle.wrinkle_weights     1e-5
KisekaeBlendWrinkle..  kisekae.shaders.reference.blend_wrinkle_... 1e-5
KisekaeWoundTarget     kisekae.wound.decode (five encodings)       positions 1e-6 m, normals 1e-5, ids exact
KisekaeWoundP          kisekae.wound.runtime.wound_p_numpy         1e-5
KisekaeAccumulateHit   kisekae.wound.runtime.accumulate_hit_numba  1e-5
KisekaeWoundMorph      kisekae.wound.runtime.morph_numpy           positions 1e-6 m, p = 0 exact
KisekaeContactPlane(s) kisekae.avatar.contact.contact_planes_numpy positions 1e-5 m
KisekaePartStep        kisekae.avatar.part_contact.part_step_numpy positions 1e-5 m (synthetic fields of 40 parts,
                       (and the whole step with the passes)        and the built-in body in three held-out poses)
KisekaeSurfacePush     kisekae.fit.surface.surface_push_numpy      positions, push, clearance 1e-5 m (also with the
                                                                    depth bound: an analytic tube)
                       (with and without the chord allowance)
KisekaeBodyCurvature   kisekae.fit.surface.body_curvature          1e-5 relative (of max(kv, 1/m))
KisekaeSmoothPush      kisekae.fit.surface.smooth_push_numpy       1e-5 m
KisekaeStretchLimit    kisekae.fit.surface.stretch_limit_numpy     1e-5 m, moved flags exact
                       (with and without the floor, KISEKAE_LOAD_SHORTEST)
KisekaeCarryStart      kisekae.fit.carry.carry_start               1e-5 m
KisekaeSamplePoint     kisekae.fit.edge_lift.EdgeSamples.points    1e-5 m
KisekaeSamplePush      kisekae.fit.surface.surface_push_numpy      positions, clearance 1e-5 m
                       (edge samples, their own candidates)
KisekaeEdgeLift        kisekae.fit.edge_lift (the gather)          1e-5 m
KisekaeUnflip          kisekae.fit.unflip.unflip_numpy             1e-5 m
KisekaeSelfLayerPush   kisekae.fit.self_layers                     1e-5 m, moved flags within 0.2 %
                       .self_layer_push_numpy
=====================  ==========================================  =============================

Test vectors: the built-in avatar's body, tights and skirt in the poses ``stand``, ``crouch`` and
``leg_raise`` (and more), with a capsule rig fitted here by a simple rule (one tapered capsule per
bone with a tail, radii from the skinned vertices), plus synthetic edge cases chosen so that every
constant of the core changes some output (see ``tests/test_shaders_mutation.py``). Gradients and
push directions are compared only where they are well conditioned (at least 3 mm from every
capsule axis and end centre, and not on a tie between two capsules); elsewhere only distances.
"""

from __future__ import annotations

from dataclasses import dataclass
import zlib
from functools import lru_cache

import numpy as np

from . import execute as X

POSES = ("stand", "crouch", "leg_raise")
TOL_DISTANCE = 1e-6
TOL_POSITION = 1e-4
TOL_GRADIENT = 1e-4
TOL_COLOUR = 1.0 / 255.0
TOL_TENSION = 1e-5


_MEMO: dict = {}


def _memo(key, fn):
    """Reference results do not depend on the core: compute each once per process."""
    if key not in _MEMO:
        _MEMO[key] = fn()
    return _MEMO[key]


@dataclass
class Check:
    """One comparison: the largest error found and the tolerance it must stay within."""

    name: str
    error: float
    tolerance: float
    count: int

    @property
    def ok(self) -> bool:
        return bool(np.isfinite(self.error) and self.error <= self.tolerance)


def _err(a, b) -> float:
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    bad = ~(np.isfinite(a) == np.isfinite(b))
    if bad.any():
        return float("inf")
    m = np.isfinite(a)
    return float(np.max(np.abs(a[m] - b[m]), initial=0.0))


# ------------------------------------------------------------------------------------ vectors
def fit_simple_rig(avatar):
    """A capsule per bone with a tail: bone space ``(bone, p0, p1, r0, r1)`` from the rest skin.

    A deliberately simple rule for test vectors (kisekae.fit owns the real fitting): the segment is
    the bone's head to tail; r0 and r1 are the median distances to the segment of the vertices whose
    dominant bone it is, in the first and second half of the segment.
    """
    sk = avatar.skeleton
    rest = sk.rest.astype(np.float64)
    verts = avatar.body.mesh.vertices.astype(np.float64)
    skin = avatar.body.skin
    dom = skin.indices[np.arange(len(verts)), np.argmax(skin.weights, axis=1)]
    bones, p0s, p1s, r0s, r1s = [], [], [], [], []
    for b in range(sk.n_bones):
        if sk.tails is None:
            break
        head = rest[b, :3, 3]
        tail = sk.tails[b].astype(np.float64)
        seg = tail - head
        L = np.linalg.norm(seg)
        vs = verts[dom == b]
        if L < 0.03 or len(vs) < 20:
            continue
        u = seg / L
        t = np.clip((vs - head) @ u / L, 0, 1)
        dist = np.linalg.norm(vs - (head + t[:, None] * seg), axis=1)
        first = t < 0.5
        if first.sum() < 5 or (~first).sum() < 5:
            continue
        r0 = max(0.01, 0.9 * float(np.median(dist[first])))
        r1 = max(0.01, 0.9 * float(np.median(dist[~first])))
        if abs(r0 - r1) > 0.8 * L:
            r1 = r0 - np.sign(r0 - r1) * 0.8 * L
        inv = np.linalg.inv(rest[b])
        bones.append(b)
        p0s.append((inv @ np.append(head, 1.0))[:3])
        p1s.append((inv @ np.append(tail, 1.0))[:3])
        r0s.append(r0)
        r1s.append(r1)
    return np.array(bones, np.int32), np.array(p0s), np.array(p1s), np.array(r0s), np.array(r1s)


@lru_cache(maxsize=1)
def avatar_vectors(poses=POSES, per_part: int = 1500, seed: int = 0):
    """Posed capsules and query points of the built-in avatar, one entry per pose.

    Returns a tuple of dicts ``{pose, capsules (C, 8) float32, points (N, 3) float32}``. The points are
    garment and body vertices (a fixed random subset of ``per_part`` each), plus the same vertices
    shifted randomly by up to 3 cm, so that distances cover inside, contact band and outside.
    """
    from ..avatar import load_builtin_avatar
    from ..avatar.poses import named_pose
    from ..avatar.capsules import transform_capsules

    av = load_builtin_avatar()
    rig = fit_simple_rig(av)
    out = []
    for name in poses:
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])  # same points whatever the pose list
        pose = named_pose(av.skeleton, name)
        a, b, ra, rb = transform_capsules(*rig, pose.world_matrices(av.skeleton))
        caps = np.column_stack([a, ra, b, rb]).astype(np.float32)
        pts = []
        for part in ("body", *av.garments):
            v = av.posed_vertices(part, pose)
            idx = rng.choice(len(v), size=min(per_part, len(v)), replace=False)
            pts.append(v[idx])
            pts.append(v[idx[: per_part // 2]] + rng.normal(0, 0.015, (len(idx[: per_part // 2]), 3)))
        out.append({"pose": name, "capsules": caps, "points": np.concatenate(pts).astype(np.float32)})
    return tuple(out)


def edge_capsules():
    """Synthetic capsules that exercise every branch: tapered both ways, thin, long, axis-aligned."""
    caps = np.array(
        [
            [0.0, 0.0, 0.0, 0.05, 0.0, 0.4, 0.0, 0.05],       # vertical cylinder
            [0.3, 0.1, 0.0, 0.08, 0.3, 0.1, 0.35, 0.03],     # along +z, tapering
            [-0.3, 0.0, 0.1, 0.02, -0.05, 0.2, 0.1, 0.09],   # growing, oblique
            [0.1, 0.5, -0.2, 0.06, 0.45, 0.5, -0.2, 0.06],   # along +x (|u.x| >= 0.9)
            [0.05, 0.05, 0.05, 0.04, 0.2, 0.3, 0.25, 0.015],  # oblique, tapering
        ],
        np.float32,
    )
    return caps


def edge_points(caps, n: int = 3000, seed: int = 1):
    """Points around ``caps``: random, near surfaces, on axes, and at end centres."""
    rng = np.random.default_rng(seed)
    lo = np.minimum(caps[:, 0:3], caps[:, 4:7]).min(0) - 0.12
    hi = np.maximum(caps[:, 0:3], caps[:, 4:7]).max(0) + 0.12
    pts = [rng.uniform(lo, hi, (n, 3))]
    for c in caps:
        t = rng.uniform(-0.3, 1.3, (n // 10, 1))
        axis_pts = c[0:3] + t * (c[4:7] - c[0:3])
        pts.append(axis_pts + rng.normal(0, 0.06, axis_pts.shape))
        pts.append(np.stack([c[0:3], c[4:7]]))                       # end centres
    pts.append(edge_fallback_points(caps))
    return np.concatenate(pts).astype(np.float32)


def edge_fallback_points(caps):
    """End centres of every capsule and points exactly on the axes of the axis-aligned edge capsules."""
    pts = [caps[:, 0:3], caps[:, 4:7]]
    pts.append(np.array([[0.0, y, 0.0] for y in (0.1, 0.2, 0.3)]))
    pts.append(np.array([[x, 0.5, -0.2] for x in (0.2, 0.3, 0.4)]))
    pts.append(np.array([[0.3, 0.1, z] for z in (0.1, 0.2)]))
    return np.concatenate(pts).astype(np.float32)


def _exact_fallback(points, cap):
    """Points where the gradient is a fallback that float32 computes exactly (centre, or axis-aligned axis)."""
    p = points.astype(np.float64)
    a, b = cap[0:3].astype(np.float64), cap[4:7].astype(np.float64)
    aligned = np.sum(a != b) == 1
    # at b the axial/radial split of p - a rounds, so only axis-aligned capsules are exact there
    at_centre = np.all(p == a, axis=1) | (aligned & np.all(p == b, axis=1))
    on_axis = aligned & (np.sum(p != a, axis=1) <= 1) & (np.sum(p != b, axis=1) <= 1)
    return at_centre | on_axis


def round_cone_minimize(points, cap, iterations: int = 90):
    """Independent reference: signed distance to one capsule as ``min_t |p - c(t)| - r(t)``, t in [0, 1].

    c(t) and r(t) interpolate the end spheres linearly; the round cone is the union of these spheres,
    and for this convex shape the minimum is its exact signed distance inside and outside. Solved
    by golden-section search (the function is convex in t), float64.
    """
    p = np.asarray(points, np.float64)
    a, r0, b, r1 = cap[0:3].astype(np.float64), float(cap[3]), cap[4:7].astype(np.float64), float(cap[7])

    def f(t):
        c = a[None] + t[:, None] * (b - a)[None]
        return np.linalg.norm(p - c, axis=1) - (r0 + t * (r1 - r0))

    lo = np.zeros(len(p))
    hi = np.ones(len(p))
    g = (np.sqrt(5.0) - 1.0) / 2.0
    x1 = hi - g * (hi - lo)
    x2 = lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    for _ in range(iterations):
        left = f1 < f2
        hi = np.where(left, x2, hi)
        lo = np.where(left, lo, x1)
        x2n = np.where(left, x1, lo + g * (hi - lo))
        x1n = np.where(left, hi - g * (hi - lo), x2)
        x1, x2 = x1n, x2n
        f1, f2 = f(x1), f(x2)
    return np.minimum.reduce([f(np.zeros(len(p))), f(np.ones(len(p))), f1, f2])


def _well_conditioned(points, caps, dist_all, min_clearance=0.003, tie=1e-5):
    """Points where the field gradient is well defined: away from axes and end centres, no near tie."""
    p = points.astype(np.float64)
    a = caps[:, 0:3].astype(np.float64)
    b = caps[:, 4:7].astype(np.float64)
    ba = b - a
    L = np.linalg.norm(ba, axis=1)
    u = ba / L[:, None]
    pa = p[:, None, :] - a[None]
    x = np.einsum("ncj,cj->nc", pa, u)
    y = np.linalg.norm(pa - x[..., None] * u[None], axis=2)
    na = np.linalg.norm(pa, axis=2)
    nb = np.linalg.norm(p[:, None, :] - b[None], axis=2)
    clear = np.minimum(np.minimum(y, na), nb).min(axis=1) > min_clearance
    if dist_all.shape[1] > 1:
        two = np.sort(dist_all, axis=1)[:, :2]
        clear &= (two[:, 1] - two[:, 0]) > tie
    return clear


# ------------------------------------------------------------------------------------ checks
def _field_checks(label, pts, caps, k, source):
    from ..fit import sdf

    c64 = caps.astype(np.float64)
    p64 = pts.astype(np.float64)
    d, g, nn = X.gpu_capsule_field(pts, caps, k, source=source)

    def ref():
        dall, _ = sdf.capsule_distance(p64, c64[:, 0:3], c64[:, 4:7], c64[:, 3], c64[:, 7])
        f, G, near = sdf.capsule_field(p64, c64[:, 0:3], c64[:, 4:7], c64[:, 3], c64[:, 7], k)
        return f, G, near, _well_conditioned(pts, caps, dall)

    f, G, near, ok = _memo(("field", label, k), ref)
    return [
        Check(f"{label} field distance k={k:g}", _err(d, f), TOL_DISTANCE, len(pts)),
        Check(f"{label} field gradient k={k:g}", _err(g[ok], G[ok]), TOL_GRADIENT, int(ok.sum())),
        Check(f"{label} field nearest", float(np.sum(nn[ok] != near[ok])), 0.0, int(ok.sum())),
    ]


def capsule_checks(source: str = "constants", poses=POSES):
    """Capsule field (hard and smooth union) and single-capsule distance checks."""
    from ..fit import sdf

    checks = []
    for vec in avatar_vectors(tuple(poses)):
        for k in (0.0, 0.01, 0.04):
            checks += _field_checks(f"avatar {vec['pose']}", vec["points"], vec["capsules"], k, source)
    caps = edge_capsules()
    pts = edge_points(caps)
    for k in (0.0, 0.005, 0.03, 0.25):
        checks += _field_checks("edge", pts, caps, k, source)
    # single capsules: against fit.sdf (incl. fallbacks on axes and at centres) and the 1-D minimisation
    c64 = caps.astype(np.float64)
    dall, gall = _memo("edge dist", lambda: sdf.capsule_distance(pts.astype(np.float64), c64[:, 0:3], c64[:, 4:7],
                                                                 c64[:, 3], c64[:, 7]))
    fallback = edge_fallback_points(caps)
    e_d = e_g = e_min = e_fb = 0.0
    n_g = 0
    for i in range(len(caps)):
        d, g = X.gpu_capsule_distance(pts, caps, np.full(len(pts), i), source=source)
        ok = _memo(("edge ok", i), lambda: _well_conditioned(pts, caps[i : i + 1], dall[:, i : i + 1]))
        n_g += int(ok.sum())
        e_d = max(e_d, _err(d, dall[:, i]))
        e_g = max(e_g, _err(g[ok], gall[ok, i]))
        e_min = max(e_min, _err(d, _memo(("edge min", i), lambda: round_cone_minimize(pts, caps[i]))))
        fd, fg = X.gpu_capsule_distance(fallback, caps, np.full(len(fallback), i), source=source)
        rd, rg = sdf.capsule_distance(fallback.astype(np.float64), c64[i : i + 1, 0:3], c64[i : i + 1, 4:7],
                                      c64[i : i + 1, 3], c64[i : i + 1, 7])
        exact = _exact_fallback(fallback, caps[i])
        e_fb = max(e_fb, _err(fd, rd[:, 0]), _err(fg[exact], rg[exact, 0]))
    checks.append(Check("edge capsule distance vs fit.sdf", e_d, TOL_DISTANCE, len(pts) * len(caps)))
    checks.append(Check("edge capsule gradient vs fit.sdf", e_g, TOL_GRADIENT, n_g))
    checks.append(Check("axis and centre fallbacks vs fit.sdf", e_fb, TOL_GRADIENT, len(fallback) * len(caps)))
    checks.append(Check("edge capsule distance vs 1-D minimisation", e_min, TOL_DISTANCE, len(pts) * len(caps)))
    # outside the reference's domain: nested end spheres degrade to the bigger sphere
    nested = np.array([[0.0, 0.0, 0.0, 0.1, 0.0, 0.03, 0.0, 0.05], [0.0, 0.0, 0.0, 0.05, 0.002, 0.0, 0.0, 0.045],
                       [0.0, 0.0, 0.0, 0.02, 0.0, 0.0, 0.01, 0.06], [0, 0, 0, 0.05, 0, 0, 0, 0.05]], np.float32)
    npts = edge_points(nested, 600)
    e_n = 0.0
    for i in range(len(nested)):
        d, _ = X.gpu_capsule_distance(npts, nested, np.full(len(npts), i), source=source)
        e_n = max(e_n, _err(d, _memo(("nested min", i), lambda: round_cone_minimize(npts, nested[i]))))
    checks.append(Check("nested-sphere capsules vs 1-D minimisation", e_n, TOL_DISTANCE, len(npts) * len(nested)))
    # no capsules at all
    d, g, _ = X.gpu_capsule_field(pts[:8], np.zeros((0, 8), np.float32), 0.0, source=source)
    checks.append(Check("empty rig is +inf", 0.0 if np.all(np.isposinf(d)) else float("inf"), 0.0, 8))
    return checks


#: Push-out parameter cases (PushParams fields; the rest are PushParams' defaults).
PUSH_CASES = (
    dict(),
    dict(skirt_bias=0.008),
    dict(margin=0.003, stiffness=0.8, max_push=0.02, skirt_bias=0.0, smooth_k=0.01),
    dict(margin=0.015, stiffness=0.3, max_push=0.05, skirt_bias=0.6, smooth_k=0.02),
)


def pushout_checks(source: str = "constants", poses=POSES):
    """Push-out on avatar vectors (positions) and the push law alone (lengths)."""
    from ..fit import pushout
    from ..fit import sdf

    checks = []
    for vec in avatar_vectors(tuple(poses)):
        pts, caps = vec["points"], vec["capsules"]
        rng = np.random.default_rng([7, zlib.crc32(vec["pose"].encode())])
        c64 = caps.astype(np.float64)
        ok = _memo(("push ok", vec["pose"]), lambda: _well_conditioned(pts, caps, sdf.capsule_distance(
            pts.astype(np.float64), c64[:, 0:3], c64[:, 4:7], c64[:, 3], c64[:, 7])[0]))
        tight = rng.uniform(0, 1, len(pts))
        soft = rng.uniform(0, 1, len(pts))
        for case in PUSH_CASES:
            params = pushout.PushParams(**case, smooth_iterations=0)
            ref, rpush, rd = _memo(("push", vec["pose"], str(case)), lambda: pushout.push_out_reference(
                pts.astype(np.float64), c64[:, 0:3], c64[:, 4:7], c64[:, 3], c64[:, 7], params, tightness=tight,
                softness=soft))
            got, push, d = X.gpu_push_out(pts, caps, params, tightness=tight, softness=soft, source=source)
            label = f"avatar {vec['pose']} push-out b={params.skirt_bias:g}"
            checks.append(Check(label + " positions", _err(got[ok], ref[ok]), TOL_POSITION, int(ok.sum())))
            checks.append(Check(label + " push length", _err(push, rpush), TOL_POSITION, len(pts)))
            checks.append(Check(label + " moved set", float(np.sum((push > 0) != (rpush > 0))), 0.0, len(pts)))
    rng = np.random.default_rng(7)
    d = np.concatenate([np.linspace(-0.12, 0.02, 1401), [0.0, 0.002, 0.003, 0.015]]).astype(np.float32)
    t = rng.uniform(0, 1, len(d))
    s = rng.uniform(0, 1, len(d))
    for case in PUSH_CASES:
        c = pushout.PushParams(**case)
        got = X.gpu_push_amount(d, c, tightness=t, softness=s)
        ref = pushout.push_amount(d.astype(np.float64), c.margin, c.stiffness, c.max_push, t, s, c.skirt_bias)
        checks.append(Check(f"push law b={c.skirt_bias:g} m={c.margin:g}", _err(got, ref), TOL_DISTANCE, len(d)))
    return checks


TENSION_CASES = ((1.0, 1.0, 1.0, 1.0), (1.5, 0.3, 2.0, 0.7), (2.0, 2.5, 0.0005, 1.3), (0.7, -1.0, 200.0, 0.5),
                 (1.0, 1.6, 0.4, 1.0))


def _avatar_ratios(poses):
    """Tension ratios T of the built-in body in each pose (from kisekae.tension)."""
    from ..avatar import load_builtin_avatar
    from ..avatar.poses import named_pose
    from ..tension import tension_map

    av = load_builtin_avatar()
    rest = av.body.mesh.vertices
    out = []
    for name in poses:
        res = tension_map(rest, av.posed_vertices("body", named_pose(av.skeleton, name)), av.body.mesh.faces)
        out.append(np.asarray(res.ratio, np.float64))
    return out


def tension_checks(poses=POSES):
    """Tension mapping on a wide ratio range and on the avatar's real ratios."""
    from ..tension import blender

    rng = np.random.default_rng(3)
    ratios = [np.concatenate([np.linspace(0.3, 2.5, 2001), rng.uniform(0.5, 2000.0, 500), [1.0, 1 / 1.2, 1 / 0.857]])]
    ratios += list(_memo(("avatar ratios", tuple(poses)), lambda: _avatar_ratios(poses)))
    T = np.concatenate(ratios).astype(np.float32)
    T = T[np.isfinite(T)]
    checks = []
    for prm in TENSION_CASES:
        c, s = X.gpu_tension_from_ratio(T, falloff=prm[0], stretch_area=prm[1], compress_area=prm[2], weight_limit=prm[3])
        ref = blender.map_ratio(T, *prm)
        checks.append(Check(f"tension {prm} compress", _err(c, ref.compress), TOL_TENSION, len(T)))
        checks.append(Check(f"tension {prm} stretch", _err(s, ref.stretch), TOL_TENSION, len(T)))
    return checks


TIGHT_CASES = ("seed", "anime", "realistic", {"normal_strength": 0.6, "ao_strength": 0.9, "sss_strength": 0.7})


def tight_look_checks():
    """Tight look (every preset of the core and explicit strengths) against kisekae.fit.pressure.tight_look."""
    from ..fit.pressure import tight_look

    rng = np.random.default_rng(5)
    n = 4000
    nrm = rng.normal(size=(n, 3))
    nrm *= rng.uniform(0.5, 2.0, (n, 1)) / np.linalg.norm(nrm, axis=1, keepdims=True)  # not unit, as interpolated
    nrm = nrm.astype(np.float32)
    dent = (rng.normal(size=(n, 3)) * rng.uniform(0, 1.5, (n, 1))).astype(np.float32)
    ao = rng.uniform(0, 1, n).astype(np.float32)
    sss = rng.uniform(0, 1, n).astype(np.float32)
    tight = np.where(rng.uniform(0, 1, n) < 0.2, 0.0, rng.uniform(0, 1, n)).astype(np.float32)
    pres = rng.uniform(-0.2, 1.2, n).astype(np.float32)
    checks = []
    for case in TIGHT_CASES:
        label = case if isinstance(case, str) else "strengths " + "/".join(f"{v:g}" for v in case.values())
        for with_dent in (True, False):
            kw = dict(tightness=tight, dent_dir=dent if with_dent else None)
            gn, gao, gsss = X.gpu_tight_look(nrm, ao, sss, pres, case, **kw)
            rn, rao, rsss = tight_look(nrm, ao, sss, pres, case, **kw)
            tag = f"tight look {label}" + ("" if with_dent else " no dent")
            checks.append(Check(f"{tag} normal", _err(gn, rn), 1e-5, n))
            checks.append(Check(f"{tag} ao", _err(gao, rao), TOL_COLOUR, n))
            checks.append(Check(f"{tag} sss", _err(gsss, rsss), TOL_COLOUR, n))
            if with_dent:  # colour tolerance is loose: also require the exact rule to 1e-6
                checks.append(Check(f"{tag} ao/sss exact", max(_err(gao, rao), _err(gsss, rsss)), 1e-6, n))
    return checks


# ------------------------------------------------------------------------------------ skin-bound push-out
BOUND_CASES = (
    dict(),
    dict(margin=0.003, stiffness=0.8, max_push=0.02, skirt_bias=0.0),
    dict(margin=0.015, stiffness=0.3, max_push=0.05, skirt_bias=0.6),
)


def _bindings():
    """Rest-pose skin bindings of the built-in avatar's garments (kisekae.fit.bound.bind_to_skin)."""
    from ..avatar import load_builtin_avatar
    from ..fit.bound import bind_to_skin

    av = load_builtin_avatar()
    return av, {g: bind_to_skin(av.garments[g].mesh.vertices, av.body.mesh.vertices, av.body.mesh.faces)
                for g in av.garments}


def bound_vectors(poses=POSES, seed: int = 0):
    """Skin-bound test vectors per pose: the posed garments (and jittered copies, up to 2 cm, so that many
    vertices are inside or in the contact band), their bindings, the posed body and its normals."""
    from ..geom.normals import vertex_normals
    from ..avatar.poses import named_pose
    from ..fit.bound import SkinBinding

    av, binds = _memo("bindings", _bindings)
    out = []
    for name in poses:
        def build(name=name):
            rng = np.random.default_rng([seed, 2, zlib.crc32(name.encode())])
            pose = named_pose(av.skeleton, name)
            body = av.posed_vertices("body", pose).astype(np.float64)
            pts, cor, bary = [], [], []
            for g, bd in binds.items():
                v = av.posed_vertices(g, pose).astype(np.float64)
                pts += [v, v + rng.normal(0, 0.01, v.shape)]
                cor += [bd.corners, bd.corners]
                bary += [bd.bary, bd.bary]
            binding = SkinBinding(np.concatenate(cor), np.concatenate(bary), np.zeros(sum(len(c) for c in cor), np.float32))
            return {"pose": name, "points": np.concatenate(pts).astype(np.float32), "binding": binding,
                    "body": body.astype(np.float32), "body_normals": vertex_normals(body, av.body.mesh.faces),
                    "faces": av.body.mesh.faces}
        out.append(_memo(("bound vectors", name, seed), build))
    return out


def bound_checks(poses=POSES, source: str = "constants"):
    """Skin-bound push-out against kisekae.fit.bound.push_out_bound, and the runtime chain (capsules, then the
    binding, total capped) against kisekae.fit.bound.push_out_runtime, on the built-in avatar's garments."""
    from ..fit import pushout, sdf
    from ..fit.bound import push_out_bound, push_out_runtime

    caps_by_pose = {v["pose"]: v["capsules"] for v in avatar_vectors(tuple(poses))}
    checks = []
    for vec in bound_vectors(poses):
        pts, bd = vec["points"], vec["binding"]
        n = len(pts)
        rng = np.random.default_rng([9, zlib.crc32(vec["pose"].encode())])
        tight = rng.uniform(0, 1, n)
        soft = rng.uniform(0, 1, n)
        for case in BOUND_CASES:
            params = pushout.PushParams(**case, smooth_iterations=0)
            key = (vec["pose"], str(case))
            ref, rpush, rs = _memo(("bound", *key), lambda: push_out_bound(
                bd, pts.astype(np.float64), vec["body"].astype(np.float64), vec["faces"], params, tightness=tight,
                softness=soft))
            got, push, s = X.gpu_bound_push_out(pts, bd.corners, bd.bary, vec["body"], vec["body_normals"], params,
                                                tightness=tight, softness=soft)
            label = f"avatar {vec['pose']} bound push b={params.skirt_bias:g} m={params.margin:g}"
            settled = np.abs(rs - params.margin) > 1e-6  # not on the margin itself (float32 may flip it)
            checks.append(Check(label + " positions", _err(got, ref), TOL_POSITION, n))
            checks.append(Check(label + " clearance", _err(s, rs), TOL_DISTANCE, n))
            checks.append(Check(label + " push length", _err(push, rpush), TOL_DISTANCE, n))
            checks.append(Check(label + " moved set", float(np.sum((push[settled] > 0) != (rpush[settled] > 0))),
                                0.0, int(settled.sum())))
        caps = caps_by_pose[vec["pose"]]
        c64 = caps.astype(np.float64)
        ok = _memo(("skin ok", vec["pose"]), lambda: _well_conditioned(pts, caps, sdf.capsule_distance(
            pts.astype(np.float64), c64[:, 0:3], c64[:, 4:7], c64[:, 3], c64[:, 7])[0]))
        for case in (PUSH_CASES[0], PUSH_CASES[3], dict(PUSH_CASES[3], max_push=0.015)):
            params = pushout.PushParams(**case, smooth_iterations=0)
            args = (caps[:, 0:3].astype(np.float64), caps[:, 4:7].astype(np.float64), caps[:, 3].astype(np.float64),
                    caps[:, 7].astype(np.float64))
            ref, rpush = _memo(("runtime", vec["pose"], str(case)), lambda: push_out_runtime(
                bd, pts.astype(np.float64), args, vec["body"].astype(np.float64), vec["faces"], params,
                tightness=tight, softness=soft))
            _, rcap, rd = _memo(("runtime caps", vec["pose"], str(case)), lambda: pushout.push_out_reference(
                pts.astype(np.float64), *args, params, tightness=tight, softness=soft))
            got, push, pcap, _, d, _ = X.gpu_skin_push_out(pts, caps, bd.corners, bd.bary, vec["body"],
                                                           vec["body_normals"], params, tightness=tight, softness=soft,
                                                           source=source)
            label = (f"avatar {vec['pose']} skin push (capsules, then bound) b={params.skirt_bias:g} "
                     f"max={params.max_push:g}")
            # positions where the capsule gradient is well conditioned (as the capsule push-out checks)
            checks.append(Check(label + " positions", _err(got[ok], ref[ok]), TOL_POSITION, int(ok.sum())))
            checks.append(Check(label + " total push", _err(push[ok], rpush[ok]), TOL_POSITION, int(ok.sum())))
            checks.append(Check(label + " capsule push", _err(pcap, rcap), TOL_POSITION, n))
            checks.append(Check(label + " field distance", _err(d, rd), TOL_DISTANCE, n))
    return checks


# ------------------------------------------------------------------------------------ wrinkles
def wrinkle_checks():
    """Wrinkle weights against kisekae.tension.wrinkle.wrinkle_weights (1 to 8 maps, with and without
    normalisation) and the normal blend against kisekae.shaders.reference.blend_wrinkle_normals."""
    from ..tension.wrinkle import WrinkleMap, wrinkle_weights
    from .reference import blend_wrinkle_normals

    rng = np.random.default_rng(13)
    n = 3000
    co = np.concatenate([rng.uniform(0, 1, n - 6), [0.0, 1.0, 0.3, 0.6, 0.95, 0.05]])
    st = np.concatenate([rng.uniform(0, 1, n - 6), [1.0, 0.0, 0.6, 0.3, 0.05, 0.95]])
    co[rng.uniform(0, 1, n) < 0.2] = 0.0
    co, st = co.astype(np.float32), st.astype(np.float32)

    def mask(kind):
        return None if kind == 0 else np.clip(rng.uniform(-0.2, 1.2, n), 0, 1).astype(np.float32)

    maps = [WrinkleMap(f"m{i}", source=("compress", "stretch")[i % 2], mask=mask(i % 3),
                       threshold=(0.0, 0.25, 0.6, 0.1)[i % 4], gain=(1.0, 2.5, 0.7, 4.0, 1.3)[i % 5])
            for i in range(8)]
    checks = []
    for m in (1, 3, 4, 5, 8):
        for norm in (True, False):
            got = X.gpu_wrinkle_weights(co, st, maps[:m], normalize=norm)
            ref = wrinkle_weights(co, st, maps[:m], normalize=norm)
            checks.append(Check(f"wrinkle weights {m} maps normalize={norm}", _err(got, ref), TOL_TENSION, n * m))
    # normal blend: decoded tangent-space normals, some grazing (z below the 1/64 floor) or back-facing
    base = rng.normal(size=(n, 3)) * [0.4, 0.4, 1.0]
    base[:, 2] = np.abs(base[:, 2])
    nm = rng.normal(size=(n, 4, 3)) * [0.5, 0.5, 1.0]
    nm[:, :, 2] = np.abs(nm[:, :, 2])
    graze = rng.uniform(0, 1, (n, 4)) < 0.05
    nm[graze, 2] = rng.uniform(-0.05, 0.05, int(graze.sum()))
    base[: n // 20, 2] = rng.uniform(-0.03, 0.03, n // 20)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    nm /= np.linalg.norm(nm, axis=2, keepdims=True)
    w = rng.uniform(0, 1, (n, 4)) * (rng.uniform(0, 1, (n, 4)) < 0.7)
    for m in (1, 4):
        got = X.gpu_blend_wrinkle_normals(base, nm[:, :m], w[:, :m])
        ref = blend_wrinkle_normals(base.astype(np.float32), nm[:, :m].astype(np.float32), w[:, :m].astype(np.float32))
        checks.append(Check(f"wrinkle normal blend {m} maps", _err(got, ref), 1e-5, n))
    return checks


# ------------------------------------------------------------------------------------ wound targets
#: Wound encodings in the order the checks run them (the first ones cover the most code).
WOUND_DECODE_ORDER = ("article8", "delta16", "half", "delta8", "float")


def wound_decode_checks(encodings=WOUND_DECODE_ORDER):
    """Decoding of wound encodings (textures in their own formats) against kisekae.wound.decode."""
    from ..wound.encode import decode, encode

    rng = np.random.default_rng(17)
    n = 3001  # not a power of two: the last texture row is partial
    start = rng.uniform(-0.4, 0.4, (n, 3)) + [0.0, 1.0, 0.0]
    target = start + rng.normal(0, 0.03, (n, 3)) * (rng.uniform(0, 1, (n, 1)) < 0.6)
    tn = rng.normal(size=(n, 3))
    tn /= np.linalg.norm(tn, axis=1, keepdims=True)
    parts = rng.integers(0, 256, n)
    checks = []
    for name in encodings:
        enc = encode(name, start, target, tn, parts=parts)
        gp, gn, gpart = X.gpu_wound_decode(enc, start.astype(np.float32))
        rp, rn = decode(enc, start.astype(np.float32))
        checks.append(Check(f"wound decode {name} positions", _err(gp, rp), TOL_DISTANCE, n))
        checks.append(Check(f"wound decode {name} normals", _err(gn, rn), 1e-5, n))
        checks.append(Check(f"wound decode {name} part ids", float(np.sum(gpart != parts)), 0.0, n))
    return checks


def wound_checks(source: str = "constants"):
    from ..wound import runtime as W

    rng = np.random.default_rng(11)
    n = 3000
    pos = rng.uniform(-0.3, 0.3, (n, 3)).astype(np.float32)
    parts = rng.integers(0, 4, n)
    reach = np.array([1.0, 3.0, 1.5, 0.7])
    gain = np.array([1.0, 0.8, 0.0, 0.35])
    checks = []
    for nh in (0, 1, 5, 17):
        hits = rng.uniform(-0.3, 0.3, (nh, 3)).astype(np.float32)
        hparts = rng.integers(0, 4, nh)
        for size, inten in ((0.05, 20.0), (0.02, 60.0)):
            got = X.gpu_wound_p(pos, parts, hits, hparts, hole_size=size, hole_intensity=inten, part_reach=reach,
                                part_gain=gain, source=source)
            ref = W.wound_p_numpy(pos, parts, hits, hparts, size, inten, reach, gain)
            checks.append(Check(f"wound loop {nh} hits size={size:g}", _err(got, ref), TOL_TENSION, n))
    mask = rng.uniform(0, 1, n) * (rng.uniform(0, 1, n) < 0.5)
    hit = pos[17]
    got = X.gpu_wound_accumulate(mask, pos, parts, hit, 1, hole_size=0.05, hole_intensity=20.0, part_reach=reach,
                                 part_gain=gain)
    ref = W.accumulate_hit_numba(mask.astype(np.float64).copy(), pos.astype(np.float64), parts.astype(np.int64),
                                 hit.astype(np.float64), 1, 0.05, 20.0, reach, gain)
    checks.append(Check("wound flat-cost accumulate", _err(got, ref), TOL_TENSION, n))
    nrm = rng.normal(size=(n, 3)).astype(np.float32)
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    tpos = (pos + rng.normal(0, 0.02, (n, 3))).astype(np.float32)
    tn = rng.normal(size=(n, 3)).astype(np.float32)
    tn /= np.linalg.norm(tn, axis=1, keepdims=True)
    p = np.where(rng.uniform(0, 1, n) < 0.3, 0.0, rng.uniform(0, 1, n)).astype(np.float32)
    gp, gn = X.gpu_wound_morph(pos, nrm, tpos, tn, p)
    rp, rn = W.morph_numpy(pos, nrm, tpos, tn, p)
    checks.append(Check("wound morph positions", _err(gp, rp), TOL_DISTANCE, n))
    checks.append(Check("wound morph normals", _err(gn, rn), 1e-5, n))
    zero = p == 0
    same = np.array_equal(gp[zero].view(np.uint32), pos[zero].view(np.uint32)) and np.array_equal(
        gn[zero].view(np.uint32), nrm[zero].view(np.uint32))
    checks.append(Check("wound morph p=0 bit-identical", 0.0 if same else 1.0, 0.0, int(zero.sum())))
    return checks


#: Body contact positions: the issue's conformance limit (the core measures at most about 3e-7 m on llvmpipe).
TOL_CONTACT = 1e-5


#: Bends (degrees) of the synthetic contact joint: reach at ringFactor, a little above it, near maxReach, and
#: folded flat (reach 0, inactive).
CONTACT_BENDS = (60.0, 100.0, 150.0, 180.0)


def contact_vectors(bend_deg: float, n: int = 4096, seed: int = 19):
    """One synthetic joint bent by ``bend_deg`` and ``n`` vertices: ``(points, planes, skin_matrices)``.

    A third of the rest vertices lie just inside and just outside the end of the distance fade
    (``fade`` between 1e-3 and 0.05 either side of 0, clear of the float32 rounding at 0), a third likewise at
    the end of the radial fade, and a third anywhere near the joint; the posed points lie from two ring radii
    on the wrong side of the plane to one on their own side, so that deep vertices with a small fade (which the
    step leaves alone only where the fade is 0) are exercised.
    """
    from ..avatar.contact import MAX_REACH, RING_FACTOR, JointPlanes, joint_reach

    rng = np.random.default_rng([seed, int(round(bend_deg))])
    r, flesh = 0.08, 0.05
    centre = np.array([0.1, 0.9, 0.05])
    direction = np.array([0.0, 1.0, 0.0])
    a = np.radians(bend_deg)
    rot = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(a), -np.sin(a)], [0.0, np.sin(a), np.cos(a)]])
    m = np.tile(np.eye(4), (2, 1, 1))
    m[1, :3, :3] = rot
    m[1, :3, 3] = centre - rot @ centre
    reach = float(joint_reach(np.linalg.norm(rot @ direction + direction), RING_FACTOR, MAX_REACH))
    k = n // 3
    sign = np.where(rng.uniform(0, 1, n) < 0.5, -1.0, 1.0)
    near0 = sign * rng.uniform(1e-3, 0.05, n)  # a fade value either side of 0
    along = rng.uniform(-0.35, 0.35, n)
    off = rng.uniform(0.0, 0.08, n)
    # the end of the distance fade (radial fade 1: off < flesh)
    dist = (max(reach, RING_FACTOR) - near0[:k] * (RING_FACTOR - 1.0)) * r
    off[:k] = rng.uniform(0.0, 0.95, k) * flesh
    along[:k] = sign[::-1][:k] * np.sqrt(dist ** 2 - off[:k] ** 2)
    # the end of the radial fade (distance fade 1 where the reach allows)
    off[k:2 * k] = (1.25 - 0.25 * near0[k:2 * k]) * flesh
    room = np.sqrt(np.maximum((max(reach, RING_FACTOR) - 0.6) ** 2 * r * r - off[k:2 * k] ** 2, 0.0))
    along[k:2 * k] = sign[::-1][k:2 * k] * rng.uniform(0.0, 1.0, k) * room
    phi = rng.uniform(0.0, 2.0 * np.pi, n)
    rest = centre + along[:, None] * direction + off[:, None] * np.c_[np.cos(phi), np.zeros(n), np.sin(phi)]
    side = np.where(rng.uniform(0, 1, n) < 0.5, -1.0, 1.0)
    slots = np.full((n, 4), -1, np.int32)
    slots[:, 0] = 0
    sides = np.zeros((n, 4))
    sides[:, 0] = side
    planes = JointPlanes(np.array([1], np.int32), np.array([0], np.int32), centre[None], direction[None],
                         np.array([r]), slots, sides, rest, RING_FACTOR, np.array([flesh]), MAX_REACH)
    c, nrm, _ = planes.posed(m)
    tangent = rng.normal(0.0, 0.05, (n, 3))
    tangent -= (tangent @ nrm[0])[:, None] * nrm[0]
    s = rng.uniform(-2.0 * r, r, n)
    points = c[0] + (side * s)[:, None] * nrm[0] + tangent
    # float32 inputs, as the shader gets them, so that both sides start from the same numbers
    planes.rest = planes.rest.astype(np.float32).astype(np.float64)
    return points.astype(np.float32).astype(np.float64), planes, m


def contact_checks(poses=POSES):
    """The body's joint-plane contact (``kisekae_contact.hlsl``) against :func:`kisekae.avatar.contact.contact_planes_numpy`
    on the built-in body: one joint per dispatch (``KisekaeContactPlane``) and all slots at once
    (``KisekaeContactPlanes`` with the joint table read through ``KISEKAE_LOAD_JOINT_PLANE``); and on one
    synthetic joint in :data:`CONTACT_BENDS` (:func:`contact_vectors`: both ends of both fades)."""
    from ..avatar.builtin import load_builtin_avatar
    from ..avatar.contact import JointPlanes, contact_planes_numpy
    from ..avatar.poses import named_pose

    av = load_builtin_avatar()
    body, sk = av.body, av.skeleton
    planes = _memo(("contact planes",), lambda: JointPlanes.from_skin(sk.parents, sk.rest, body.skin.indices,
                                                                      body.skin.weights, body.mesh.vertices))
    checks = []
    for name in dict.fromkeys((*poses, "knee_bend")):
        m = named_pose(sk, name).skinning_matrices(sk)
        x = body.posed(m)
        ref = contact_planes_numpy(x, planes, m)
        checks.append(Check(f"body contact {name} one joint a pass", _err(X.gpu_contact_planes(x, planes, m), ref),
                            TOL_CONTACT, len(x)))
        checks.append(Check(f"body contact {name} all slots", _err(X.gpu_contact_planes_loop(x, planes, m), ref),
                            TOL_CONTACT, len(x)))
    for bend in CONTACT_BENDS:
        x, planes, m = _memo(("contact vectors", bend), lambda: contact_vectors(bend))
        ref = _memo(("contact ref", bend), lambda: contact_planes_numpy(x, planes, m))
        checks.append(Check(f"body contact synthetic bend {bend:g} one joint a pass",
                            _err(X.gpu_contact_planes(x, planes, m), ref), TOL_CONTACT, len(x)))
        checks.append(Check(f"body contact synthetic bend {bend:g} all slots",
                            _err(X.gpu_contact_planes_loop(x, planes, m), ref), TOL_CONTACT, len(x)))
    return checks


# ------------------------------------------------------------------------------------ part contact
#: Range-of-motion poses (seed :data:`PART_SEED`, none in any bake) whose bodies press parts that share no joint
#: together: pose 27 an upper arm into the chest, pose 39 the thighs, pose 38 a forearm deep in the torso (the fade).
PART_POSES = (27, 38, 39)
PART_SEED = 777


def part_vectors(n_parts: int = 40, n: int = 3000, seed: int = 23):
    """Synthetic part fields for ``KisekaePartStep``: ``(points, fields, skin_matrices)``.

    ``n_parts`` small grids (3-6 samples a side, 1 cm cells) over the same 5 cm box, each under its own bone turned
    and moved a little; random values (-3 to +2 cm) and gradients, so that every branch of the step is taken
    (the band, the rest cap, the fade, both gradient cases, the grid border), and more than 32 parts, so that both
    words of the skip mask are read. Points and rest points fill the box; random skip masks (a vertex's own part
    always set)."""
    from ..avatar.part_contact import PartFields

    rng = np.random.default_rng(seed)
    dims = rng.integers(3, 7, size=(n_parts, 3)).astype(np.int64)
    lo = rng.uniform(-0.01, 0.01, size=(n_parts, 3))
    counts = np.prod(dims, axis=1)
    grid = np.c_[rng.uniform(-0.03, 0.02, counts.sum()), rng.normal(0.0, 1.0, (counts.sum(), 3))]
    part = rng.integers(-1, n_parts, size=n)
    skip = rng.integers(0, 2 ** 63, size=n, dtype=np.uint64) & rng.integers(0, 2 ** 63, size=n, dtype=np.uint64)
    own = np.where(part >= 0, part, 0)
    skip |= np.where(part >= 0, np.uint64(1) << own.astype(np.uint64), np.uint64(0))
    m = np.tile(np.eye(4), (n_parts, 1, 1))
    for b in range(n_parts):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        a = rng.uniform(-0.3, 0.3)
        k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        m[b, :3, :3] = np.eye(3) + np.sin(a) * k + (1 - np.cos(a)) * k @ k
        m[b, :3, 3] = rng.uniform(-0.005, 0.005, 3)
    rest = rng.uniform(-0.005, 0.045, size=(n, 3))
    points = rest + rng.normal(0.0, 0.004, size=(n, 3))
    fields = PartFields(grid=grid, start=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), lo=lo, dims=dims,
                        bone=np.arange(n_parts, dtype=np.int64), cell=0.01, rest=rest, part=part.astype(np.int64),
                        own_bone=own.astype(np.int64), skip=skip,
                        ring=(np.zeros(n + 1, np.int64), np.zeros(0, np.int64)))
    return points, fields, m


def _some_fades(n_parts: int, seed: int = 29):
    """(P, P) pair fades for the synthetic checks: a third 1, a third 0, a third between."""
    rng = np.random.default_rng(seed)
    return np.clip(rng.uniform(-0.5, 1.5, size=(n_parts, n_parts)), 0.0, 1.0)


def part_contact_checks(poses=PART_POSES):
    """The part contact (``kisekae_part_contact.hlsl``) against :func:`kisekae.avatar.part_contact.part_step_numpy`:
    on :func:`part_vectors` (synthetic, quick: first), then on the built-in contact body in the range-of-motion poses
    ``poses`` (seed :data:`PART_SEED`), one step and the whole step (a step, the reference's one-ring passes, a
    step); and the flip guard's passes (``KisekaePartGuard``) in pose :data:`GUARD_POSE`."""
    from ..avatar.part_contact import DEEP, PASSES, pair_depths_numpy, pair_fade, part_contact_numpy_steps, part_step_numpy
    from ..avatar.flip_guard import flip_guard_numpy

    x, fields, m = _memo(("part vectors",), part_vectors)
    fade = _memo(("part vectors fade",), lambda: _some_fades(fields.n_parts))
    ref = _memo(("part vectors ref",), lambda: part_step_numpy(x, fields, m, fade=fade))
    checks = [Check("part contact synthetic fields", _err(X.gpu_part_step(x, fields, m, fade=fade), ref), TOL_CONTACT,
                    len(x)),
              Check("part contact synthetic depths", _err(X.gpu_part_depths(x, fields, m),
                                                          _memo(("part vectors depths",), lambda: pair_depths_numpy(
                                                              x, fields, m))), TOL_CONTACT, len(x))]
    d = np.linspace(0.0, 0.05, 64)
    checks.append(Check("part contact pair fade", _err(X.gpu_pair_fade(d, d[::-1]),
                                                       np.diag(pair_fade(np.diag(np.maximum(d, d[::-1])), DEEP))),
                        TOL_CONTACT, len(d)))
    av, fields = _memo(("part avatar",), _part_avatar)
    from ..avatar.poses import range_of_motion_poses

    rom = _memo(("part poses",), lambda: range_of_motion_poses(av.skeleton, max(*poses, GUARD_POSE) + 1, seed=PART_SEED))
    for k in poses:
        m = rom[k].skinning_matrices(av.skeleton)
        x = _memo(("part body", k), lambda: av.body.posed(m))
        ref = _memo(("part body ref", k), lambda: part_step_numpy(x, fields, m))
        checks.append(Check(f"part contact rom_{k} one step", _err(X.gpu_part_step(x, fields, m), ref), TOL_CONTACT,
                            len(x)))
        whole = part_contact_numpy_steps(x, fields, m, PASSES, step=lambda y, f: X.gpu_part_step(y, fields, m, fade=f))
        ref = _memo(("part body whole", k), lambda: part_contact_numpy_steps(x, fields, m, PASSES))
        checks.append(Check(f"part contact rom_{k} depths", _err(X.gpu_part_depths(x, fields, m), _memo(
            ("part body depths", k), lambda: pair_depths_numpy(x, fields, m))), TOL_CONTACT, len(x)))
        checks.append(Check(f"part contact rom_{k} whole step", _err(whole, ref), TOL_CONTACT, len(x)))
    start, unguarded = _memo(("part guard input",), lambda: _unguarded_part_contact(av, fields, rom[GUARD_POSE]))
    ref = _memo(("part guard ref",), lambda: flip_guard_numpy(start, unguarded, fields.faces, fields.vertex_faces))
    checks.append(Check(f"part contact rom_{GUARD_POSE} flip guard", _err(
        X.gpu_part_guard(start, unguarded, fields.faces, fields.vertex_faces), ref), TOL_CONTACT, len(start)))
    return checks


#: The range-of-motion pose (seed :data:`PART_SEED`) whose part contact turns two of the built-in body's triangles over
#: without the flip guard: the guard's conformance check.
GUARD_POSE = 3


def _unguarded_part_contact(av, fields, pose) -> tuple:
    """``(start, moved)``: the body before the part contact (the planes) and after it without the flip guard."""
    from dataclasses import replace

    from ..avatar.part_contact import inner_deform, part_contact

    m = pose.skinning_matrices(av.skeleton)
    start = inner_deform(av.body.deform).pose(av.body.mesh.vertices, av.body.skin, m).astype(np.float64)
    return start, part_contact(start, replace(fields, faces=None, vertex_faces=None), m)


def _part_avatar():
    """The built-in avatar with the command line's contact body, and its part fields."""
    from ..avatar import load_builtin_avatar
    from ..avatar.contact import GAP, apply_contact
    from ..avatar.part_contact import bake_part_fields

    av = apply_contact(load_builtin_avatar(), GAP)
    b = av.body
    return av, bake_part_fields(b.mesh.vertices, b.mesh.faces, b.skin, av.skeleton.parents, weld=b.mesh.weld,
                                edges=b.mesh.edges)


# ------------------------------------------------------------------------------------ surface push
#: Poses and garments of the surface push checks (the built-in avatar with its body contact).
SURFACE_POSES = ("crouch", "sit")
SURFACE_GARMENTS = ("tights", "skirt")
#: Range-of-motion poses the test candidates are baked over (the runtime bakes 300; 40 keep the checks quick).
SURFACE_BAKE_POSES = 40
#: Surface push and smoothing: the issue's conformance limit.
TOL_SURFACE = 1e-5
#: Squared-distance ties between two candidates with different closest points, and points this close to the
#: reach, are left out of the surface push comparison (float32 may choose the other side), metres.
SURFACE_TIE = 1e-6
#: Unflip on the avatar: largest share of vertices whose moved flag differs from the reference (float32 cosines at
#: the turn start).
TOL_FLAGS = 0.002
#: Body curvature: largest error relative to max(kv, 1 1/m) (float32 normals differ by ~1e-7 over mm edges).
TOL_CURVATURE = 1e-5
#: (PushParams fields, reach) of the surface push checks; reach None = max_push.
SURFACE_CASES = (
    (dict(), None),
    (dict(margin=0.003, stiffness=0.8, max_push=0.02, skirt_bias=0.0), None),
    (dict(margin=0.015, stiffness=0.3, max_push=0.05, skirt_bias=0.6), 0.012),
)


def _surface_avatar():
    from ..avatar import load_builtin_avatar

    return load_builtin_avatar().with_body_contact()


def surface_vectors(pose: str, garment: str, seed: int = 0):
    """Surface push test vectors of one garment in one pose, memoised.

    The garment's vertices skinned in ``pose`` and a copy jittered by up to about 3 cm (so that many are inside the
    body or in the contact band), its candidates (:func:`kisekae.fit.surface.bake_surface_candidates` over
    :data:`SURFACE_BAKE_POSES` poses, duplicated for the copy), the posed body (skinning and body contact) and its
    vertex normals, float32 as the GPU gets them; random masks; each point's distance to its nearest candidate and
    whether a different closest point of another candidate ties with it (:data:`SURFACE_TIE`); the garment's chords
    (:func:`kisekae.fit.surface.garment_chords`, duplicated for the copy) and the body curvature ``kv``
    (:func:`kisekae.fit.surface.body_curvature`).
    """
    def build():
        from ..avatar.poses import named_pose
        from ..fit.surface import bake_surface_candidates
        from ..geom.closest import closest_point_triangles_numpy
        from ..fit.surface import SurfaceCandidates, body_curvature, garment_chords
        from ..geom.normals import vertex_normals

        av = _memo("surface avatar", _surface_avatar)
        cand = _memo(("surface candidates", garment),
                     lambda: bake_surface_candidates(av, garment, n_poses=SURFACE_BAKE_POSES))
        rng = np.random.default_rng([seed, 5, zlib.crc32(f"{pose}/{garment}".encode())])
        m = named_pose(av.skeleton, pose).skinning_matrices(av.skeleton)
        faces = av.body.mesh.faces
        body = av.body.posed(m).astype(np.float32).astype(np.float64)
        normals = vertex_normals(body, faces).astype(np.float32).astype(np.float64)
        x = av.part(garment).posed(m).astype(np.float32)
        pts = np.concatenate([x, x + rng.normal(0, 0.01, x.shape)]).astype(np.float32).astype(np.float64)
        tri = np.concatenate([cand.triangles, cand.triangles])
        n, k = tri.shape
        corners = faces[tri]  # (n, k, 3)
        q, _, dist = closest_point_triangles_numpy(np.repeat(pts, k, axis=0),
                                                   *(body[corners[:, :, c]].reshape(-1, 3) for c in range(3)))
        d_best, tie = _nearest_ties(q.reshape(n, k, 3), dist.reshape(n, k))
        return {"pose": pose, "garment": garment, "points": pts, "candidates": SurfaceCandidates(tri, len(faces)),
                "corners": corners, "body": body, "normals": normals, "faces": faces,
                "tightness": rng.uniform(0, 1, n), "softness": rng.uniform(0, 1, n), "distance": d_best, "tie": tie,
                "n_skinned": len(x), "mesh": av.part(garment).mesh,
                "chord": np.tile(garment_chords(av.part(garment).mesh), 2), "kv": body_curvature(body, normals, faces)}
    return _memo(("surface vectors", pose, garment, seed), build)


def _nearest_ties(q, dist):
    """Distance to the nearest candidate (n,) and whether another candidate's different closest point ties with it
    (:data:`SURFACE_TIE`), from closest points ``q`` (n, k, 3) and distances ``dist`` (n, k)."""
    n = len(dist)
    best = np.argmin(dist, axis=1)
    rows = np.arange(n)
    d_best = dist[rows, best]
    apart = np.linalg.norm(q - q[rows, best][:, None], axis=2) > SURFACE_TIE
    return d_best, np.any(apart & (dist - d_best[:, None] < SURFACE_TIE), axis=1)


def surface_sheet_checks():
    """Analytic surface push: a flat sheet of 16 triangles (4 x 2 quads, 1 m up, normal +Z), all of them every
    vertex's candidates in a random order; points under it, in the contact band, above it, on its grid lines (ties
    between triangles with one closest point) and beside it (closest point on the border), some beyond reach.
    The expected clearance is the height above the sheet (where the border point is within reach), the push the
    push law along +Z."""
    from ..fit.pushout import PushParams

    rng = np.random.default_rng(23)
    gx, gy = np.meshgrid(np.linspace(-0.2, 0.2, 5), np.linspace(-0.1, 0.1, 3))
    v = np.column_stack([gx.ravel(), gy.ravel(), np.full(gx.size, 1.0)])
    faces = []
    for j in range(2):
        for i in range(4):
            a, b, c, d = 5 * j + i, 5 * j + i + 1, 5 * (j + 1) + i + 1, 5 * (j + 1) + i
            faces += [[a, b, c], [a, c, d]]
    faces = np.array(faces)
    normals = np.tile([0.0, 0.0, 1.0], (len(v), 1))
    n = 2000
    xy = rng.uniform([-0.2, -0.1], [0.2, 0.1], (n, 2))
    xy[:200, 0] = rng.choice(np.linspace(-0.2, 0.2, 5), 200)  # on the grid lines
    xy[200:300, 1] = 0.0
    xy[300:700] = rng.uniform([-0.3, -0.2], [0.3, 0.2], (400, 2))  # beside the sheet too
    z = rng.uniform(-0.12, 0.02, n)
    pts = np.column_stack([xy, 1.0 + z]).astype(np.float32).astype(np.float64)
    z = pts[:, 2] - 1.0
    tri = np.array([rng.permutation(len(faces)) for _ in range(n)])
    params = PushParams(margin=0.004, stiffness=0.7, max_push=0.1)
    tight = rng.uniform(0, 1, n)
    soft = rng.uniform(0, 1, n)
    # expected: the border point's lateral offset, the clearance z within reach, the push law along +Z
    lateral = np.hypot(np.maximum(np.abs(pts[:, 0]) - 0.2, 0.0), np.maximum(np.abs(pts[:, 1]) - 0.1, 0.0))
    dist = np.hypot(lateral, z)
    ok = np.abs(dist - params.max_push) > SURFACE_TIE
    clear = np.where(dist <= params.max_push, z, np.inf)
    gap = params.stiffness * (1.0 - 0.5 * tight) * params.margin
    x = 1.0 - z / params.margin
    amount = np.where(z < 0, gap - z, gap * ((1.0 - soft) * x + soft * x * x))
    amount = np.where(np.isfinite(clear) & (z < params.margin), np.minimum(amount, params.max_push), 0.0)
    want = pts + amount[:, None] * [0.0, 0.0, 1.0]
    got, push, s = X.gpu_surface_push(pts, tri, v, normals, params, faces=faces, tightness=tight, softness=soft)
    label = "surface push flat sheet (analytic)"
    checks = [Check(label + " positions", _err(got[ok], want[ok]), TOL_SURFACE, int(ok.sum())),
              Check(label + " push length", _err(push[ok], amount[ok]), TOL_SURFACE, int(ok.sum())),
              Check(label + " clearance", _err(s[ok], clear[ok]), TOL_SURFACE, int(ok.sum()))]
    # a flat body has no curvature, so no chord allowance whatever the chords
    kv = X.gpu_body_curvature(v, normals, faces)
    checks.append(Check(label + " curvature 0", _err(kv, np.zeros(len(v))), TOL_CURVATURE, len(v)))
    got, push, s = X.gpu_surface_push(pts, tri, v, normals, params, faces=faces, tightness=tight, softness=soft,
                                      chord=rng.uniform(0.0, 0.1, n), curvature=kv)
    checks.append(Check(label + " chord positions", _err(got[ok], want[ok]), TOL_SURFACE, int(ok.sum())))
    return checks


def _cylinder(radius: float, segments: int, rings: int, length: float):
    """A closed tube of ``segments`` x (``rings`` - 1) quads (two triangles each) around the x axis, radius
    ``radius`` at its vertices, from -length/2 to length/2; vertex normals radial (unit)."""
    theta = 2.0 * np.pi * np.arange(segments) / segments
    xs = np.linspace(-0.5 * length, 0.5 * length, rings)
    x, th = np.meshgrid(xs, theta, indexing="ij")  # (rings, segments)
    v = np.column_stack([x.ravel(), radius * np.cos(th).ravel(), radius * np.sin(th).ravel()])
    nrm = np.column_stack([np.zeros(x.size), np.cos(th).ravel(), np.sin(th).ravel()])
    faces = []
    for r in range(rings - 1):
        for s in range(segments):
            a, b = r * segments + s, r * segments + (s + 1) % segments
            faces += [[a, b, b + segments], [a, b + segments, a + segments]]
    return v, nrm, np.array(faces)


def surface_chord_checks():
    """Analytic chord allowance: a tube of radius R = 0.1 m (64 segments, 4 rings; every vertex's largest
    ``|n_a - n_b| / |x_a - x_b|`` is that of a circumferential edge, 1/R exactly); ``KisekaeBodyCurvature`` gives 1/R.
    Points within 1.5 cm of the surface over the middle 60 % of a segment (its own facet is nearest) with chords L
    from 0 to 7 cm: the clearance is the height above the facet along the blended radial normal less
    ``min(L^2 / (8 R), 3 mm)`` (reached at L = 4.9 cm), the push the push law along that normal."""
    from ..fit.pushout import PushParams, push_amount
    from ..fit.surface import CHORD_CAP

    radius, segments, rings, length = 0.1, 64, 4, 0.3
    v, nrm, faces = _cylinder(radius, segments, rings, length)
    rng = np.random.default_rng(29)
    n = 1500
    seg = rng.integers(0, segments, n)
    step = 2.0 * np.pi / segments
    phi = (seg + rng.uniform(0.2, 0.8, n)) * step
    r = radius + rng.uniform(-0.015, 0.015, n)
    px = rng.uniform(-0.1, 0.1, n)  # off the tube's open ends (0.15 m)
    pts = np.column_stack([px, r * np.cos(phi), r * np.sin(phi)]).astype(np.float32).astype(np.float64)
    # expected: the closest point on the segment's chord, the radial normals blended along it
    a = radius * np.column_stack([np.cos(seg * step), np.sin(seg * step)])
    b = radius * np.column_stack([np.cos((seg + 1) * step), np.sin((seg + 1) * step)])
    yz = pts[:, 1:]
    u = np.einsum("ij,ij->i", yz - a, b - a) / np.einsum("ij,ij->i", b - a, b - a)
    q = a + u[:, None] * (b - a)
    nb = (1.0 - u)[:, None] * a + u[:, None] * b
    nb /= np.linalg.norm(nb, axis=1)[:, None]
    chord = rng.uniform(0.0, 0.07, n)
    chord[:50] = 0.0
    clear = np.einsum("ij,ij->i", yz - q, nb) - np.minimum(chord ** 2 / (8.0 * radius), CHORD_CAP)
    params = PushParams(margin=0.004, stiffness=0.7, max_push=0.1)
    tight, soft = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    amount = push_amount(clear, params.margin, params.stiffness, params.max_push, tight, soft)
    want = pts + amount[:, None] * np.column_stack([np.zeros(n), nb])
    # candidates: both triangles of the 8 quads of the point's ring of quads around its segment, in a random order
    ring = np.minimum(((px + 0.5 * length) / (length / (rings - 1))).astype(np.int64), rings - 2)
    quads = ring[:, None] * segments + (seg[:, None] + np.arange(-3, 5)[None]) % segments  # faces 2q, 2q + 1
    tri = np.stack([2 * quads, 2 * quads + 1], axis=2).reshape(n, 16)
    tri = np.array([rng.permutation(row) for row in tri])
    kv = X.gpu_body_curvature(v, nrm, faces)
    got, push, s = X.gpu_surface_push(pts, tri, v, nrm, params, faces=faces, tightness=tight, softness=soft,
                                      chord=chord, curvature=kv)
    label = "surface push chord allowance tube (analytic)"
    capped = int(np.sum(chord ** 2 / (8.0 * radius) > CHORD_CAP))
    return [Check(label + " curvature 1/R", _err(kv * radius, np.ones(len(v))), TOL_CURVATURE, len(v)),
            Check(label + " clearance", _err(s, clear), TOL_SURFACE, n),
            Check(label + " push length", _err(push, amount), TOL_SURFACE, n),
            Check(label + " positions", _err(got, want), TOL_SURFACE, n),
            Check(label + " capped", 0.0 if 0 < capped < n else float("inf"), 0.0, capped)]


def surface_depth_bound_checks():
    """Analytic depth bound: a tube of radius R = 0.1 m (64 segments) is 2 R thick across, so its depth bound is
    R + 5 mm on every side vertex (:func:`kisekae.fit.depth_bound.body_depth_bound`). Points inside the tube and up
    to 3 cm outside its +z half, with only the -z side's triangles as candidates: those farther behind that side than
    the bound (outside the +z half, or inside nearer the +z side) are not pushed and read clearance ``inf``; those
    within it (inside, near the -z side) are pushed as the reference pushes them
    (:func:`kisekae.fit.surface.surface_push_numpy` with the bound). Then a bound of 2 mm everywhere, with points up to
    1 cm in front of the -z side too: those in front are measured whatever the bound, those behind by more than 2 mm
    are not."""
    from ..fit.depth_bound import DEPTH_ALLOWANCE, body_depth_bound
    from ..fit.pushout import PushParams
    from ..fit.surface import SurfaceCandidates, surface_push_numpy

    radius, segments, rings, length = 0.1, 64, 4, 0.3
    v, nrm, faces = _cylinder(radius, segments, rings, length)
    bound = body_depth_bound(v, faces, nrm)
    rng = np.random.default_rng(31)
    n = 600
    inside = np.arange(n) < n // 2
    front = np.arange(n) >= n - 100  # in front of the -z side, within 1 cm of it
    phi = np.where(inside, rng.uniform(0.0, 2.0 * np.pi, n), rng.uniform(0.3, np.pi - 0.3, n))
    phi[front] = rng.uniform(1.5 * np.pi - 0.1, 1.5 * np.pi + 0.1, 100)
    r = np.where(inside, rng.uniform(0.0, 0.09, n), rng.uniform(0.1, 0.13, n))
    r[front] = rng.uniform(0.1005, 0.11, 100)
    pts = np.column_stack([rng.uniform(-0.05, 0.05, n), r * np.cos(phi), r * np.sin(phi)])
    pts = pts.astype(np.float32).astype(np.float64)
    centroid = v[faces].mean(axis=1)
    far = np.flatnonzero((centroid[:, 2] < -0.095) & (np.abs(centroid[:, 0]) < 0.09))  # the -z cap of the tube
    tri = np.array([rng.permutation(far)[:16] for _ in range(n)])
    params = PushParams(margin=0.004, stiffness=0.7, max_push=0.3)
    side = np.abs(v[:, 0]) < 0.5 * length - 1e-9
    checks = [Check("surface push depth bound tube (analytic) bound R + allowance",
                    _err(bound[side], np.full(int(side.sum()), radius + DEPTH_ALLOWANCE)), TOL_SURFACE, int(side.sum()))]
    for tag, b in (("", bound), (" 2 mm", np.full(len(v), 0.002))):
        ref, rpush, rs = surface_push_numpy(pts, SurfaceCandidates(tri, len(faces)), v, nrm, faces, params,
                                            depth_bound=b)
        got, push, s = X.gpu_surface_push(pts, tri, v, nrm, params, faces=faces, depth_bound=b)
        label = "surface push depth bound tube (analytic)" + tag
        cut = np.isinf(rs)
        same = np.array_equal(np.isinf(s), cut) and 0 < cut.sum() < n and not cut[front].any()
        checks += [Check(label + " untrusted", 0.0 if same else np.inf, 0.0, int(cut.sum())),
                   Check(label + " positions", _err(got, ref), TOL_SURFACE, n),
                   Check(label + " push length", _err(push, rpush), TOL_SURFACE, n),
                   Check(label + " clearance", _err(s[~cut], rs[~cut]), TOL_SURFACE, int((~cut).sum()))]
    return checks


#: Guarded body normals: weights (unitless) and unit normals, float32 kernel against the float64 reference.
TOL_GUARD = 1e-5


def guarded_normal_checks():
    """``KisekaeGuardedFace`` (the body normals pass's guard, :mod:`kisekae.geom.guarded_normals`): triangles hinged
    about x at known angles from a +z reference, whose weights are ``clip((cos + 0.3) / 0.3, 0, 1)`` worked out here
    from the angle; then a sphere of radius 0.1 m crumpled by 6 mm noise (triangles left out, faded and kept), its
    vertex normals summed from the kernel's face vectors against
    :func:`~kisekae.geom.guarded_normals.guarded_vertex_normals_numpy`, and the same tube with every reference
    reversed (every triangle left out: the normals are the references)."""
    from ..geom.guarded_normals import GUARD_FULL, GUARD_OFF, face_guard_weights, guarded_vertex_normals_numpy
    from ..geom.normals import face_normals, vertex_normals

    angles = np.radians([0.0, 60.0, 89.0, 92.0, 97.0, 101.0, 104.0, 107.0, 108.0, 150.0, 180.0])
    v, f = [], []
    for i, a in enumerate(angles):
        n = np.array([0.0, -np.sin(a), np.cos(a)])
        u = np.array([1.0, 0.0, 0.0])
        o = np.array([0.0, 0.0, 0.1 * i])
        v += [o, o + 0.02 * u, o + 0.03 * np.cross(n, u)]
        f.append([3 * i, 3 * i + 1, 3 * i + 2])
    v, f = np.array(v), np.array(f)
    ref = np.tile([0.0, 0.0, 1.0], (len(v), 1))
    want = np.clip((np.cos(angles) - GUARD_OFF) / (GUARD_FULL - GUARD_OFF), 0.0, 1.0)
    got = np.linalg.norm(X.gpu_guarded_vertex_normals(v, f, ref)[1], axis=1) / np.linalg.norm(
        face_normals(v, f, unit=False), axis=1)
    checks = [Check("guarded normals hinged triangles (analytic) weights", _err(got, want), TOL_GUARD, len(f)),
              Check("guarded normals reference weights (analytic)", _err(face_guard_weights(v, f, ref), want),
                    TOL_GUARD, len(f))]
    sv, _, sf = _cylinder(0.1, 48, 8, 0.3)
    r = vertex_normals(sv, sf).astype(np.float64)
    crumpled = sv + np.random.default_rng(23).normal(0.0, 0.006, sv.shape)
    w = face_guard_weights(crumpled, sf, r)
    mixed = bool((w == 0.0).any() and ((w > 0.0) & (w < 1.0)).any() and (w == 1.0).any())
    for tag, rr in (("", r), (" reversed", -r)):
        got_n = X.gpu_guarded_vertex_normals(crumpled, sf, rr)[0]
        ok = mixed or tag
        checks.append(Check("guarded normals crumpled tube" + tag, _err(got_n, guarded_vertex_normals_numpy(
            crumpled, sf, rr)) if ok else np.inf, TOL_GUARD, len(sv)))
    return checks


def smooth_strip_checks():
    """Analytic smoothing: a strip of six vertices, one pushed by 1 cm; two passes spread it to two rings, fading
    (values worked out by hand from the rule), and never shrink the push itself."""
    from ..fit.surface import one_ring

    ring = one_ring(6, np.array([[i, i + 1] for i in range(5)]))
    d = np.zeros((6, 3))
    d[2] = (0.003, -0.002, 0.01)
    want = np.outer([0.125, 0.375, 1.0, 0.375, 0.0625, 0.0], d[2])
    return [Check("smooth push strip (analytic) 2 passes", _err(X.gpu_smooth_push(d, ring, 2), want), TOL_SURFACE, 6)]


def stretch_pair_checks():
    """Analytic stretch limit: an edge of 10 cm stretched to 20 cm meets halfway at 11 cm (each end moves 4.5 cm),
    an edge 5 % long and one shortened by half stay where they are."""
    from ..fit.surface import one_ring

    x = np.array([[0, 0, 0], [0.1, 0, 0], [1, 0, 0], [1.1, 0, 0], [2, 0, 0], [2.1, 0, 0]], dtype=np.float64)
    p = x.copy()
    p[1, 0], p[3, 0], p[5, 0] = 0.2, 1.105, 2.05
    want = p.copy()
    want[0, 0], want[1, 0] = 0.045, 0.155
    ring = one_ring(6, [[0, 1], [2, 3], [4, 5]])
    got, moved = X.gpu_stretch_limit(p, x, ring, 0.1)
    flags_ok = moved.tolist() == [True, True, False, False, False, False]
    checks = [Check("stretch limit pair (analytic)", _err(got, want) if flags_ok else np.inf, TOL_SURFACE, 6)]
    # the floor: the shortened clinging edge 4-5 (half its length, floor 0.85) is pushed apart to 8.5 cm, each end
    # 1.75 cm; edge 2-3 has a loose end (floor 0) and stays
    p[1, 0] = 0.1
    want = p.copy()
    want[4, 0], want[5, 0] = 2.0 - 0.0175, 2.05 + 0.0175
    got, moved = X.gpu_stretch_limit(p, x, ring, 0.1, [0.85, 0.85, 0.85, 0.0, 0.85, 0.85])
    flags_ok = moved.tolist() == [False, False, False, False, True, True]
    return checks + [Check("stretch limit floor pair (analytic)", _err(got, want) if flags_ok else np.inf,
                           TOL_SURFACE, 6)]


def _surface_reference(vec, case: dict, reach, chord: bool = False):
    """:func:`kisekae.fit.surface.surface_push_numpy` of :func:`surface_vectors` ``vec`` for one case (with the
    garment's chords when ``chord``), memoised."""
    from ..fit.pushout import PushParams
    from ..fit.surface import surface_push_numpy

    return _memo(("surface", vec["pose"], vec["garment"], str(case), reach, chord), lambda: surface_push_numpy(
        vec["points"], vec["candidates"], vec["body"], vec["normals"], vec["faces"],
        PushParams(**case, smooth_iterations=0), vec["tightness"], vec["softness"], reach=reach,
        chord=vec["chord"] if chord else None))


def _relative(a, b) -> float:
    """Largest ``|a - b| / max(b, 1)``: curvature errors (1/m) relative to the curvature, or absolute below 1/m."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape or not np.all(np.isfinite(a)):
        return float("inf")
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1.0), initial=0.0))


def _surface_push_checks(vec, tag: str, chord: bool):
    """The push of :func:`surface_vectors` ``vec`` against its reference, every case of :data:`SURFACE_CASES`;
    with ``chord``, the garment's chords and the body curvature of ``KisekaeBodyCurvature``."""
    from ..fit.pushout import PushParams

    checks = []
    pts = vec["points"]
    extra = {}
    if chord:
        kv = X.gpu_body_curvature(vec["body"], vec["normals"], vec["faces"])
        checks.append(Check(f"{tag} body curvature", _relative(kv, vec["kv"]), TOL_CURVATURE, len(kv)))
        extra = {"chord": vec["chord"], "curvature": kv}
        tag += " chord"
    for case, reach in SURFACE_CASES:
        params = PushParams(**case, smooth_iterations=0)
        r = params.max_push if reach is None else reach
        ref, rpush, rs = _surface_reference(vec, case, reach, chord)
        got, push, s = X.gpu_surface_push(pts, vec["corners"], vec["body"], vec["normals"], params,
                                          tightness=vec["tightness"], softness=vec["softness"], reach=reach, **extra)
        ok = ~vec["tie"] & (np.abs(vec["distance"] - r) > SURFACE_TIE)
        label = f"{tag} b={params.skirt_bias:g} m={params.margin:g} reach={r:g}"
        checks.append(Check(label + " positions", _err(got[ok], ref[ok]), TOL_SURFACE, int(ok.sum())))
        checks.append(Check(label + " push length", _err(push[ok], rpush[ok]), TOL_SURFACE, int(ok.sum())))
        checks.append(Check(label + " clearance", _err(s[ok], rs[ok]), TOL_SURFACE, int(ok.sum())))
    return checks


def surface_avatar_checks(poses=SURFACE_POSES, garments=SURFACE_GARMENTS):
    """``KisekaeSurfacePush`` against :func:`kisekae.fit.surface.surface_push_numpy`, without and with the chord
    allowance (``chord=garment_chords(mesh)``, the body curvature from ``KisekaeBodyCurvature``, itself checked
    against :func:`~kisekae.fit.surface.body_curvature`), and ``KisekaeSmoothPush`` (1 and 10 passes) against
    :func:`~kisekae.fit.surface.smooth_push_numpy` on the built-in avatar (:func:`surface_vectors`)."""
    from ..fit.surface import (COMPRESSION_LIMIT, SMOOTH_PASSES, STRETCH_LIMIT, one_ring, smooth_push_numpy,
                               stretch_limit_numpy)

    checks = []
    for pose in poses:
        for garment in garments:
            vec = surface_vectors(pose, garment)
            pts = vec["points"]
            tag = f"surface push {pose} {garment}"
            checks += _surface_push_checks(vec, tag, chord=False)
            checks += _surface_push_checks(vec, tag, chord=True)
            # smoothing the displacement of the first push (skinned and jittered vertices, each on the ring)
            k = vec["n_skinned"]
            mesh = vec["mesh"]
            ring = _memo(("surface ring", garment), lambda: one_ring(mesh.n_vertices, mesh.edges, mesh.weld))
            disp = (_surface_reference(vec, *SURFACE_CASES[0])[0] - pts).astype(np.float32)
            for part, d in (("skinned", disp[:k]), ("jittered", disp[k:])):
                for passes in (1, SMOOTH_PASSES):
                    ref = _memo(("smooth", pose, garment, part, passes),
                                lambda: smooth_push_numpy(d.astype(np.float64), ring, passes))
                    checks.append(Check(f"smooth push {pose} {garment} {part} {passes} passes",
                                        _err(X.gpu_smooth_push(d, ring, passes), ref), TOL_SURFACE, len(d)))
            # the stretch limit over the pushed vertices (pushes along diverging normals stretch some edges)
            pushed = _surface_reference(vec, *SURFACE_CASES[0])[0]
            # and with the floor of cloth that clings everywhere (:data:`kisekae.fit.surface.COMPRESSION_LIMIT`)
            floor = np.full(k, 1.0 - COMPRESSION_LIMIT)
            for part, sl in (("skinned", slice(0, k)), ("jittered", slice(k, None))):
                for tag, shortest in (("", None), (" floor", floor)):
                    ref, rmoved = stretch_limit_numpy(pushed[sl], pts[sl], ring, STRETCH_LIMIT, shortest)
                    got, moved = X.gpu_stretch_limit(pushed[sl], pts[sl], ring, STRETCH_LIMIT, shortest)
                    checks.append(Check(f"stretch limit{tag} {pose} {garment} {part} ({int(rmoved.sum())} moved)",
                                        max(_err(got, ref), 0.0 if np.array_equal(moved, rmoved) else np.inf),
                                        TOL_SURFACE, len(ref)))
            # the carried start of the next frame from this push's correction (keep 0, kisekae's, and all of it)
            from ..fit.carry import KEEP, carry_start

            for keep in (0.0, KEEP, 1.0):
                ref = carry_start(pts, pushed - pts, keep)
                checks.append(Check(f"carry start {pose} {garment} keep {keep}",
                                    _err(X.gpu_carry_start(pts, pushed - pts, keep), ref), TOL_SURFACE, len(ref)))
    return checks


def edge_lift_plane_checks():
    """Analytic edge lift: an edge 5 cm long from 3 mm under a plane to 3 mm over it has samples at 1/3 and 2/3 (1 mm
    under, 1 mm over), which the push law asks to rise 2 mm and 0.5 mm (default parameters); the ends blend the
    asks ``share * lift`` (shares 1.2 and 0.6) with weights ``|ask|^2``. All three stages run on the GPU."""
    from ..fit.edge_lift import edge_samples, vertex_samples

    body = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], dtype=np.float64)
    normals = np.tile([0.0, 0.0, 1.0], (4, 1))
    faces = np.array([[0, 1, 2], [0, 2, 3]])
    x = np.array([[0.0, 0.0, -0.003], [0.05, 0.0, 0.003]])
    samples = edge_samples(x, [[0, 1]], spacing=0.02)
    pts = X.gpu_sample_point(x, np.zeros_like(x), samples)
    cand = np.array([[0, 1], [0, 1]])
    pushed = X.gpu_surface_push(pts, cand, body, normals, faces=faces, sample=True)[0]
    lift = X.gpu_edge_lift(pushed - pts, samples, vertex_samples(samples))

    def blend(*asks):
        asks = np.array(asks)
        return (asks ** 3).sum() / (asks ** 2).sum()

    want = np.zeros((2, 3))
    want[:, 2] = [blend(0.0024, 0.0003), blend(0.0012, 0.0006)]
    return [Check("edge lift plane (analytic) sample points", _err(pts, [[0.05 / 3, 0, -0.001], [0.1 / 3, 0, 0.001]]),
                  TOL_SURFACE, 2),
            Check("edge lift plane (analytic) lifts", _err(lift, want), TOL_SURFACE, 2)]


def unflip_analytic_checks():
    """Analytic unflip: three unit right triangles, each turned about its first edge by an angle whose cosine is
    0.0025, 0.04975 and -0.5 (the third corner moves, the first two stay), under turn starts 0, 0.005 and
    ``TURN_START`` (0.05). A face's weight is ``clip((start - c) / start, 0, 1)`` (start 0: 1 where c <= 0); each
    corner moves by ``w (d_mean - d_own) / max(w, 1)``; the moved flags are those of w > 0."""
    from ..fit.unflip import TURN_START, vertex_faces

    x, p, faces = [], [], []
    for i, c in enumerate((0.0025, 0.04975, -0.5)):
        o = np.array([3.0 * i, 0.0, 0.0])
        sn = np.sqrt(1 - c * c)
        x += [o, o + [1, 0, 0], o + [0, 1, 0]]
        p += [o, o + [1, 0, 0], o + [0, c, sn]]
        faces.append([3 * i, 3 * i + 1, 3 * i + 2])
    x, p, faces = np.array(x), np.array(p), np.array(faces)
    table = vertex_faces(faces, len(x))
    checks = []
    for start in (0.0, 0.005, TURN_START):
        want, flags = p.copy(), np.zeros(len(x), bool)
        for i, c in enumerate((0.0025, 0.04975, -0.5)):
            w = float(c <= 0) if start <= 0 else float(np.clip((start - c) / start, 0, 1))
            d = p[3 * i: 3 * i + 3] - x[3 * i: 3 * i + 3]
            want[3 * i: 3 * i + 3] += w * (d.mean(axis=0) - d) / max(w, 1.0)
            flags[3 * i: 3 * i + 3] = w > 0
        got, moved = X.gpu_unflip(p, x, faces, table, start)
        checks.append(Check(f"unflip three turned faces (analytic) start {start:g}",
                            _err(got, want) if np.array_equal(moved, flags) else np.inf, TOL_SURFACE, len(x)))
    return checks


def finish_step_checks(n: int = 4096, seed: int = 27):
    """The finish cap (``KisekaeClampStep``, :func:`kisekae.fit.surface.clamp_step`): random steps of 0-8 mm in random
    directions (and exact zeros) against budgets of 0-5 mm, over three chained rounds that each spend what the last
    left; analytic: a 5 mm step under a 2 mm budget becomes 2 mm along it with nothing left, a 1 mm step stays whole
    and leaves 1 mm."""
    from ..fit.surface import clamp_step

    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n, 3))
    d *= (rng.uniform(0.0, 0.008, n) / np.linalg.norm(d, axis=1))[:, None]
    d[: n // 16] = 0.0
    budget = rng.uniform(0.0, 0.005, n)
    budget[n // 16: n // 8] = 0.0
    checks = []
    gpu_budget = budget.astype(np.float32)
    for r in range(3):
        step = (d * (1.0 + 0.5 * r)).astype(np.float32)
        want = clamp_step(step.astype(np.float64), budget)  # spends ``budget`` in place
        got, gpu_budget = X.gpu_clamp_step(step, gpu_budget)
        checks.append(Check(f"finish cap, random steps, round {r + 1}", max(_err(got, want), _err(gpu_budget, budget)),
                            TOL_SURFACE, n))
    got, left = X.gpu_clamp_step([[0.0, 0.003, 0.004], [0.001, 0.0, 0.0]], [0.002, 0.002])
    want = np.array([[0.0, 0.0012, 0.0016], [0.001, 0.0, 0.0]])
    checks.append(Check("finish cap (analytic)", max(_err(got, want), _err(left, [0.0, 0.001])), TOL_SURFACE, 2))
    return checks


def edge_lift_avatar_checks(poses=SURFACE_POSES, garments=SURFACE_GARMENTS):
    """``KisekaeSamplePoint``, ``KisekaeSamplePush``, ``KisekaeEdgeLift`` and ``KisekaeUnflip`` against
    :mod:`kisekae.fit.edge_lift` and :mod:`kisekae.fit.unflip` on the built-in avatar: the garment's edge samples
    (candidates baked over :data:`SURFACE_BAKE_POSES` poses) on the skinned garment moved by a random displacement
    (about 1 cm, so that many samples are inside or in the margin), their pushes (ties left out as for the surface
    push), each vertex's gathered lift, and one unflip pass of the pushed garment jittered by about 1 cm (hundreds
    of faces turned)."""
    from ..fit.edge_lift import _choose_numpy, bake_sample_candidates, vertex_samples
    from ..fit.pushout import PushParams
    from ..fit.runtime import garment_samples
    from ..fit.surface import body_curvature, surface_push_numpy
    from ..fit.unflip import TURN_START, unflip_numpy, vertex_faces
    from ..geom.closest import closest_point_triangles_numpy

    checks = []
    av = _memo("surface avatar", _surface_avatar)
    for garment in garments:
        mesh = av.part(garment).mesh
        samples = _memo(("edge samples", garment), lambda: garment_samples(av, garment))
        cand = _memo(("sample candidates", garment),
                     lambda: bake_sample_candidates(av, garment, samples, n_poses=SURFACE_BAKE_POSES))
        table = vertex_samples(samples, mesh.weld)
        ftable = vertex_faces(mesh.faces, mesh.n_vertices, mesh.weld)
        for pose in poses:
            vec = surface_vectors(pose, garment)
            k = vec["n_skinned"]
            x = vec["points"][:k]
            rng = np.random.default_rng([7, zlib.crc32(f"{pose}/{garment}".encode())])
            d = rng.normal(0, 0.006, x.shape).astype(np.float32).astype(np.float64)
            tag = f"edge lift {pose} {garment}"
            ref_pts = samples.points(x + d)
            pts = X.gpu_sample_point(x, d, samples)
            checks.append(Check(f"{tag} sample points", _err(pts, ref_pts), TOL_SURFACE, len(samples)))
            pts = pts.astype(np.float64)
            body, normals, faces = vec["body"], vec["normals"], vec["faces"]
            corners = faces[cand.triangles]
            n, kk = cand.triangles.shape
            q, _, dist = closest_point_triangles_numpy(np.repeat(pts, kk, axis=0),
                                                       *(body[corners[:, :, c]].reshape(-1, 3) for c in range(3)))
            d_best, tie = _nearest_ties(q.reshape(n, kk, 3), dist.reshape(n, kk))
            params = PushParams(smooth_iterations=0)
            ok = ~tie & (np.abs(d_best - params.max_push) > SURFACE_TIE)
            ts, ss = samples.mask(vec["tightness"][:k]), samples.mask(vec["softness"][:k])
            ref, rpush, rs = surface_push_numpy(pts, cand, body, normals, faces, params, ts, ss, chord=samples.chord)
            kv = body_curvature(body, normals, faces)
            got, push, s = X.gpu_surface_push(pts, corners, body, normals, params, tightness=ts, softness=ss,
                                              chord=samples.chord, curvature=kv, sample=True)
            checks.append(Check(f"{tag} sample push positions ({int((rpush > 0).sum())} lifted)",
                                _err(got[ok], ref[ok]), TOL_SURFACE, int(ok.sum())))
            checks.append(Check(f"{tag} sample push clearance", _err(s[ok], rs[ok]), TOL_SURFACE, int(ok.sum())))
            lift = ref - pts
            want = _choose_numpy(lift, samples, table, len(x))[0]
            checks.append(Check(f"{tag} gather", _err(X.gpu_edge_lift(lift, samples, table), want), TOL_SURFACE,
                                len(want)))
            p = (x + d + rng.normal(0, 0.01, x.shape)).astype(np.float32).astype(np.float64)
            want, wmoved = unflip_numpy(p, x, mesh.faces, ftable)
            got, moved = X.gpu_unflip(p, x, mesh.faces, ftable, TURN_START)
            checks.append(Check(f"{tag} unflip ({int(wmoved.sum())} moved)", _err(got, want), TOL_SURFACE, len(want)))
            # flags may differ only where float32 puts a face's cosine on the other side of TURN_START
            checks.append(Check(f"{tag} unflip moved flags (share differing)", float(np.mean(moved != wmoved)),
                                TOL_FLAGS, len(want)))
    return checks


# ------------------------------------------------------------------------------------- correctives
#: Pose-space corrective offsets (m): float32 sums against float64.
TOL_CORRECTIVE = 1e-5
#: Pose-space corrective features (unitless): float32 angles near narrow centres (σ down to 0.08 rad) against float64.
TOL_FEATURE = 5e-5


def layer_push_checks(poses=SURFACE_POSES, inner: str = "tights", outer: str = "skirt"):
    """The layer push (:mod:`kisekae.fit.layer_push`) is ``KisekaeSurfacePush`` with the garment beneath in the
    body's place: the skinned skirt, and a copy jittered by about 5 mm, pushed out of the skinned tights (their
    welded vertex normals, the skirt's candidates on the tights baked over :data:`SURFACE_BAKE_POSES` poses, reach
    :data:`~kisekae.fit.layer_push.LAYER_REACH`, the skirt's parameters) against
    :func:`kisekae.fit.surface.surface_push_numpy` (ties and points at the reach left out)."""
    from ..avatar.poses import named_pose
    from ..fit.fix import params_for
    from ..fit.layer_push import LAYER_REACH, bake_layer_candidates, inner_normals
    from ..fit.surface import SurfaceCandidates, surface_push_numpy
    from ..geom.closest import closest_point_triangles_numpy

    av = _memo("surface avatar", _surface_avatar)
    cand = _memo(("layer candidates", outer, inner),
                 lambda: bake_layer_candidates(av, outer, inner, n_poses=SURFACE_BAKE_POSES))
    params = params_for(outer, None)
    faces = np.asarray(av.part(inner).mesh.faces)
    checks = []
    for pose in poses:
        m = named_pose(av.skeleton, pose).skinning_matrices(av.skeleton)
        lower = av.part(inner).posed(m).astype(np.float32).astype(np.float64)
        normals = inner_normals(lower, faces, av.part(inner).mesh.weld).astype(np.float32).astype(np.float64)
        rng = np.random.default_rng([9, zlib.crc32(f"{pose}/{outer}/{inner}".encode())])
        x = av.part(outer).posed(m).astype(np.float64)
        pts = np.concatenate([x, x + rng.normal(0, 0.005, x.shape)]).astype(np.float32).astype(np.float64)
        tri = np.concatenate([cand.triangles, cand.triangles])
        n, k = tri.shape
        corners = faces[tri]
        q, _, dist = closest_point_triangles_numpy(np.repeat(pts, k, axis=0),
                                                   *(lower[corners[:, :, c]].reshape(-1, 3) for c in range(3)))
        d_best, tie = _nearest_ties(q.reshape(n, k, 3), dist.reshape(n, k))
        ok = ~tie & (np.abs(d_best - LAYER_REACH) > SURFACE_TIE)
        ref, rpush, _ = surface_push_numpy(pts, SurfaceCandidates(tri, len(faces)), lower, normals, faces, params,
                                           reach=LAYER_REACH)
        got, push, _ = X.gpu_surface_push(pts, corners, lower, normals, params, reach=LAYER_REACH)
        label = f"layer push {pose} {outer} over {inner} ({int((rpush[ok] > 0).sum())} pushed)"
        checks.append(Check(label + " positions", _err(got[ok], ref[ok]), TOL_SURFACE, int(ok.sum())))
        checks.append(Check(label + " push length", _err(push[ok], rpush[ok]), TOL_SURFACE, int(ok.sum())))
    return checks


def corrective_analytic_checks():
    """Analytic features: a joint turned 60° about x against centres 30°, 90° and 150° about x and one 60° about y
    (30°, 30°, 90° and 2 acos(cos² 30°) = 82.8° apart), width 0.5 rad, from ``exp(-(θ/σ)²)`` with the angles written
    down, not computed from the quaternions; then a vertex with no entry and one with two, whose offset is the
    features' weighted sum."""
    from scipy.spatial.transform import Rotation

    from ..avatar.correctives import PoseCorrectives

    def quat(axis, deg):
        return Rotation.from_rotvec(np.radians(deg) * np.asarray(axis, float)).as_quat()

    q = quat((1, 0, 0), 60.0)
    centres = np.array([[quat((1, 0, 0), 30.0), quat((1, 0, 0), 90.0), quat((1, 0, 0), 150.0),
                         quat((0, 1, 0), 60.0)]])
    sigma = 0.5
    # angle between 60° about x and 60° about y: cos(θ/2) = cos²30° (the quaternions' dot product)
    apart = np.radians([30.0, 30.0, 90.0]).tolist() + [2.0 * np.arccos(np.cos(np.radians(30.0)) ** 2)]
    to_rest = np.radians([30.0, 90.0, 150.0, 60.0])
    g = lambda a: np.exp(-(np.asarray(a) / sigma) ** 2)  # noqa: E731
    want = g(apart) - g(np.radians(60.0)) * g(to_rest)
    got = X.gpu_corrective_features(q[None], centres, np.array([sigma]))[0]
    checks = [Check("corrective features (analytic)", _err(got, want), TOL_FEATURE, 4)]
    # nearly opposite quaternions (dot 0.005, 179.4° apart): the side chosen for the centre decides the angle;
    # a wide basis (3 rad) so that the feature still depends on it
    alpha, phi, wide = 0.2, 2.0 * np.arccos(0.005), 3.0
    far_q, far_c = quat((1, 0, 0), np.degrees(alpha + phi)), quat((1, 0, 0), np.degrees(alpha))
    g3 = lambda a: np.exp(-(a / wide) ** 2)  # noqa: E731
    want_far = g3(phi) - g3(2.0 * np.pi - alpha - phi) * g3(alpha)
    got_far = X.gpu_corrective_features(far_q[None], far_c[None, None], np.array([wide]))[0, 0]
    checks.append(Check("corrective feature 179.4° apart (analytic)", abs(float(got_far) - want_far), TOL_FEATURE, 1))
    coef = np.zeros((2, 4, 3), np.float32)
    coef[0, :, 0] = (0.01, 0.02, 0.03, 0.04)
    coef[1, :, 2] = (-0.01, 0.0, 0.05, 0.0)
    feats = np.array([want, [0.5, -0.25, 0.125, 1.0]])
    c = PoseCorrectives(np.array([0, 1]), np.concatenate([centres, centres]), np.array([sigma, sigma]),
                        np.array([0, 0, 2]), np.array([0, 1], np.int32), coef, ["a", "b"], "", {})
    ref = np.array([[0.0, 0.0, 0.0], [float(want @ coef[0, :, 0]), 0.0, float(feats[1] @ coef[1, :, 2])]])
    checks.append(Check("corrective offset (analytic)", _err(X.gpu_corrective_offsets(c, feats), ref),
                        TOL_CORRECTIVE, 2))
    return checks


def corrective_avatar_checks(poses=SURFACE_POSES):
    """``KisekaeCorrectiveFeature`` and ``KisekaeCorrectiveOffset`` against :mod:`kisekae.avatar.correctives` with
    the packaged bakes of the built-in body and of its tights (:mod:`kisekae.fit.garment_correctives`: the same
    functions on a garment's buffers), in ``poses``."""
    from ..avatar.builtin import load_builtin_avatar
    from ..avatar.correctives import builtin_correctives_path, load_correctives
    from ..fit.garment_correctives import packaged_garment_path

    av = load_builtin_avatar()
    body = _memo(("correctives", "body"), lambda: load_correctives(builtin_correctives_path("game_engine")))
    tights = _memo(("correctives", "tights"),
                   lambda: load_correctives(str(packaged_garment_path("game_engine", "tights"))))
    return (_corrective_bake_checks(av, body, "", poses) + _corrective_bake_checks(av, tights, "tights ", poses)
            + _skinned_offset_checks(av, tights, "tights", poses))


def _skinned_offset_checks(av, c, garment: str, poses) -> list:
    """``KisekaeSkinnedOffset`` (the garment correctives' start, carried by the blended skinning rotation) against
    :func:`kisekae.avatar.correctives.skinned_offsets` for the garment's offsets in ``poses``."""
    from ..avatar.correctives import BodyCorrectives, skinned_offsets
    from ..avatar.poses import named_pose

    skin = av.part(garment).skin
    checks = []
    for name in poses:
        m = named_pose(av.skeleton, name).skinning_matrices(av.skeleton)
        d = BodyCorrectives(c, av.skeleton, skin).rest_offsets(m).astype(np.float32).astype(np.float64)
        want = skinned_offsets(skin, m.astype(np.float32).astype(np.float64), d)
        got = X.gpu_skinned_offsets(d, skin.indices, skin.weights, m)
        checks.append(Check(f"{garment} skinned corrective offsets {name} ({int((np.abs(want).max(1) > 1e-3).sum())} "
                            "over 1 mm)", _err(got, want), TOL_CORRECTIVE, len(want)))
    return checks


def _corrective_bake_checks(av, c, label: str, poses) -> list:
    """The checks of :func:`corrective_avatar_checks` for one bake ``c``; ``label`` prefixes their names."""
    from ..avatar.correctives import corrective_offsets_numpy, joint_features, joint_quaternions
    from ..avatar.poses import named_pose

    checks = []
    for name in poses:
        m = named_pose(av.skeleton, name).skinning_matrices(av.skeleton)
        q = joint_quaternions(av.skeleton, m)[c.joints]
        want = joint_features(q.astype(np.float32).astype(np.float64), c.centres, c.sigma)
        got = X.gpu_corrective_features(q, c.centres, c.sigma)
        checks.append(Check(f"{label}corrective features {name}", _err(got, want), TOL_FEATURE, want.size))
        f32 = want.astype(np.float32).astype(np.float64)
        ref = corrective_offsets_numpy(c, f32)
        checks.append(Check(f"{label}corrective offsets {name} ({int((np.abs(ref).max(1) > 1e-3).sum())} over 1 mm)",
                            _err(X.gpu_corrective_offsets(c, f32), ref), TOL_CORRECTIVE, len(ref)))
        # the whole frame on the GPU (its own features) against the float64 reference of the pose
        full = corrective_offsets_numpy(c, joint_features(joint_quaternions(av.skeleton, m)[c.joints], c.centres,
                                                          c.sigma))
        checks.append(Check(f"{label}corrective frame {name}", _err(X.gpu_corrective_offsets(c, got), full),
                            TOL_CORRECTIVE, len(full)))
    return checks


def body_follow_checks(poses=SURFACE_POSES, garments=("tights", "skirt")):
    """``KisekaeBodyFollow`` (``kisekae_bound.hlsl``) against :func:`kisekae.fit.body_follow.body_follow_numpy`: an
    analytic case (out along the normal is taken, in and sideways are not), then the built-in avatar's garments on the
    default body (packaged correctives, joint planes) in ``poses``."""
    from ..avatar.builtin import load_builtin_avatar
    from ..avatar.contact import GAP, apply_contact
    from ..avatar.poses import named_pose
    from ..fit.body_follow import body_follow_numpy
    from ..fit.runtime import garment_follow
    from ..geom.normals import vertex_normals

    z = np.tile([0.0, 0.0, 1.0], (3, 1))
    corners = np.array([[0, 1, 2]] * 4)
    bary = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [0.2, 0.3, 0.5]])
    skinned = np.zeros((3, 3))
    body = np.array([[0.01, 0.02, 0.03], [0.0, 0.0, -0.02], [0.05, 0.0, 0.0]])  # out and sideways, in, sideways
    want = np.array([[0, 0, 0.03], [0, 0, 0], [0, 0, 0], [0, 0, 0.006]]) * 0.5
    got = X.gpu_body_follow(corners, bary, np.full(4, 0.5), body, skinned, z)
    checks = [Check("body follow (analytic)", _err(got, want), TOL_CORRECTIVE, 4)]
    av = _memo(("follow", "avatar"), lambda: apply_contact(load_builtin_avatar(), GAP))
    faces = av.body.mesh.faces
    for name in poses:
        m = named_pose(av.skeleton, name).skinning_matrices(av.skeleton)
        body = av.body.posed(m).astype(np.float64)
        skinned = av.body.skinned(m).astype(np.float64)
        normals = vertex_normals(body, faces).astype(np.float64)
        for g in garments:
            c, b, share = garment_follow(av, g)
            want = body_follow_numpy(c, b, share, body, skinned, normals)
            got = X.gpu_body_follow(c, b, share, body, skinned, normals)
            checks.append(Check(f"{g} body follow {name} ({int((np.abs(want).max(1) > 1e-3).sum())} over 1 mm)",
                                _err(got, want), TOL_CORRECTIVE, len(want)))
    return checks


def corrective_checks(poses=SURFACE_POSES):
    """The body's pose-space correctives (``kisekae_corrective.hlsl``): analytic cases, then the packaged bake."""
    return corrective_analytic_checks() + corrective_avatar_checks(poses)


def _two_sheets(n: int = 24, spacing: float = 0.01, gap: float = 0.002):
    """An inner and an outer sheet (one mesh, the inner's winding flipped so both sides are read) over a body plane
    10 mm below: (vertices, faces, body vertices, body normals, inner vertex count)."""
    xs = (np.arange(n) - (n - 1) / 2) * spacing
    grid = np.array([[x, y, 0.0] for y in xs for x in xs])
    quads = np.array([[r * n + c, r * n + c + 1, (r + 1) * n + c + 1, (r + 1) * n + c]
                      for r in range(n - 1) for c in range(n - 1)])
    tri = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    v = np.concatenate([grid, grid + [0.0, 0.0, gap]])
    f = np.concatenate([tri[:, ::-1], tri + len(grid)])
    body = np.array([[-1, -1, -0.01], [1, -1, -0.01], [1, 1, -0.01], [-1, 1, -0.01]], dtype=np.float64)
    return v, f, body, np.tile([0.0, 0.0, 1.0], (4, 1)), len(grid)


def self_layer_checks(seeds=(0, 1, 2)):
    """``KisekaeSelfLayerPush`` (``kisekae_self_layers.hlsl``) against
    :func:`kisekae.fit.self_layers.self_layer_push_numpy`: two sheets 2 mm apart (the inner one wound the other way),
    crumpled by 2 mm and with the inner sheet lifted through the outer one in places, and the analytic cases of the
    inner sheet lifted 4 mm (the outer one ends 2 mm above it) and 6 mm (past the fade); the moved flags may differ only where float32 puts a
    move at the rounding tolerance."""
    from ..fit.self_layers import bake_self_layers, self_layer_push_numpy

    v, f, body, normals, n_inner = _two_sheets()
    layers = bake_self_layers(v, f, body, normals)
    checks = []
    for lift, outer in ((0.004, 0.006), (0.006, 0.0068)):  # the second past the fade: 6 mm needed, 80 % taken
        lifted = v.copy()
        lifted[:n_inner, 2] += lift
        got, moved = X.gpu_self_layer_push(lifted, v, layers, f)
        want = lifted.copy()
        want[n_inner:, 2] = outer
        checks.append(Check(f"self layers, inner sheet lifted {lift * 1e3:.0f} mm (analytic)",
                            max(_err(got, want), float(np.mean(moved[n_inner:] != 1))), TOL_SURFACE, len(v)))
    for seed in seeds:
        rng = np.random.default_rng([31, seed])
        p = v + rng.normal(0, 0.002, v.shape)
        p[:n_inner, 2] += rng.uniform(0, 0.004, n_inner)
        p = p.astype(np.float32).astype(np.float64)
        want, wmoved = self_layer_push_numpy(p, layers, f)
        got, moved = X.gpu_self_layer_push(p, v, layers, f)
        checks.append(Check(f"self layers, crumpled sheets {seed} ({int(wmoved.sum())} moved)", _err(got, want),
                            TOL_SURFACE, len(v)))
        checks.append(Check(f"self layers, crumpled sheets {seed} moved flags (share differing)",
                            float(np.mean(moved != wmoved)), TOL_FLAGS, len(v)))
    return checks


def surface_checks(poses=SURFACE_POSES, garments=SURFACE_GARMENTS):
    """The surface push, its smoothing, the edge lift and the unflip (``kisekae_surface.hlsl``): analytic cases, then
    the built-in avatar."""
    return (surface_sheet_checks() + smooth_strip_checks() + stretch_pair_checks() + surface_chord_checks()
            + surface_depth_bound_checks() + guarded_normal_checks() + edge_lift_plane_checks()
            + unflip_analytic_checks() + finish_step_checks()
            + surface_avatar_checks(poses, garments)
            + edge_lift_avatar_checks(poses, garments) + layer_push_checks(poses))


def run_checks(sources=("constants",), poses=POSES, core_dir=None):
    """Run every conformance check; returns a list of :class:`Check` (see the module table)."""
    with X.using_core(core_dir):
        checks = []
        for src in sources:
            checks += [Check(f"[{src}] " + c.name, c.error, c.tolerance, c.count) for c in capsule_checks(src, poses)]
            checks += [Check(f"[{src}] " + c.name, c.error, c.tolerance, c.count) for c in wound_checks(src)]
        checks += pushout_checks(sources[0], poses)
        checks += bound_checks(poses, sources[0])
        checks += body_follow_checks()
        checks += tension_checks(poses)
        checks += wrinkle_checks()
        checks += tight_look_checks()
        checks += wound_decode_checks()
        checks += contact_checks(poses)
        checks += part_contact_checks()
        checks += corrective_checks()
        checks += surface_checks()
        checks += self_layer_checks()
    return checks

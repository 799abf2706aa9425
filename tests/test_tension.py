"""Edge-mean tension (cgvirus node group) against an independent float64 reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.tension import (
    TensionPlan,
    empty_result,
    map_params,
    map_range_smoothstep,
    map_ratio,
    safe_divide,
    smax,
    smin,
    tension_map,
    tension_map_numpy,
)
from kisekae.geom.weld import weld_map

# ---------------------------------------------------------------------------------------------
# Independent reference, written straight from the formulas in float64 Python.
# ---------------------------------------------------------------------------------------------


def ref_smin(x, y, k):
    if k == 0:
        return min(x, y)
    h = max(k - abs(x - y), 0.0) / k
    return min(x, y) - h**3 * k / 6.0


def ref_smax(x, y, k):
    return -ref_smin(-x, -y, k)


def ref_smoothstep(e0, e1, x):
    if e1 == e0:
        t = 0.0  # Blender's safe_divide
    else:
        t = (x - e0) / (e1 - e0)
    t = min(max(t, 0.0), 1.0)
    return (3 - 2 * t) * t * t


def ref_tension(rest, deformed, polys, F=1.0, S=1.0, C=1.0, W=1.0, weld=True):
    rest = [tuple(map(float, p)) for p in rest]
    deformed = [tuple(map(float, p)) for p in deformed]
    n = len(rest)
    rep = list(range(n))
    if weld:
        first = {}
        for i, p in enumerate(rest):
            rep[i] = first.setdefault(p, i)
    edges = set()
    for poly in polys:
        k = len(poly)
        for c in range(k):
            i, j = rep[int(poly[c])], rep[int(poly[(c + 1) % k])]
            if i != j:
                edges.add((min(i, j), max(i, j)))
    nbrs = {i: [] for i in range(n)}
    for i, j in edges:
        nbrs[i].append(j)
        nbrs[j].append(i)

    def mean_len(pos, i):
        if not nbrs[i]:
            return 0.0
        return sum(math.dist(pos[i], pos[j]) for j in nbrs[i]) / len(nbrs[i])

    # Blender holds node outputs in float32: b = 1 + 1/(6 C^3) is exactly 1 there for C > 140.9
    a = float(np.float32(ref_smin(S, 1.0, 1.0)))
    b = float(np.float32(ref_smax(1.0 / max(C, 0.001), 1.0, 1.0)))
    w = min(max(W, 0.0), 1.0)
    out = []
    for v in range(n):
        r = rep[v]
        lr, ld = mean_len(rest, r), mean_len(deformed, r)
        T = lr / ld if ld != 0 else 0.0
        st = min(max(F * (1 - ref_smoothstep(a, 1.0, T)), 0.0), 1.0) * w
        # the node group's compress chain: Map Range From Min b, From Max 1, To Min 1 - F, To Max 1, then 1 - x
        co = min(max(F * (1 - ref_smoothstep(b, 1.0, T)), 0.0), 1.0) * w
        out.append((T, co, st))
    return np.array(out)


# ---------------------------------------------------------------------------------------------
# Meshes
# ---------------------------------------------------------------------------------------------


def grid(nx, ny, h=0.01):
    xs, ys = np.meshgrid(np.arange(nx) * h, np.arange(ny) * h)
    pts = np.c_[xs.ravel(), ys.ravel(), np.zeros(nx * ny)].astype(np.float32)
    idx = np.arange(nx * ny).reshape(ny, nx)
    quads = np.c_[idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, 1:].ravel(), idx[1:, :-1].ravel()]
    tris = np.r_[quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]]
    return pts, quads.astype(np.int32), tris.astype(np.int32)


def bent_cylinder(n_around=12, n_rings=10, radius=0.05, height=0.3, angle=1.0):
    """A cylinder bent about the z axis at its middle (compressed inside, stretched outside)."""
    th = np.linspace(0, 2 * np.pi, n_around, endpoint=False)
    z = np.linspace(0, height, n_rings)
    T, Z = np.meshgrid(th, z)
    rest = np.c_[radius * np.cos(T).ravel(), radius * np.sin(T).ravel(), Z.ravel()].astype(np.float32)
    quads = []
    for r in range(n_rings - 1):
        for c in range(n_around):
            a, b = r * n_around + c, r * n_around + (c + 1) % n_around
            quads.append([a, b, b + n_around, a + n_around])
    quads = np.array(quads, np.int32)
    # bend: rotate points above the middle about the y axis through (0, 0, h/2), blended over z
    zc = height / 2
    s = np.clip((rest[:, 2] - zc) / (height / 2), 0, 1) * angle
    x, zz = rest[:, 0].astype(np.float64), rest[:, 2].astype(np.float64) - zc
    xr = x * np.cos(s) + np.maximum(zz, 0) * np.sin(s)
    zr = -x * np.sin(s) + np.maximum(zz, 0) * np.cos(s) + np.minimum(zz, 0)
    deformed = np.c_[xr, rest[:, 1], zr + zc].astype(np.float32)
    return rest, deformed, quads


PARAMS = [
    dict(falloff=1.0, stretch_area=1.0, compress_area=1.0, weight_limit=1.0),
    dict(falloff=2.5, stretch_area=0.6, compress_area=0.4, weight_limit=0.7),
    dict(falloff=0.8, stretch_area=1.7, compress_area=3.0, weight_limit=1.3),
    dict(falloff=1.0, stretch_area=2.5, compress_area=0.0, weight_limit=1.0),  # a = 1, b = 1000
]


def _as_ref_kwargs(p):
    return dict(F=p["falloff"], S=p["stretch_area"], C=p["compress_area"], W=p["weight_limit"])


# ---------------------------------------------------------------------------------------------
# Blender node semantics
# ---------------------------------------------------------------------------------------------


def test_smin_smax_match_formula_and_k0():
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-2, 3, 200), rng.uniform(-2, 3, 200)
    for k in (1.0, 0.3, 2.0):
        want = np.array([ref_smin(a, b, k) for a, b in zip(x, y)])
        np.testing.assert_allclose(smin(x, y, k), want, atol=2e-6)
        want = np.array([ref_smax(a, b, k) for a, b in zip(x, y)])
        np.testing.assert_allclose(smax(x, y, k), want, atol=2e-6)
    np.testing.assert_array_equal(smin(x, y, 0.0), np.minimum(x, y).astype(np.float32))
    np.testing.assert_array_equal(smax(x, y, 0.0), np.maximum(x, y).astype(np.float32))
    assert smin(1.0, 1.0, 1.0) == np.float32(1.0 - 1.0 / 6.0)


def test_map_range_smoothstep_and_safe_divide_degenerate():
    x = np.array([-1.0, 0.0, 0.25, 0.5, 1.0, 2.0])
    np.testing.assert_allclose(map_range_smoothstep(x, 0.0, 1.0), [0, 0, 0.15625, 0.5, 1, 1], atol=1e-7)
    # reversed range
    np.testing.assert_allclose(map_range_smoothstep(0.25, 1.0, 0.0), 0.84375, atol=1e-7)
    # e0 == e1: Blender's Geometry Nodes factor is safe_divide(...) = 0 for every x
    np.testing.assert_array_equal(map_range_smoothstep(x, 0.5, 0.5), np.zeros(6, np.float32))
    np.testing.assert_array_equal(safe_divide([1.0, 0.0, -2.0], [0.0, 0.0, 4.0]), [0.0, 0.0, -0.5])


def test_map_params_degenerate_cases():
    assert map_params(stretch_area=2.0).a == 1.0
    assert map_params(stretch_area=5.0).a == 1.0
    assert map_params(compress_area=0.0).b == pytest.approx(1000.0)
    assert map_params(compress_area=-3.0).b == pytest.approx(1000.0)
    assert map_params(compress_area=1e4).b == 1.0  # rounds to 1 in float32: ramp collapses
    assert map_params(weight_limit=4.0).weight == 1.0
    assert map_params(weight_limit=-1.0).weight == 0.0
    with pytest.raises(KisekaeError, match="falloff"):
        map_params(falloff=float("nan"))
    with pytest.raises(KisekaeError, match="compress_area"):
        map_params(compress_area="wide")


def test_map_ratio_matches_reference():
    T = np.linspace(0.5, 1.6, 301).astype(np.float32)  # the same float32 inputs Blender sees
    for p in PARAMS:
        m = map_ratio(T, **p)
        kw = _as_ref_kwargs(p)
        a = ref_smin(kw["S"], 1, 1)
        b = ref_smax(1 / max(kw["C"], 0.001), 1, 1)
        w = min(max(kw["W"], 0), 1)
        st = [min(max(kw["F"] * (1 - ref_smoothstep(a, 1, t)), 0), 1) * w for t in T.tolist()]
        co = [min(max(kw["F"] * ref_smoothstep(1, b, t), 0), 1) * w for t in T.tolist()]
        np.testing.assert_allclose(m.stretch, st, atol=1e-5)
        np.testing.assert_allclose(m.compress, co, atol=1e-5)
        np.testing.assert_array_equal(m.color[:, 0], m.compress)
        np.testing.assert_array_equal(m.color[:, 1], m.stretch)
        assert not m.color[:, 2].any()


# ---------------------------------------------------------------------------------------------
# tension_map
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", PARAMS)
def test_bent_cylinder_matches_reference(p):
    rest, deformed, quads = bent_cylinder()
    want = ref_tension(rest, deformed, quads, **_as_ref_kwargs(p))
    got = tension_map(rest, deformed, quads, **p)
    assert got.ratio.dtype == np.float32 and got.color.shape == (len(rest), 3)
    np.testing.assert_allclose(got.ratio, want[:, 0], rtol=2e-6)
    np.testing.assert_allclose(got.compress, want[:, 1], atol=1e-5)
    np.testing.assert_allclose(got.stretch, want[:, 2], atol=1e-5)
    # the bend really produces both compression and stretch
    if p is PARAMS[0]:
        assert got.compress.max() > 0.5 and got.stretch.max() > 0.5


def test_random_triangle_mesh_matches_reference_and_numpy():
    rng = np.random.default_rng(7)
    rest, _, tris = grid(9, 7)
    rest = rest + rng.normal(0, 0.002, rest.shape).astype(np.float32)
    deformed = (rest * rng.uniform(0.85, 1.2, (len(rest), 1)) + rng.normal(0, 0.001, rest.shape)).astype(np.float32)
    for p in PARAMS:
        want = ref_tension(rest, deformed, tris, **_as_ref_kwargs(p))
        got = tension_map(rest, deformed, tris, **p)
        ref = tension_map_numpy(rest, deformed, tris, **p)
        np.testing.assert_allclose(got.ratio, want[:, 0], rtol=2e-6)
        np.testing.assert_allclose(got.compress, want[:, 1], atol=1e-5)
        np.testing.assert_allclose(got.stretch, want[:, 2], atol=1e-5)
        # float32 sums in a different order (bincount adds in float64): ratio to a few ulps
        np.testing.assert_allclose(got.ratio, ref.ratio, rtol=1e-6)
        for field in ("compress", "stretch", "color"):
            np.testing.assert_allclose(getattr(got, field), getattr(ref, field), atol=1e-5)


def test_uniform_scale_analytic():
    rest, quads, tris = grid(6, 5)
    for faces in (quads, tris):
        up = tension_map(rest, rest * 1.2, faces)
        np.testing.assert_allclose(up.ratio, 1 / 1.2, rtol=1e-6)
        np.testing.assert_allclose(up.stretch, 1.0, atol=1e-5)
        np.testing.assert_allclose(up.compress, 0.0, atol=1e-7)
        down = tension_map(rest, rest * 0.857, faces)
        np.testing.assert_allclose(down.ratio, 1 / 0.857, rtol=1e-6)
        np.testing.assert_allclose(down.compress, 1.0, atol=1e-3)
        np.testing.assert_allclose(down.stretch, 0.0, atol=1e-7)
        same = tension_map(rest, rest + np.float32(3.0), faces)  # translation: nothing happens
        np.testing.assert_allclose(same.color, 0.0, atol=1e-5)


def test_area_preserving_shear_reads_zero_in_edge_mode():
    rest, quads, _ = grid(8, 8)
    deformed = rest * np.array([1.1, 0.9, 1.0], np.float32)
    r = tension_map(rest, deformed, quads)
    interior = np.zeros((8, 8), bool)
    interior[1:-1, 1:-1] = True
    interior = interior.ravel()
    np.testing.assert_allclose(r.ratio[interior], 1.0, atol=1e-6)
    np.testing.assert_allclose(r.compress[interior], 0.0, atol=1e-5)
    np.testing.assert_allclose(r.stretch[interior], 0.0, atol=1e-5)


def test_quads_have_no_diagonal_edges():
    rest, quads, tris = grid(4, 4)
    pq, pt = TensionPlan(rest, quads), TensionPlan(rest, tris)
    assert len(pq.edges) == 24 and len(pt.edges) == 33
    assert pq.counts[5] == 4 and pt.counts[5] == 6


def test_degenerate_isolated_and_collapsed_vertices():
    rest, quads, _ = grid(3, 3)
    rest = np.vstack([rest, [[5.0, 5.0, 5.0]]]).astype(np.float32)  # vertex 9 is isolated
    deformed = rest.copy()
    deformed[:9] = deformed[4]  # every edge collapses to length 0
    r = tension_map(rest, deformed, quads)
    # Blender: mean of no edges is 0 and Divide by 0 gives 0, so T = 0 -> fully "stretched"
    assert r.ratio[9] == 0 and r.stretch[9] == 1 and r.compress[9] == 0
    np.testing.assert_array_equal(r.ratio[:9], 0.0)
    np.testing.assert_array_equal(r.stretch[:9], 1.0)
    want = ref_tension(rest, deformed, quads)
    np.testing.assert_allclose(r.ratio, want[:, 0])
    np.testing.assert_allclose(r.stretch, want[:, 2])


def test_stretch_area_two_or_more_and_large_compress_area():
    rest, quads, _ = grid(5, 5)
    deformed = rest * np.float32(0.9)  # compressed everywhere
    r = tension_map(rest, deformed, quads, stretch_area=2.0, falloff=0.6)
    np.testing.assert_allclose(r.stretch, 0.6, atol=1e-7)  # a == 1: Map Range returns To Min everywhere
    r = tension_map(rest, deformed, quads, compress_area=0.0)
    assert r.compress.max() < 1e-5  # b = 1000


@pytest.mark.parametrize("kernel", [tension_map, tension_map_numpy])
def test_large_compress_area_gives_falloff_times_weight_everywhere(kernel):
    """Blender: above C = 140.9, b = 1 + 1/(6 C^3) rounds to 1, the compress Map Range (From Min b,
    From Max 1) collapses to To Min and compress = F * W' at every vertex, stretched or not."""
    rest, quads, _ = grid(5, 5)
    rng = np.random.default_rng(7)
    deformed = (rest * np.float32(1.05) + rng.normal(0, 0.0005, rest.shape)).astype(np.float32)  # mostly stretched
    for c in (142.0, 1e4, 1e30):
        assert map_params(compress_area=c).b == 1.0
        r = kernel(rest, deformed, quads, compress_area=c, falloff=0.6, weight_limit=0.5)
        np.testing.assert_array_equal(r.compress, np.float32(0.6) * np.float32(0.5))
        np.testing.assert_array_equal(r.color[:, 0], r.compress)
        want = ref_tension(rest, deformed, quads, F=0.6, C=c, W=0.5)
        np.testing.assert_allclose(r.compress, want[:, 1], atol=1e-7)
    # just below the threshold b > 1 in float32 and the ramp is live: unstretched vertices read 0
    assert map_params(compress_area=140.0).b > 1.0
    r = kernel(rest, rest * np.float32(1.05), quads, compress_area=140.0)
    np.testing.assert_array_equal(r.compress, 0.0)


def test_weld_across_seam_gives_continuous_tension():
    rest, quads, _ = grid(6, 5)
    rng = np.random.default_rng(3)
    deformed = (rest + rng.normal(0, 0.002, rest.shape)).astype(np.float32)
    # split the mesh along column x == 2: faces right of it use duplicated vertices
    col = np.flatnonzero(np.isclose(rest[:, 0], 0.02))
    dup = np.arange(len(rest), len(rest) + len(col))
    remap = np.arange(len(rest))
    remap[col] = dup
    right = rest[quads].mean(axis=1)[:, 0] > 0.02
    split_quads = quads.copy()
    split_quads[right] = remap[quads[right]]
    rest2 = np.vstack([rest, rest[col]])
    def2 = np.vstack([deformed, deformed[col]])
    whole = tension_map(rest, deformed, quads)
    welded = tension_map(rest2, def2, split_quads)
    np.testing.assert_array_equal(welded.ratio[: len(rest)], whole.ratio)
    np.testing.assert_array_equal(welded.ratio[dup], whole.ratio[col])
    np.testing.assert_array_equal(welded.color[dup], whole.color[col])
    apart = tension_map(rest2, def2, split_quads, weld=False)
    assert np.abs(apart.ratio[col] - whole.ratio[col]).max() > 1e-3
    # weld=False is Blender's reading of a really split mesh: each side keeps only its own edges
    blender = ref_tension(rest2, def2, split_quads, weld=False)
    np.testing.assert_allclose(apart.ratio, blender[:, 0], rtol=1e-5)
    np.testing.assert_allclose(apart.stretch, blender[:, 2], atol=1e-5)
    # an explicit weld map gives the same answer
    explicit = tension_map(rest2, def2, split_quads, weld=weld_map(rest2))
    np.testing.assert_array_equal(explicit.ratio, welded.ratio)
    numpy_ref = tension_map_numpy(rest2, def2, split_quads)
    np.testing.assert_allclose(numpy_ref.ratio, welded.ratio, rtol=1e-6)


def test_plan_reuse_out_buffers_and_params():
    rest, deformed, quads = bent_cylinder()
    plan = TensionPlan(rest, quads)
    out = empty_result(len(rest))
    r1 = plan.evaluate(deformed, out)
    assert r1.ratio is out.ratio
    r2 = plan.evaluate(rest)
    np.testing.assert_allclose(r2.ratio, 1.0, rtol=1e-6)
    plan.set_params(falloff=2.0, weight_limit=0.5)
    r3 = plan.evaluate(deformed)
    want = ref_tension(rest, deformed, quads, F=2.0, W=0.5)
    np.testing.assert_allclose(r3.compress, want[:, 1], atol=1e-5)
    np.testing.assert_allclose(plan.evaluate(deformed.astype(np.float64)).color, r3.color)
    with pytest.raises(KisekaeError, match="out"):
        plan.evaluate(deformed, empty_result(3))


def test_explicit_edges():
    rest, quads, _ = grid(4, 3)
    plan = TensionPlan(rest, quads)
    r = tension_map(rest, rest * 1.3, edges=plan.edges)
    np.testing.assert_allclose(r.ratio, 1 / 1.3, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


def test_errors_are_clear():
    rest, quads, tris = grid(4, 4)
    with pytest.raises(KisekaeError, match=r"deformed.*15 vertices but rest has 16"):
        tension_map(rest, rest[:15], quads)
    bad = rest.copy()
    bad[3, 1] = np.nan
    with pytest.raises(KisekaeError, match=r"deformed.*non-finite.*row 3"):
        tension_map(rest, bad, quads)
    with pytest.raises(KisekaeError, match=r"rest.*non-finite"):
        tension_map(bad, rest, quads)
    with pytest.raises(KisekaeError, match=r"faces.*out of range"):
        tension_map(rest, rest, quads + 1)
    with pytest.raises(KisekaeError, match=r"faces.*out of range"):
        tension_map(rest, rest, tris - 1)
    with pytest.raises(KisekaeError, match=r"faces.*\(F, 3\)"):
        tension_map(rest, rest, np.zeros((2, 5), np.int32))
    with pytest.raises(KisekaeError, match="faces or edges"):
        tension_map(rest, rest)
    with pytest.raises(KisekaeError, match="stretch_area"):
        tension_map(rest, rest, quads, stretch_area=float("inf"))
    plan = TensionPlan(rest, quads)
    inf = rest.copy()
    inf[7, 2] = np.inf
    with pytest.raises(KisekaeError, match=r"deformed.*non-finite.*row 7"):
        plan.evaluate(inf)  # fast path (float32, contiguous)
    with pytest.raises(KisekaeError, match=r"deformed.*12 vertices"):
        plan.evaluate(rest[:12])
    with pytest.raises(KisekaeError, match="weld"):
        TensionPlan(rest, quads, weld=np.full(16, 99))


def test_tension_map_caches_its_plan_per_rest_mesh():
    from kisekae.tension import cached_plan, clear_plan_cache

    clear_plan_cache()
    rest, quads, _ = grid(6, 6)
    deformed = (rest * np.float32(0.95)).astype(np.float32)
    p1 = cached_plan(rest, quads)
    assert cached_plan(rest.copy(), quads.copy()) is p1  # same contents, same plan
    assert cached_plan(rest, quads, weld=False) is not p1
    assert cached_plan(rest, quads[:, [0, 1, 2]]) is not p1
    # the one-call API uses the cache and its own parameters every call (the shared plan is not changed)
    a = tension_map(rest, deformed, quads, falloff=0.5)
    b = tension_map(rest, deformed, quads)
    np.testing.assert_allclose(b.compress, 2 * a.compress, atol=1e-7)
    np.testing.assert_array_equal(b.compress, TensionPlan(rest, quads).evaluate(deformed).compress)
    assert cached_plan(rest, quads).params == map_params()
    # editing the rest array in place is noticed (the key is a digest of the contents)
    rest2 = rest.copy()
    before = tension_map(rest2, deformed, quads)
    rest2 *= np.float32(0.95)
    after = tension_map(rest2, deformed, quads)
    np.testing.assert_allclose(after.ratio, 1.0, atol=1e-6)
    assert not np.allclose(before.ratio, 1.0)

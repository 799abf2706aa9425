"""The exact-skin push-out, layers, the Shrinkwrap baseline and the fix command line."""

import json

import numpy as np
import pytest

from conftest import icosphere
from kisekae.avatar.poses import named_pose
from kisekae.errors import KisekaeError
from kisekae.fit import PushParams
from kisekae.fit.exact import march_out, push_out_exact
from kisekae.fit.fix import fix_pose
from kisekae.fit.layers import LayerSurface, draw_order, push_out_layers
from kisekae.fit.shrinkwrap import shrinkwrap
from kisekae.qa import BodyQuery, BodyTopology
from kisekae.qa.check import body_topology, check_pose


def sphere_query(radius=1.0, center=(0, 0, 0), subdiv=3):
    v, f = icosphere(subdiv, radius, center)
    return BodyQuery(BodyTopology.from_mesh(v, f), v), v, f


def test_sphere_push_is_the_push_law():
    """Analytic: a point at signed distance d from a unit sphere ends at the target gap (inside) or moves stiffness*(margin-d)."""
    q, _, _ = sphere_query(subdiv=4)
    params = PushParams(margin=0.01, stiffness=0.5, max_push=0.2, smooth_iterations=0)
    dirs = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.6, 0.8, 0]], float)
    d = np.array([-0.05, 0.004, 0.05, -0.12])
    # Radial points; the icosphere's faces sit slightly inside the unit sphere, so measure d against the mesh.
    pts = dirs * (1.0 + d)[:, None]
    new, info = push_out_exact(q, pts, np.zeros((0, 2), int), params, crossing_rounds=0)
    r_new = np.linalg.norm(new, axis=1)
    d_mesh = info["d_before"]
    gap = params.stiffness * params.margin
    assert not q.inside(new).any()
    # Inside: ends at the gap from the surface (radially, within the faceting error of 2 mm).
    np.testing.assert_allclose(r_new[[0, 3]] - (1 + d[[0, 3]] - d_mesh[[0, 3]]), gap, atol=2e-3)
    # In the band: moves stiffness * (margin - d).
    np.testing.assert_allclose(info["push"][1], params.stiffness * (params.margin - d_mesh[1]), atol=1e-6)
    # Clear: does not move at all.
    assert info["push"][2] == 0.0 and not info["contact"][2]


def test_overlapping_spheres_union_boundary():
    """Two overlapping spheres: a point inside both, whose nearest surface is buried, is moved outside the union."""
    a, fa = icosphere(3, 1.0, (0, 0, 0))
    b, fb = icosphere(3, 1.0, (1.2, 0, 0))
    v = np.concatenate([a, b])
    f = np.concatenate([fa, fb + len(a)])
    q = BodyQuery(BodyTopology.from_mesh(v, f), v)
    p = np.array([[0.75, 0.3, 0.0]])  # inside both spheres; nearest surface is sphere b's, buried in a
    assert q.winding(p)[0] > 1.5
    sw = shrinkwrap(q, p, 0.002)
    assert q.inside(sw)[0], "Shrinkwrap's nearest-surface mode leaves it inside the union"
    new, info = push_out_exact(q, p, np.zeros((0, 2), int), PushParams(max_push=0.8), crossing_rounds=0)
    assert not q.inside(new)[0]
    assert np.linalg.norm(new - p) <= 0.8


def test_march_out_of_a_sphere():
    q, _, _ = sphere_query(subdiv=4)
    starts = np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0]])
    dirs = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    ex, dist = march_out(q, starts, dirs, 2.0)
    np.testing.assert_allclose(dist, [1.0, 0.5], atol=5e-3)  # faceted unit sphere
    _, dist = march_out(q, starts[:1], dirs[:1], 0.5)
    assert np.isinf(dist[0])


def test_bad_parameters_and_inputs():
    q, _, _ = sphere_query()
    with pytest.raises(KisekaeError, match="greater than max_push"):
        PushParams(margin=0.2, max_push=0.1)
    with pytest.raises(KisekaeError, match="non-finite"):
        push_out_exact(q, np.array([[np.nan, 0, 0]]), np.zeros((0, 2), int))
    with pytest.raises(KisekaeError, match="tightness"):
        push_out_exact(q, np.zeros((3, 3)), np.zeros((0, 2), int), tightness=np.zeros(4))
    with pytest.raises(KisekaeError, match="edge index"):
        push_out_exact(q, np.zeros((3, 3)), np.array([[0, 5]]))


@pytest.mark.parametrize("method", ["exact", "auto"])
@pytest.mark.parametrize("pose_name", ["stand", "leg_raise", "crouch"])
def test_verification_matrix_inside_and_caps(avatar, pose_name, method):
    """The seed's matrix: zero vertices inside after fixing (``auto`` on the plain body's crouch, which overlaps
    itself, may leave some rather than crumple the cloth: it then has no more visible defects than the exact
    solver), no move beyond maxPush; the exact solver leaves clear vertices still, the shape solve moves none
    farther than the deepest penetration + 2 cm."""
    pose = named_pose(avatar.skeleton, pose_name)
    fixed = fix_pose(avatar, pose, ["tights", "skirt"], method=method)
    recs = check_pose(avatar, pose, ["tights", "skirt"], posed_garments={k: v.positions for k, v in fixed.items()})
    before = {r["garment"]: r for r in check_pose(avatar, pose, ["tights", "skirt"])}
    params = PushParams()
    for rec in recs:
        m = fixed[rec["garment"]].metrics
        if method == "exact" or pose_name != "crouch":
            assert rec["inside_count"] == 0, rec
        else:
            from kisekae.fit.fix import _defects

            mm = pose.skinning_matrices(avatar.skeleton)
            q = BodyQuery(body_topology(avatar), avatar.body.posed(mm))
            exact = fix_pose(avatar, pose, [rec["garment"]], method="exact", query=q)[rec["garment"]]
            part = avatar.part(rec["garment"])
            skinned = part.posed(mm)
            assert _defects(q, part, skinned, fixed[rec["garment"]].positions) <= _defects(q, part, skinned,
                                                                                           exact.positions)
        assert m["max_push_m"] <= params.max_push + 1e-6
        if m["fix_method"] == "exact":
            assert m["moved_unnecessarily"] == 0
        elif m["fix_method"] == "shape":
            assert m["max_push_m"] <= before[rec["garment"]]["max_depth_m"] + 0.02 + 1e-6
        else:  # the per-frame start, the carried garment or the exact solver finishing the shape solve, within max_push
            assert method == "auto" and (m["fix_method"] == "shape+exact"
                                         or m["fix_method"].startswith(("path", "runtime")))
    before = check_pose(avatar, pose, ["tights", "skirt"])
    for b, a in zip(before, recs):
        assert a["edge_crossings"] <= b["edge_crossings"]
    if pose_name != "crouch":
        # Both garments clear completely in stand and leg_raise: no garment edge through the body
        # and no exposed skin edge through a garment face.
        from kisekae.fit.exact import exposed_body_edges
        from kisekae.geom.bvh import build_bvh, refit
        from kisekae.geom.crossings import edge_crossings

        m = pose.skinning_matrices(avatar.skeleton)
        q = BodyQuery(body_topology(avatar), avatar.body.posed(m))
        for rec in recs:
            assert rec["edge_crossings"] == 0, rec
            pos = fixed[rec["garment"]].positions
            faces = avatar.garments[rec["garment"]].mesh.faces
            tree = build_bvh(pos, faces)
            assert not edge_crossings(q.vertices, exposed_body_edges(q), tree, refit(tree, pos, faces)).any()


def test_exact_beats_shrinkwrap_in_a_deep_pose(avatar):
    """Blender-style Shrinkwrap (nearest point, outside, 2 mm) leaves vertices inside where the body overlaps itself."""
    pose = named_pose(avatar.skeleton, "knee_bend")
    m = pose.skinning_matrices(avatar.skeleton)
    q = BodyQuery(body_topology(avatar), avatar.body.posed(m))
    x = avatar.garments["skirt"].posed(m)
    sw = shrinkwrap(q, x, 0.002)
    assert q.inside(sw).sum() > 0
    surf = shrinkwrap(q, x, 0.002, "outside_surface")
    assert np.linalg.norm(surf - x, axis=1).max() > 0.15  # outside-surface mode collapses the hem onto the legs
    fixed = fix_pose(avatar, pose, ["skirt"])["skirt"]
    assert q.inside(fixed.positions).sum() == 0
    assert fixed.metrics["max_push_m"] <= 0.1 + 1e-6


def test_layers_keep_outer_outside_inner():
    # Inner layer: a unit sphere "tights"; outer: points just under it.
    v, f = icosphere(3, 1.0)
    inner = LayerSurface(v, f, thickness=0.001, outward_hint=lambda pts: pts / np.linalg.norm(pts, axis=1)[:, None])
    dirs = np.random.default_rng(0).normal(size=(50, 3))
    dirs /= np.linalg.norm(dirs, axis=1)[:, None]
    outer = dirs * 0.995
    s, _ = inner.signed_distance(outer)
    assert np.all(s < 0)
    new, touched = push_out_layers(outer, np.zeros((0, 2), int), [inner], PushParams(margin=0.002, max_push=0.05))
    s2, _ = inner.signed_distance(new)
    assert np.all(s2 >= inner.thickness) and touched.all()
    assert draw_order(["tights", "skirt", "veil"], transparent=["veil"]) == ["body", "tights", "skirt", "veil"]
    with pytest.raises(KisekaeError, match="not in the outfit"):
        draw_order(["tights"], transparent=["cape"])


def test_layered_stand(avatar):
    pose = named_pose(avatar.skeleton, "stand")
    fixed = fix_pose(avatar, pose, ["tights", "skirt"], layered=True)
    assert fixed["skirt"].metrics["under_lower_layers"] == 0
    assert fixed["skirt"].metrics["layer_crossings"] == 0
    assert fixed["tights"].metrics["under_lower_layers"] == 0


def test_defects_count_the_edges_through_the_layers_beneath(avatar):
    """A layer whose triangles cut the garment's edges adds those crossings to the visible defects."""
    from kisekae.fit.fix import _defects

    pose = named_pose(avatar.skeleton, "stand")
    m = pose.skinning_matrices(avatar.skeleton)
    q = BodyQuery(body_topology(avatar), avatar.body.posed(m))
    part = avatar.part("skirt")
    x = part.posed(m).astype(np.float64)
    alone = _defects(q, part, x, x)
    across = LayerSurface(x + np.array([0.0, 0.012, 0.0]), part.mesh.faces, name="across")
    n_cross = int(across.crossing_edges(x, part.mesh.edges).sum())
    assert n_cross > 0  # the skirt moved 12 mm up: its sloped triangles cut the skirt's edges
    assert _defects(q, part, x, x, [across])[0] == alone[0] + n_cross


def test_cli_check_fix_json(tmp_path, capsys):
    from kisekae.cli import main

    out = tmp_path / "fix.json"
    assert main(["check", "--fix", "--pose", "stand", "--pose", "leg_raise", "--json", str(out)]) == 0
    recs = json.loads(out.read_text())
    assert [r["stage"] for r in recs] == ["before", "after"] * 4
    after = [r for r in recs if r["stage"] == "after"]
    for r in after:
        for key in ("max_push_m", "moved_fraction", "moved_unnecessarily", "time_ms"):
            assert key in r
        assert r["inside_count"] == 0
    code = main(["check", "--fix", "--margin", "0.2", "--max-push", "0.1"])
    assert code == 2 and "greater than max_push" in capsys.readouterr().err


def test_cli_fit_writes_rig_and_garments(tmp_path, capsys):
    from kisekae.cli import main
    from kisekae.avatar.capsules import CapsuleRig
    from kisekae.io.obj import read_obj

    assert main(["fit", "--pose", "leg_raise", "--garment", "skirt", "-o", str(tmp_path)]) == 0
    rig = CapsuleRig.load(tmp_path / "capsules.json")
    assert len(rig.bone) > 20
    obj = read_obj(tmp_path / "skirt__leg_raise.obj")
    assert len(obj.vertices) == 720
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["draw_order"] == ["body", "skirt"]
    # The contact body (the default) goes to the engine glue as body_contact.json.
    from kisekae.shaders.contact_bake import contact_from_bake

    bake = json.loads((tmp_path / "body_contact.json").read_text())
    assert len(contact_from_bake(bake, _names())["rest"]) == 13380
    # ... and its pose-space correctives (the packaged bake) as body_correctives.json + .bytes
    from kisekae.avatar import load_builtin_avatar
    from kisekae.avatar.correctives import packaged_correctives
    from kisekae.shaders import corrective_bake as B

    head, blob = B.corrective_bake_paths(tmp_path)
    c, *_ = B.correctives_from_bake(json.loads(head.read_text()), blob.read_bytes(), _names())
    np.testing.assert_array_equal(c.coefficients, packaged_correctives(load_builtin_avatar()).coefficients)
    # Refuses to overwrite without --force.
    assert main(["fit", "--pose", "leg_raise", "--garment", "skirt", "-o", str(tmp_path)]) == 2
    # Plain skinning writes no contact bake.
    plain = tmp_path / "plain"
    assert main(["fit", "--no-contact", "--pose", "leg_raise", "--garment", "skirt", "-o", str(plain)]) == 0
    assert not (plain / "body_contact.json").exists()
    assert not (plain / "body_correctives.json").exists()  # nor the body's correctives (kisekae.avatar.correctives)


def _names():
    from kisekae.avatar.builtin import load_builtin_avatar

    return load_builtin_avatar().skeleton.names


def test_runtime_path_caps_total_push(avatar):
    """Capsules then skin-bound clearance: the runtime reference never moves a vertex more than maxPush."""
    from kisekae.fit import fit_capsules
    from kisekae.fit.bound import bind_to_skin, bound_clearance, push_out_runtime
    from kisekae.geom.normals import vertex_normals

    b, sk = avatar.body, avatar.skeleton
    rig = fit_capsules(b.mesh.vertices, b.skin.indices, b.skin.weights, sk.rest, sk.names)
    g = avatar.garments["skirt"]
    binding = bind_to_skin(g.mesh.vertices, b.mesh.vertices, b.mesh.faces)
    # At rest the bound clearance equals the stored rest offset (binding is exact at rest).
    s, _ = bound_clearance(binding, g.mesh.vertices, b.mesh.vertices, vertex_normals(b.mesh.vertices, b.mesh.faces))
    np.testing.assert_allclose(s, binding.rest_offset, atol=1e-5)
    pose = named_pose(sk, "crouch")
    m = pose.skinning_matrices(sk)
    x = g.posed(m)
    params = PushParams(max_push=0.03)
    new, push = push_out_runtime(binding, x, rig.posed(pose.world_matrices(sk)), b.posed(m), b.mesh.faces, params)
    assert np.linalg.norm(new - x, axis=1).max() <= 0.03 + 1e-9
    assert push.max() > 0


def test_the_runtime_start_is_what_the_engine_shows_where_it_is_clean(avatar):
    """On the contact body's knee_bend the per-frame skirt leaves no clipping: ``runtime`` and ``auto`` return it as
    it is (no solver moves what an engine shows)."""
    from kisekae.fit.runtime import runtime_pose

    av = avatar.with_body_contact()
    pose = named_pose(av.skeleton, "knee_bend")
    shown = runtime_pose(av, pose, ["skirt"])["skirt"][0]
    for method in ("runtime", "auto"):
        r = fix_pose(av, pose, ["skirt"], method=method)["skirt"]
        assert r.metrics["fix_method"] == "runtime"
        np.testing.assert_allclose(r.positions, shown, atol=1e-6)
        assert r.metrics["unresolved"] == 0


def test_the_runtime_start_is_finished_where_it_clips(avatar):
    """Where the per-frame tights keep edges through the body (the planes alone, the sit), the shape and exact solvers
    finish them from there: fewer visible defects than the per-frame result, nothing inside, within max_push."""
    from kisekae.fit.fix import _defects
    from kisekae.fit.runtime import runtime_pose

    av = avatar.with_body_contact()
    pose = named_pose(av.skeleton, "sit")
    m = pose.skinning_matrices(av.skeleton)
    q = BodyQuery(body_topology(av), av.body.posed(m))
    part = av.part("tights")
    skinned = part.posed(m)
    shown = runtime_pose(av, pose, ["tights"])["tights"][0]
    assert q.crossing_edges(shown, part.mesh.edges).any()  # the case this test is about
    r = fix_pose(av, pose, ["tights"], method="runtime", query=q)["tights"]
    assert r.metrics["fix_method"].startswith("runtime") and "+" in r.metrics["fix_method"]  # a finish was kept
    ours, theirs = _defects(q, part, skinned, r.positions), _defects(q, part, skinned, shown)
    assert ours < theirs and ours[2] == 0
    assert r.metrics["max_push_m"] <= PushParams().max_push + 1e-6


def test_auto_keeps_a_per_frame_result_with_nothing_inside(avatar, monkeypatch):
    """The deep squat's skirt keeps edges through the default body after every per-frame finish, but no vertex inside:
    ``auto`` keeps the best of those and never runs the exact solver from the start or from the skinned garment, nor
    the carried garment (they never won there and took most of the time; docs/fit.md, "Solvers that never won")."""
    from pathlib import Path

    import kisekae.fit.fix as fix
    from kisekae.avatar.contact import apply_contact, contact_gap
    from kisekae.avatar.poses import pose_from_dict

    av = apply_contact(avatar, contact_gap(True))  # the command line's default body, with the packaged correctives
    spec = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "poses" / "deep_squat.json").read_text())
    pose = pose_from_dict(av.skeleton, spec, "deep_squat")
    m = pose.skinning_matrices(av.skeleton)
    q = BodyQuery(body_topology(av), av.body.posed(m))
    ran = []
    push, path = fix._push, fix._path
    monkeypatch.setattr(fix, "_push", lambda query, mesh, x, *a: ran.append(("exact", x)) or push(query, mesh, x, *a))
    monkeypatch.setattr(fix, "_path", lambda *a: ran.append(("path", None)) or path(*a))
    r = fix_pose(av, pose, ["skirt"], query=q)["skirt"]
    edges = av.part("skirt").mesh.edges
    assert r.metrics["fix_method"].startswith("runtime")
    assert not q.inside(r.positions).any() and q.crossing_edges(r.positions, edges).any()  # the case of this test
    assert all(kind == "exact" for kind, _x in ran)  # no carried garment
    skinned = av.part("skirt").posed(m)
    assert not any(np.array_equal(x, skinned) for _k, x in ran)  # no exact solver from the skinned garment
    assert len(ran) <= 2  # at most from the two shape results, never from the two per-frame starts


def test_the_runtime_start_refuses_masks(avatar):
    pose = named_pose(avatar.skeleton, "stand")
    masks = {"skirt": {"tightness": np.zeros(avatar.part("skirt").mesh.n_vertices)}}
    with pytest.raises(KisekaeError, match="per-frame start"):
        fix_pose(avatar, pose, ["skirt"], masks=masks, method="runtime")
    assert fix_pose(avatar, pose, ["skirt"], masks=masks)["skirt"].metrics["fix_method"] == "shape"

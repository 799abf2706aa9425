"""The contact between body parts that share no joint (kisekae.avatar.part_contact), against analytic spheres,
its NumPy reference, and the built-in body."""

import numpy as np
import pytest

from conftest import icosphere
from kisekae.avatar.part_contact import (PartContact, active_pairs, bake_part_fields, pair_depths, pair_depths_numpy,
                                         pair_fade, part_contact, part_step, part_step_numpy, sample_field_numpy,
                                         skip_masks)
from kisekae.avatar.skinning import Skin
from kisekae.errors import KisekaeError

R = 0.05


def sphere_pair(radius_b=R):
    """Two spheres, of radius 5 cm and ``radius_b``, 20 cm apart at rest, each skinned wholly to its own bone:
    ``(vertices, faces, skin, vertices of the first)``."""
    # centred off the grid's planes (the icosphere's symmetric vertices would sit on cell faces, where the
    # trilinear gradient jumps, and rounding at 10 m would pick the other cell)
    va, fa = icosphere(3, R, (0.0, 0.00037, 0.00071))
    vb, fb = icosphere(3, radius_b, (0.2, 0.00037, 0.00071))
    v = np.concatenate([va, vb])
    f = np.concatenate([fa, fb + len(va)])
    idx = np.zeros((len(v), 4), np.int32)
    idx[len(va):, 0] = 1
    w = np.zeros((len(v), 4), np.float32)
    w[:, 0] = 1
    return v, f, Skin(idx, w), len(va)


def two_spheres(parents=(-1, -1), cell=0.005):
    """Two spheres of radius 5 cm 20 cm apart at rest, each skinned wholly to its own bone, and their fields."""
    v, f, skin, _ = sphere_pair()
    return v, f, skin, bake_part_fields(v, f, skin, np.array(parents), cell=cell, margin=0.03)


def moved(dx, shift=(0.0, 0.0, 0.0)):
    """Skinning matrices moving bone 1 by ``dx`` along -x, and the whole scene by ``shift``."""
    m = np.tile(np.eye(4), (2, 1, 1))
    m[1, 0, 3] = -dx
    m[:, :3, 3] += shift
    return m


def posed(v, m, n_a):
    out = v.copy()
    out[:n_a] = v[:n_a] + m[0, :3, 3]
    out[n_a:] = v[n_a:] + m[1, :3, 3]
    return out


def test_fields_are_the_spheres_signed_distances():
    v, f, skin, fields = two_spheres()
    assert list(fields.bone) == [0, 1]
    rng = np.random.default_rng(1)
    p = rng.uniform(-0.07, 0.07, (400, 3)) + [0.0, 0.00037, 0.00071]
    value, grad, inside = sample_field_numpy(fields, 0, p)
    assert inside.all()
    exact = np.linalg.norm(p - [0.0, 0.00037, 0.00071], axis=1) - R
    assert np.abs(value - exact).max() < 3e-3  # icosphere facets (1.5 mm) and 5 mm trilinear cells
    far = np.abs(exact) > 0.01
    r = p[far] - [0.0, 0.00037, 0.00071]
    cos = np.einsum("ij,ij->i", grad[far], r) / np.linalg.norm(grad[far], axis=1) / np.linalg.norm(r, axis=1)
    assert cos.min() > 0.95
    assert not sample_field_numpy(fields, 0, [[0.5, 0, 0]])[2][0]


def test_overlapping_spheres_meet_at_the_bisector_with_the_gap():
    v, f, skin, fields = two_spheres()
    n_a = len(v) // 2
    m = moved(0.11)  # centres 9 cm apart: 1 cm of overlap
    x = posed(v, m, n_a)
    y = part_contact(x, fields, m, gap=0.004)
    mid = 0.045
    # every vertex of A that was beyond the bisector now lies before it, and B's after it (grid and facet error 2 mm)
    assert y[:n_a, 0].max() < mid - 0.002 + 0.002
    assert y[n_a:, 0].min() > mid + 0.002 - 0.002
    # the one-ring passes spread the moves a few rings, fading; the far side stays exactly where it was
    dist_b = np.linalg.norm(x[:n_a] - [0.09, 0.00037, 0.00071], axis=1) - R
    assert np.linalg.norm(y[:n_a] - x[:n_a], axis=1)[dist_b > 0.03].max() < 1e-4
    far = x[:n_a, 0] < -0.02
    assert far.sum() > n_a / 4
    np.testing.assert_array_equal(y[:n_a][far], x[:n_a][far])
    # the move is along the line of centres and no larger than the overlap asks
    d = y - x
    assert np.linalg.norm(d, axis=1).max() < 0.012
    assert np.abs(d[:, 1:]).max() < 0.006


def test_rest_and_apart_are_unchanged_and_reference_equals_kernel():
    v, f, skin, fields = two_spheres()
    n_a = len(v) // 2
    for dx in (0.0, 0.05):
        m = moved(dx)
        x = posed(v, m, n_a)
        np.testing.assert_array_equal(part_contact(x, fields, m), x)
    m = moved(0.115)
    x = posed(v, m, n_a)
    np.testing.assert_allclose(part_step(x, fields, m), part_step_numpy(x, fields, m), atol=1e-9, rtol=0)
    np.testing.assert_allclose(part_contact(x, fields, m), part_contact(x, fields, m, numpy=True), atol=1e-9, rtol=0)


def test_pair_depths_and_fades():
    v, f, skin, fields = two_spheres()
    n_a = len(v) // 2
    m = moved(0.11)  # 1 cm of overlap: each sphere reaches about 1 cm into the other
    x = posed(v, m, n_a)
    d = pair_depths_numpy(x, fields, m)
    np.testing.assert_allclose(pair_depths(x, fields, m), d, atol=1e-12, rtol=0)
    assert d[0, 0] == d[1, 1] == 0.0
    assert 0.008 < d[0, 1] < 0.012 and 0.008 < d[1, 0] < 0.012
    # the deeper of a pair's two depths decides; a part's least pair caps all its pairs
    depths = np.array([[0.0, 0.01, 0.0], [0.03, 0.0, 0.0], [0.0, 0.005, 0.0]])
    fade = pair_fade(depths, deep=0.02)
    np.testing.assert_allclose(fade, [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5], [0.5, 0.5, 1.0]], atol=1e-12)
    np.testing.assert_allclose(pair_fade(np.array([[0.0, 0.045], [0.0, 0.0]])), [[0.0, 0.0], [0.0, 0.0]])


def test_deep_overlap_is_left_alone():
    """5 cm of overlap between two 5 cm spheres: no vertex step can part them, so none moves."""
    v, f, skin, fields = two_spheres()
    n_a = len(v) // 2
    m = moved(0.15)
    x = posed(v, m, n_a)
    assert pair_depths(x, fields, m).max() > 0.04
    np.testing.assert_array_equal(part_contact(x, fields, m), x)
    np.testing.assert_array_equal(part_contact(x, fields, m, numpy=True), x)


def test_the_result_moves_with_the_body():
    v, f, skin, fields = two_spheres()
    n_a = len(v) // 2
    shift = np.array([10.0, -3.0, 7.0])
    a = part_contact(posed(v, moved(0.11), n_a), fields, moved(0.11))
    b = part_contact(posed(v, moved(0.11, shift), n_a), fields, moved(0.11, shift))
    np.testing.assert_allclose(b - shift, a, atol=1e-6, rtol=0)


def test_parts_that_share_a_joint_are_left_to_the_joint_planes():
    v, f, skin, fields = two_spheres(parents=(-1, 0))  # bone 1 is bone 0's child: the pair is a joint
    assert (fields.skip == 3).all()
    n_a = len(v) // 2
    m = moved(0.11)
    x = posed(v, m, n_a)
    np.testing.assert_array_equal(part_contact(x, fields, m), x)


def test_skip_masks_cover_the_bones_of_the_vertex_and_their_neighbours():
    parents = np.array([-1, 0, 1, 2, 0])
    idx = np.array([[2, 0], [4, 0], [1, 3]], np.int32)
    w = np.array([[1.0, 0.0], [1.0, 0.0], [0.5, 0.5]], np.float32)
    mask = skip_masks(Skin(idx, w), parents, np.array([0, 1, 2, 3, 4]))
    bits = [[s for s in range(5) if (int(k) >> s) & 1] for k in mask]
    assert bits == [[1, 2, 3], [0, 4], [0, 1, 2, 3]]


def test_broad_phase_keeps_every_pair_in_contact():
    v, f, skin, fields = two_spheres()
    n_a = len(v) // 2
    m = moved(0.11)
    assert active_pairs(fields, posed(v, m, n_a), m).tolist() == [[False, True], [True, False]]
    m = moved(-0.3)
    assert not active_pairs(fields, posed(v, m, n_a), m).any()


def test_bad_input_is_refused():
    v, f, skin, fields = two_spheres()
    m = moved(0.1)
    with pytest.raises(KisekaeError, match="baked for"):
        part_step(v[:10], fields, m)
    bad = m.copy()
    bad[1, 0, 0] = np.nan
    with pytest.raises(KisekaeError, match="NaN"):
        part_step(v, fields, bad)
    with pytest.raises(KisekaeError, match="gap"):
        part_step(v, fields, m, gap=-1.0)
    with pytest.raises(KisekaeError, match="passes"):
        part_contact(v, fields, m, passes=-1)
    with pytest.raises(KisekaeError, match="cell"):
        bake_part_fields(v, f, skin, np.array([-1, -1]), cell=0.0)
    with pytest.raises(KisekaeError, match="deep"):
        PartContact(None, fields, deep=float("nan")).check()


@pytest.fixture(scope="module")
def contact_avatar():
    from kisekae.avatar import load_builtin_avatar
    from kisekae.avatar.contact import apply_contact, contact_gap

    base = apply_contact(load_builtin_avatar(), contact_gap(True), correctives="auto", part_contact=False)
    parts = apply_contact(load_builtin_avatar(), contact_gap(True), correctives="auto")  # the command line's body
    assert isinstance(parts.body.deform, PartContact) and not isinstance(base.body.deform, PartContact)
    return base, parts


def test_builtin_body_arm_against_the_chest(contact_avatar):
    """A range-of-motion pose (seed 777, no bake's) that drives the upper arm into the chest: fewer buried body
    vertices and self-crossings, no triangle turned over; a named pose without such a contact is unchanged."""
    from kisekae.avatar.poses import named_pose, range_of_motion_poses
    from kisekae.qa.selfcontact import BodySelfContact, flipped_faces

    base, parts = contact_avatar
    sk, mesh = base.skeleton, base.body.mesh
    pose = range_of_motion_poses(sk, 28, seed=777)[27]
    m = pose.skinning_matrices(sk)
    x, y = base.body.posed(m), parts.body.posed(m)
    measure = BodySelfContact(mesh.vertices, mesh.faces, weld=mesh.weld)
    before, after = measure.measure(x), measure.measure(y)
    assert after["body_buried"] < 0.6 * before["body_buried"]
    assert after["body_self_crossings"] < 0.8 * before["body_self_crossings"]
    assert flipped_faces(y, x, np.asarray(mesh.faces)) == 0
    assert np.linalg.norm(y - x, axis=1).max() < 0.03
    m = named_pose(sk, "crouch").skinning_matrices(sk)
    np.testing.assert_array_equal(parts.body.posed(m), base.body.posed(m))


def test_garment_bakes_know_the_part_contact(contact_avatar):
    from kisekae.avatar.contact import joint_contact_of
    from kisekae.fit.garment_correctives import body_key
    from kisekae.fit.runtime import _part_contact_entry

    base, parts = contact_avatar
    assert joint_contact_of(parts.body.deform) is parts.body.deform.before.then  # through the part contact
    assert _part_contact_entry(base) == []
    np.testing.assert_array_equal(_part_contact_entry(parts)[0], [4, 0.004, 0.01, 0.02, 8, 0.01])  # VERSION 4
    assert body_key(parts) == body_key(base)  # the garment correctives of the body without it serve it
    assert body_key(base)["gap"] == 0.004


def test_builtin_body_feet_together(contact_avatar, tmp_path):
    """Thighs turned 12 degrees inwards each: the feet press into each other, away from any joint they share."""
    import json

    from kisekae.avatar.poses import load_pose_file
    from kisekae.qa.selfcontact import BodySelfContact, flipped_faces

    base, parts = contact_avatar
    path = tmp_path / "feet_together.json"
    path.write_text(json.dumps({"thigh_l": {"world_axis": [0, 0, 1], "degrees": -12},
                                "thigh_r": {"world_axis": [0, 0, 1], "degrees": 12}}))
    m = load_pose_file(base.skeleton, path).skinning_matrices(base.skeleton)
    x, y = base.body.posed(m), parts.body.posed(m)
    mesh = base.body.mesh
    measure = BodySelfContact(mesh.vertices, mesh.faces, weld=mesh.weld)
    before, after = measure.measure(x), measure.measure(y)
    assert before["body_buried"] >= 15 and after["body_buried"] <= before["body_buried"] // 3
    assert after["body_self_crossings"] <= before["body_self_crossings"] // 3
    assert flipped_faces(y, x, np.asarray(mesh.faces)) == 0


def test_command_line_part_contact(tmp_path, capsys):
    """``kisekae check`` poses the body with the part contact by default, ``--no-part-contact`` without."""
    import json

    from kisekae.cli import main

    pose = tmp_path / "knees.json"
    pose.write_text(json.dumps({"thigh_l": {"world_axis": [0, 0, 1], "degrees": -12},
                                "thigh_r": {"world_axis": [0, 0, 1], "degrees": 12}}))
    got = {}
    for name, flags in (("plain", ["--no-part-contact"]), ("parts", []), ("parts2", ["--part-contact"])):
        out = tmp_path / f"{name}.json"
        assert main(["check", "--pose-file", str(pose), "--garment", "tights", "--self-contact", *flags, "--json",
                     str(out)]) == 0
        got[name] = json.loads(out.read_text())[0]
    capsys.readouterr()
    assert got["plain"]["body_buried"] >= 15
    assert got["parts"]["body_buried"] <= got["plain"]["body_buried"] // 3
    assert got["parts2"]["body_buried"] == got["parts"]["body_buried"]


def test_engine_bake_round_trip(contact_avatar):
    """The bake an engine reads (kisekae fit's body_parts.json + .bytes) gives the same step, and bad bakes are
    refused with the file's name."""
    from kisekae.avatar.poses import range_of_motion_poses
    from kisekae.shaders.part_bake import part_bake, part_from_bake

    base, parts = contact_avatar
    sk = parts.skeleton
    doc, blob = part_bake(parts.body.deform, sk.names)
    import json

    doc = json.loads(json.dumps(doc))
    fields, settings = part_from_bake(doc, blob, sk.names)
    assert settings == {"gap": 0.004, "band": 0.01, "deep": 0.02, "passes": 8}
    ref = parts.body.deform.fields
    np.testing.assert_array_equal(fields.skip, ref.skip)
    np.testing.assert_array_equal(fields.part, ref.part)
    np.testing.assert_array_equal(fields.ring[1], ref.ring[1])
    np.testing.assert_array_equal(fields.faces, ref.faces)  # the flip guard's triangles and faces around each vertex
    for a, b in zip(fields.vertex_faces, ref.vertex_faces):
        np.testing.assert_array_equal(a, b)
    rom = range_of_motion_poses(sk, 28, seed=777)
    for k in (3, 27):  # 3: the guard takes moves back
        m = rom[k].skinning_matrices(sk)
        x = base.body.posed(m)
        np.testing.assert_allclose(part_contact(x, fields, m), part_contact(x, ref, m), atol=1e-5, rtol=0)
    faces_at = doc["layout"]["faces"]["offset"]
    broken = blob[:faces_at] + np.uint32(10 ** 9).tobytes() + blob[faces_at + 4:]
    with pytest.raises(KisekaeError, match="triangles or the faces around each vertex"):
        part_from_bake(doc, broken, sk.names)
    with pytest.raises(KisekaeError, match="version"):
        part_from_bake({**doc, "version": 99}, blob, sk.names)
    with pytest.raises(KisekaeError, match="do not fit the blob"):
        part_from_bake(doc, blob[:-4], sk.names)
    with pytest.raises(KisekaeError, match="missing or unknown entry"):
        part_from_bake({**doc, "parts": [{**doc["parts"][0], "bone": "no_such_bone"}]}, blob, sk.names)
    bad_layout = {**doc["layout"], "samples": {"offset": "abc", "count": 4}}
    with pytest.raises(KisekaeError, match="malformed entries"):
        part_from_bake({**doc, "layout": bad_layout}, blob, sk.names)
    with pytest.raises(KisekaeError, match="part contact bake"):
        part_bake(base.body.deform, sk.names)


def test_a_part_bone_scaled_to_zero_leaves_its_part_out():
    """Animations hide props by scaling bones to zero: that part neither moves nor pushes, and nothing fails."""
    v, f, skin, fields = two_spheres()
    n_a = len(v) // 2
    m = moved(0.11)
    x = posed(v, m, n_a)
    m[1, :3, :3] = 0.0
    np.testing.assert_array_equal(part_contact(x, fields, m), x)
    np.testing.assert_array_equal(part_contact(x, fields, m, numpy=True), x)


def test_demo_passes_the_part_contact_setting(monkeypatch, tmp_path):
    """``kisekae demo --no-part-contact`` asks the report for the body without it; the default asks for it."""
    import kisekae.app.demo as demo
    from kisekae.cli import main

    seen = []
    monkeypatch.setattr(demo, "run_demo", lambda out, **kw: seen.append(kw["part_contact"]) or tmp_path / "i.html")
    assert main(["demo", "--out", str(tmp_path / "a"), "--no-part-contact"]) == 0
    assert main(["demo", "--out", str(tmp_path / "b")]) == 0
    assert seen == [False, True]


def test_a_body_without_parts_big_enough_is_left_alone():
    """A small body (42 vertices a sphere, under MIN_PART_VERTICES) gets no field: the step returns its input."""
    va, fa = icosphere(1, R, (0.0, 0.00037, 0.00071))
    vb, fb = icosphere(1, R, (0.2, 0.00037, 0.00071))
    v, f = np.concatenate([va, vb]), np.concatenate([fa, fb + len(va)])
    idx = np.zeros((len(v), 4), np.int32)
    idx[len(va):, 0] = 1
    w = np.zeros((len(v), 4), np.float32)
    w[:, 0] = 1
    fields = bake_part_fields(v, f, Skin(idx, w), np.array([-1, -1]))
    assert fields.n_parts == 0 and (fields.part == -1).all()
    m = moved(0.11)
    x = posed(v, m, len(va))
    np.testing.assert_array_equal(part_contact(x, fields, m), x)
    np.testing.assert_array_equal(part_contact(x, fields, m, numpy=True), x)
    assert pair_depths(x, fields, m).shape == (0, 0)


def test_part_contact_ends_with_the_guard(contact_avatar):
    """The built-in body in the held-out pose whose part contact turned two triangles over (range of motion, seed
    777, pose 3): with the guard (the default, the fields hold the body's faces) none is; without it (fields without
    faces) two are; the NumPy and Numba sequences agree."""
    from dataclasses import replace

    from kisekae.avatar.part_contact import part_contact
    from kisekae.avatar.poses import range_of_motion_poses
    from kisekae.qa.selfcontact import flipped_faces

    base, parts = contact_avatar
    fields = parts.body.deform.fields
    assert fields.faces is not None and fields.vertex_faces is not None
    m = range_of_motion_poses(base.skeleton, 4, seed=777)[3].skinning_matrices(base.skeleton)
    x = base.body.posed(m).astype(np.float64)
    faces = np.asarray(base.body.mesh.faces)
    unguarded = part_contact(x, replace(fields, faces=None, vertex_faces=None), m)
    guarded = part_contact(x, fields, m)
    assert flipped_faces(unguarded, x, faces) >= 1 and flipped_faces(guarded, x, faces) == 0
    np.testing.assert_allclose(part_contact(x, fields, m, numpy=True), guarded, atol=1e-6)
    np.testing.assert_array_equal(parts.body.posed(m), guarded.astype(np.float32))


def test_the_fast_paths_give_the_full_steps_bit_for_bit(contact_avatar):
    """part_contact takes its second step over the vertices the smoothed moves reached only; that gives exactly what a
    step over every vertex (part_step) gives (the same moves, added in the same order)."""
    from kisekae.avatar import part_contact as pc
    from kisekae.avatar.flip_guard import flip_guard
    from kisekae.avatar.poses import range_of_motion_poses
    from kisekae.geom.ring import smooth_push

    base, parts = contact_avatar
    fields = parts.body.deform.fields
    rom = range_of_motion_poses(base.skeleton, 40, seed=777)
    for k in (3, 11, 27, 39):
        m = rom[k].skinning_matrices(base.skeleton)
        x = base.body.posed(m).astype(np.float64)
        p, _, gap, band, deep = pc._check(x, fields, m, pc.GAP, pc.BAND, pc.DEEP)
        fade = pc.pair_fade(pc.pair_depths(p, fields, m), deep, pc.live_parts(fields, m))
        y = pc.part_step(p, fields, m, fade=fade)
        y = pc.part_step(p + smooth_push(y - p, fields.ring, pc.PASSES), fields, m, fade=fade)
        full = flip_guard(p, y, fields.faces, fields.vertex_faces)
        fast = pc.part_contact(x, fields, m)
        assert np.abs(fast - x).max() > 1e-3, k  # these poses have contacts
        np.testing.assert_array_equal(fast, full)


def test_thin_parts_get_the_fine_cell():
    """A sphere of radius 15 mm is too thin for a 1 cm grid (its centre lies 1.5 cells deep, under MIN_DEPTH_CELLS) and
    gets a 5 mm one (3 cells deep); the 5 cm sphere keeps 1 cm; without a fine cell the thin one gets no field. The
    thin sphere's field is its signed distance, and it keeps the big one out as a big one would."""
    from kisekae.avatar.part_contact import FINE_CELL, MIN_DEPTH_CELLS

    v, f, skin, n_a = sphere_pair(0.015)
    fields = bake_part_fields(v, f, skin, np.array([-1, -1]), min_vertices=10)
    assert fields.part_cell.tolist() == [0.01, FINE_CELL] and fields.cell == 0.01
    assert 0.015 < MIN_DEPTH_CELLS * 0.01 and 0.015 >= MIN_DEPTH_CELLS * FINE_CELL
    coarse = bake_part_fields(v, f, skin, np.array([-1, -1]), min_vertices=10, fine_cell=None)
    assert coarse.n_parts == 1 and coarse.part_cell.tolist() == [0.01]
    rng = np.random.default_rng(5)
    p = rng.uniform(-0.03, 0.03, (300, 3)) + [0.2, 0.00037, 0.00071]
    value = sample_field_numpy(fields, 1, p)[0]
    exact = np.linalg.norm(p - [0.2, 0.00037, 0.00071], axis=1) - 0.015
    assert np.abs(value - exact).max() < 2e-3  # facets and 5 mm cells
    m = np.tile(np.eye(4), (2, 1, 1))
    m[1, 0, 3] = -0.2 + R + 0.015 - 0.006  # the thin sphere 6 mm into the big one's side
    x = v.copy()
    x[n_a:] += m[1, :3, 3]
    y = part_contact(x, fields, m)
    big = np.linalg.norm(y[:n_a] - [0.0, 0.00037, 0.00071], axis=1)
    thin = np.linalg.norm(y[n_a:] - (np.array([0.2, 0.00037, 0.00071]) + m[1, :3, 3]), axis=1)
    assert np.abs(y - x).max() > 3e-3 and big.min() < R - 1e-3 and thin.min() < 0.015 - 1e-3  # both give way
    np.testing.assert_array_equal(part_contact(x, coarse, m)[n_a:], x[n_a:])  # no field: the thin one stays


def test_builtin_body_hands_and_toes_get_fine_fields(contact_avatar):
    """The built-in body's hands and toes (17 mm and 11 mm deep: too thin for 1 cm) have 5 mm fields; every other
    part 1 cm."""
    base, parts = contact_avatar
    f = parts.body.deform.fields
    names = [base.skeleton.names[b] for b in f.bone]
    fine = {n for n, c in zip(names, f.part_cell) if c == 0.005}
    assert fine == {"hand_l", "hand_r", "ball_l", "ball_r"} and f.n_parts == 20
    assert all(c == 0.01 for n, c in zip(names, f.part_cell) if n not in fine)


def test_the_runs_broad_phase_lists_what_every_vertex_would(contact_avatar):
    """The depth pass skips a run of CHUNK vertices whose posed box, taken to a part's rest frame, misses that part's
    grid. With boxes that reach everywhere (no run skipped) it lists the same tests and finds the same depths; the
    frame kernel's inverses, live parts and active pairs equal NumPy's inverse, determinant and a box test written
    out here."""
    from kisekae.avatar import part_contact as pc
    from kisekae.avatar.poses import named_pose, range_of_motion_poses

    base, parts = contact_avatar
    fields = parts.body.deform.fields
    order = fields.order
    for s in range(fields.n_parts):  # by part, each part's vertices once, in runs of at most CHUNK
        run = order[fields.part_start[s]:fields.part_start[s + 1]]
        np.testing.assert_array_equal(np.sort(run), np.flatnonzero(fields.part == s))
    assert np.diff(fields.chunk_start).max() <= pc.CHUNK and fields.chunk_start[-1] == len(order)
    rom = range_of_motion_poses(base.skeleton, 40, seed=777)
    poses = [named_pose(base.skeleton, "stand"), named_pose(base.skeleton, "crouch"), rom[3], rom[27]]
    skipped = 0
    for pose in poses:
        m = pose.skinning_matrices(base.skeleton)
        x = base.body.posed(m).astype(np.float64)
        inv, live, active, chunk, _ = pc._frame(fields, x, m)
        np.testing.assert_allclose(inv, pc.bone_inverses(m, fields.bone), atol=1e-12, rtol=0)
        np.testing.assert_array_equal(live, pc.live_parts(fields, m))
        box = np.array([[x[order[a:b]].min(axis=0) - 1e-3, x[order[a:b]].max(axis=0) + 1e-3]
                        for a, b in zip(fields.part_start[:-1], fields.part_start[1:])])
        corners = np.array([[[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)]], float)
        top = fields.lo + (fields.dims - 1) * fields.part_cell[:, None]
        world = [(fields.lo[s] + corners[0] * (top[s] - fields.lo[s])) @ m[b, :3, :3].T + m[b, :3, 3]
                 for s, b in enumerate(fields.bone)]
        grid = np.array([[w.min(axis=0) - 1e-3, w.max(axis=0) + 1e-3] for w in world])
        meets = np.all((box[:, None, 0] <= grid[None, :, 1]) & (box[:, None, 1] >= grid[None, :, 0]), axis=2)
        np.testing.assert_array_equal(active, meets & fields.pair_live & live[:, None] & live[None, :])
        everywhere = np.empty_like(chunk)
        everywhere[:, 0], everywhere[:, 1] = -1e3, 1e3
        got = pc._tests(x, fields, inv, active, chunk, pc.GAP + pc.BAND)
        want = pc._tests(x, fields, inv, active, everywhere, pc.GAP + pc.BAND)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] and got[4] == want[4]
        np.testing.assert_array_equal(got[2][:got[4]], want[2][:want[4]])
        np.testing.assert_array_equal(got[3][:got[4]], want[3][:want[4]])
        # the runs that were skipped: none of their vertices lies in the part's grid
        for s, b in enumerate(fields.bone):
            rest = x @ inv[b, :3, :3].T + inv[b, :3, 3]
            for sa in np.flatnonzero(active[:, s]):
                for c in range(fields.part_chunks[sa], fields.part_chunks[sa + 1]):
                    v = order[fields.chunk_start[c]:fields.chunk_start[c + 1]]
                    inside = np.all((rest[v] >= fields.lo[s]) & (rest[v] <= top[s]), axis=1)
                    if pc._run_misses(chunk, c, inv, b, *fields.lo[s], *top[s]):
                        skipped += 1
                        assert not inside.any()
    assert skipped > 100  # the runs do skip work


def test_the_frame_kernel_takes_singular_and_projective_bones():
    """A part bone scaled to zero is not live (zero inverse, no pairs); a matrix whose last row is not 0, 0, 0, 1
    takes NumPy's inverse."""
    from kisekae.avatar import part_contact as pc

    v, f, skin, fields = two_spheres()
    n_a = len(v) // 2
    m = moved(0.11)
    x = posed(v, m, n_a)
    dead = m.copy()
    dead[1, :3, :3] = 0.0
    inv, live, active, *_ = pc._frame(fields, x, dead)
    assert live.tolist() == [True, False] and not active.any() and not inv[1].any()
    odd = m.copy()
    odd[1, 3] = [0.0, 0.0, 0.1, 1.0]
    inv, live, active, *_ = pc._frame(fields, x, odd)
    np.testing.assert_allclose(inv[1], np.linalg.inv(odd[1]), atol=1e-12)
    assert live.all()


def test_nonzero_rows():
    from kisekae.geom.ring import nonzero_rows

    d = np.zeros((50, 3))
    d[[3, 17, 49], [0, 2, 1]] = [1e-300, -2.0, 5.0]
    np.testing.assert_array_equal(nonzero_rows(d), [3, 17, 49])
    assert nonzero_rows(np.zeros((0, 3))).shape == (0,)


def test_the_fade_kernel_is_pair_fade():
    from kisekae.avatar import part_contact as pc

    rng = np.random.default_rng(4)
    for n in (1, 5, 20):
        d = np.where(rng.random((n, n)) < 0.5, 0.0, rng.uniform(0.0, 0.05, (n, n)))
        live = rng.random(n) < 0.8
        np.testing.assert_array_equal(pc._fade_kernel(d, 0.02, live), pair_fade(d, 0.02, live))

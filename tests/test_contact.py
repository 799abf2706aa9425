"""Joint-plane contact of the body: NumPy against Numba, an analytic bent tube, invariances and errors."""

import numpy as np
import pytest

from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.contact import (FLESH_FACTOR, GAP, MAX_REACH, RING_FACTOR, JointPlanes, contact_planes,
                                    contact_planes_numpy, joint_reach)
from kisekae.avatar.contact import apply_contact
from kisekae.avatar.poses import named_pose
from kisekae.avatar.skeleton import axis_angle_matrix
from kisekae.avatar.skinning import lbs_numpy
from kisekae.errors import KisekaeError


def tube(n_rings=81, n_around=24, radius=0.06, length=0.8):
    """A straight tube along -Y from the origin, two bones (parent 0 to -0.4 m, child -0.4 to -0.8 m),
    weights blending linearly over 10 cm around the joint."""
    y = -np.linspace(0.0, length, n_rings)
    a = np.linspace(0, 2 * np.pi, n_around, endpoint=False)
    v = np.stack([np.repeat(np.cos(a)[None], n_rings, 0) * radius, np.repeat(y[:, None], n_around, 1),
                  np.repeat(np.sin(a)[None], n_rings, 0) * radius], -1).reshape(-1, 3)
    w_child = np.clip((-v[:, 1] - 0.35) / 0.1, 0, 1)
    idx = np.stack([np.zeros(len(v)), np.ones(len(v))], 1).astype(np.int32)
    wts = np.stack([1 - w_child, w_child], 1)
    rest = np.tile(np.eye(4), (2, 1, 1))
    rest[:, :3, :3] = np.array([[1, 0, 0], [0, -1, 0], [0, 0, -1]])  # +Y axis of both bones points down the tube
    rest[1, :3, 3] = (0, -0.4, 0)
    return v, idx, wts, rest


def bend(rest, degrees):
    """Skinning matrices that turn the child about the joint's X axis."""
    m = np.tile(np.eye(4), (2, 1, 1))
    r = axis_angle_matrix((1.0, 0.0, 0.0), np.radians(degrees))
    j = rest[1, :3, 3]
    m[1, :3, :3] = r
    m[1, :3, 3] = j - r @ j
    return m


def test_bent_tube_keeps_each_side_of_the_bisector_plane():
    v, idx, wts, rest = tube()
    planes = JointPlanes.from_skin([-1, 0], rest, idx, wts, v)
    assert len(planes.child) == 1 and planes.child[0] == 1 and planes.parent[0] == 0
    # the ring (subtree weight strictly between 0.05 and 0.95) spans rings 0.36..0.44 m down: farthest at 4 cm, 6 cm out
    assert planes.radius[0] == pytest.approx(np.hypot(0.04, 0.06), abs=1e-9)
    m = bend(rest, 120.0)
    x = lbs_numpy(v, idx, wts, m).astype(np.float64)
    y = contact_planes(x, planes, m)
    # the analytic contact plane: through the joint, normal bisecting the child's rest direction carried both ways
    d = np.array([0.0, -1.0, 0.0])
    n = d + m[1, :3, :3] @ d
    n /= np.linalg.norm(n)
    j = np.array([0.0, -0.4, 0.0])
    side = np.where(wts[:, 1] >= 0.5, 1.0, -1.0)
    s_rest = ((v - j) @ d) * side
    dist = np.linalg.norm(v - j, axis=1)
    inner = (dist <= planes.radius[0]) & (s_rest >= 0.01 + GAP / 2)  # target is gap/2 there
    s = ((y - j) @ n) * side
    assert inner.sum() > 100
    assert s[inner].min() >= GAP / 2 - 1e-12
    assert (((x - j) @ n) * side)[inner].min() < 0  # plain skinning folded them across the plane
    # a 120 degree bend: half the angle between the limbs is 30 degrees, limbs overlap out to r / sin 30 = 2 r
    assert planes.posed(m)[2][0] == pytest.approx(2.0)
    far = dist >= 2.0 * planes.radius[0]
    np.testing.assert_array_equal(y[far], x[far])
    moved = np.linalg.norm(y - x, axis=1) > 0
    # every move is along the plane normal
    np.testing.assert_allclose(np.cross(y[moved] - x[moved], n), 0, atol=1e-12)


def bent_tube(rest_bend=40.0):
    """:func:`tube` with its child half turned ``rest_bend`` degrees about the joint's X axis at rest (an elbow that
    MakeHuman models bent), the child bone's rest matrix turned with it."""
    v, idx, wts, rest = tube()
    r = axis_angle_matrix((1.0, 0.0, 0.0), np.radians(rest_bend))
    j = rest[1, :3, 3].copy()
    below = v[:, 1] < j[1]
    v = v.copy()
    v[below] = (v[below] - j) @ r.T + j
    rest[1, :3, :3] = r @ rest[1, :3, :3]
    return v, idx, wts, rest


def test_joint_bent_at_rest_keeps_each_side_of_the_rest_bisector():
    v, idx, wts, rest = bent_tube(40.0)
    d_child, d_parent = rest[1, :3, 1], rest[0, :3, 1]
    b = (d_child + d_parent) / np.linalg.norm(d_child + d_parent)
    planes = JointPlanes.from_skin([-1, 0], rest, idx, wts, v)
    np.testing.assert_allclose(planes.direction[0], b, atol=1e-12)
    m = bend(rest, 90.0)  # 90 degrees more than at rest: 130 between the limbs' axes
    x = lbs_numpy(v, idx, wts, m).astype(np.float64)
    j = rest[1, :3, 3]
    n = b + m[1, :3, :3] @ b
    n /= np.linalg.norm(n)
    side = np.where(wts[:, 1] >= 0.5, 1.0, -1.0)
    inner = (np.linalg.norm(v - j, axis=1) <= planes.radius[0]) & (((v - j) @ b) * side >= 0.01 + GAP / 2)
    assert inner.sum() > 100
    y = contact_planes(x, planes, m)
    assert (((y - j) @ n) * side)[inner].min() >= GAP / 2 - 1e-12
    # across the child's direction alone (rest_bend_limit 0, the planes before), the flesh of the inner bend that lies
    # beyond that rest plane is free to cross the joint's contact plane
    old = JointPlanes.from_skin([-1, 0], rest, idx, wts, v, rest_bend_limit=0.0)
    np.testing.assert_allclose(old.direction[0], d_child, atol=1e-12)
    assert (((contact_planes(x, old, m) - j) @ n) * side)[inner].min() < -0.005
    # a joint bent at rest beyond the limit keeps the child's direction
    assert JointPlanes.from_skin([-1, 0], rest, idx, wts, v, rest_bend_limit=30.0).direction[0] @ d_child > 1 - 1e-12


def test_rest_normal_takes_the_bisector_only_where_it_splits_the_sides_better():
    from kisekae.avatar.contact import rest_normal

    d = np.array([0.0, -1.0, 0.0])
    dp = np.array([0.0, -np.cos(np.radians(40)), np.sin(np.radians(40))]) * 2.0  # any length
    b = (d + dp / 2.0) / np.linalg.norm(d + dp / 2.0)
    rng = np.random.default_rng(3)
    off = rng.normal(size=(400, 3)) * 0.05
    by_b = off @ b > 0
    np.testing.assert_allclose(rest_normal(d, dp, off, by_b), b, atol=1e-12)
    np.testing.assert_array_equal(rest_normal(d, dp, off, off @ d > 0), d)  # the child's plane splits them exactly
    np.testing.assert_array_equal(rest_normal(d, dp, off, by_b, limit=35.0), d)  # bent more than the limit
    np.testing.assert_array_equal(rest_normal(d, np.zeros(3), off, by_b), d)  # no parent direction
    # a split only a little better than the child's plane keeps the child's direction
    mixed = np.where(rng.random(len(off)) < 0.5, by_b, off @ d > 0)
    wrong = [int(((off @ v) * np.where(mixed, 1, -1) < 0).sum()) for v in (d, b)]
    assert 0 < wrong[1] < wrong[0]
    np.testing.assert_array_equal(rest_normal(d, dp, off, mixed, gain=1.0 - 0.99 * wrong[1] / wrong[0]), d)
    np.testing.assert_allclose(rest_normal(d, dp, off, mixed, gain=1.0 - 1.01 * wrong[1] / wrong[0]), b, atol=1e-12)


def test_reach_grows_with_the_bend():
    """joint_reach against the overlap bound of two limbs: r / sin(half the angle between them)."""
    for bend_deg in (0.0, 30.0, 90.0, 120.0, 140.0, 160.0):
        length = 2 * np.cos(np.radians(bend_deg) / 2)  # |d + R d| for unit d turned by the bend
        half_between = np.radians(180.0 - bend_deg) / 2
        expect = min(max(1 / np.sin(half_between), RING_FACTOR), MAX_REACH)
        assert joint_reach(length) == pytest.approx(expect)
    assert joint_reach(0.0) == 0.0 and joint_reach(5e-4) == 0.0  # folded flat: inactive


def test_deep_bend_keeps_the_limbs_apart_beyond_the_old_reach():
    """At 150 degrees the calf lies along the thigh: vertices 1.5 to 3.5 ring radii from the joint still keep
    their side of the plane (the reach is 1 / sin 15 degrees = 3.86 ring radii)."""
    v, idx, wts, rest = tube(n_rings=161, length=1.2)
    rest[1, :3, 3] = (0, -0.6, 0)
    wts = np.stack([1 - np.clip((-v[:, 1] - 0.55) / 0.1, 0, 1), np.clip((-v[:, 1] - 0.55) / 0.1, 0, 1)], 1)
    planes = JointPlanes.from_skin([-1, 0], rest, idx, wts, v)
    m = bend(rest, 150.0)
    x = lbs_numpy(v, idx, wts, m).astype(np.float64)
    y = contact_planes(x, planes, m)
    np.testing.assert_allclose(y, contact_planes_numpy(x, planes, m), atol=1e-9)
    d = np.array([0.0, -1.0, 0.0])
    n = d + m[1, :3, :3] @ d
    n /= np.linalg.norm(n)
    j = rest[1, :3, 3]
    side = np.where(wts[:, 1] >= 0.5, 1.0, -1.0)
    dist = np.linalg.norm(v - j, axis=1) / planes.radius[0]
    s_rest = ((v - j) @ d) * side
    band = (dist > 1.5) & (dist < 3.3) & (s_rest > 0.02)
    assert band.sum() > 100
    assert (((x - j) @ n) * side)[band].min() < -0.01  # skinning folds them across
    assert (((y - j) @ n) * side)[band].min() >= GAP / 2 - 1e-12


def test_vertices_far_from_the_axis_are_left_alone():
    """The radial reach: a rigid child vertex beyond 1.25 x the radial reach from the bone's axis (a nose, not
    the limb) is not moved even where the bend carries it across the plane; the limb's own vertices are."""
    v, idx, wts, rest = tube()
    planes = JointPlanes.from_skin([-1, 0], rest, idx, wts, v)
    # the tube's ring lies 6 cm from the axis: the radial reach is FLESH_FACTOR x 6 cm
    assert planes.flesh[0] == pytest.approx(FLESH_FACTOR * 0.06, rel=1e-6)
    nose = np.array([[0.0, -0.42, 1.3 * planes.flesh[0]]])  # child side, just past the joint, far out in +Z
    v2 = np.concatenate([v, nose])
    idx2 = np.concatenate([idx, [[0, 1]]]).astype(np.int32)
    w2 = np.concatenate([wts, [[0.0, 1.0]]])
    planes2 = JointPlanes.from_skin([-1, 0], rest, idx2, w2, v2)
    m = bend(rest, -60.0)  # turns the child's +Z side up across the plane
    x = lbs_numpy(v2, idx2, w2, m).astype(np.float64)
    d = np.array([0.0, -1.0, 0.0])
    n = d + m[1, :3, :3] @ d
    n /= np.linalg.norm(n)
    assert (x[-1] - rest[1, :3, 3]) @ n < 0  # carried across
    y = contact_planes(x, planes2, m)
    np.testing.assert_array_equal(y[-1], x[-1])
    assert np.abs(y[:-1] - x[:-1]).max() > 0.001  # the limb itself is still kept apart


def test_rest_pose_is_unchanged_and_numpy_equals_numba():
    av = load_builtin_avatar()
    b, sk = av.body, av.skeleton
    planes = JointPlanes.from_skin(sk.parents, sk.rest, b.skin.indices, b.skin.weights, b.mesh.vertices)
    eye = np.tile(np.eye(4), (sk.n_bones, 1, 1))
    rest = b.mesh.vertices.astype(np.float64)
    np.testing.assert_array_equal(contact_planes(rest, planes, eye), rest)
    for name in ("crouch", "arms_forward"):
        m = named_pose(sk, name).skinning_matrices(sk)
        x = b.posed(m)
        got = contact_planes(x, planes, m)
        np.testing.assert_allclose(got, contact_planes_numpy(x, planes, m), atol=1e-9)
        assert np.abs(got - x).max() > 0.005


def test_frame_table_kernel_equals_its_numpy_reference():
    """The per-frame joint table from the Numba loop equals the one composed from ``posed`` (NumPy), in named poses
    and with a joint folded flat (its reach 0: inactive)."""
    av = load_builtin_avatar()
    b, sk = av.body, av.skeleton
    planes = JointPlanes.from_skin(sk.parents, sk.rest, b.skin.indices, b.skin.weights, b.mesh.vertices)
    for name in ("stand", "crouch", "twist", "arms_up"):
        m = named_pose(sk, name).skinning_matrices(sk)
        np.testing.assert_allclose(planes.frame_table(m), planes.frame_table_numpy(m), rtol=0, atol=1e-12)
    v, idx, wts, rest = tube()
    tube_planes = JointPlanes.from_skin([-1, 0], rest, idx, wts, v)
    flat = bend(rest, 180.0)
    table = tube_planes.frame_table(flat)
    assert table[0, 4] == 0.0
    np.testing.assert_allclose(table, tube_planes.frame_table_numpy(flat), rtol=0, atol=1e-12)
    deep = bend(rest, 150.0)
    assert tube_planes.frame_table(deep)[0, 4] > RING_FACTOR * tube_planes.radius[0]


def test_moving_the_scene_10_m_moves_the_result_10_m():
    v, idx, wts, rest = tube()
    planes = JointPlanes.from_skin([-1, 0], rest, idx, wts, v)
    m = bend(rest, 110.0)
    shifted = m.copy()
    shifted[:, :3, 3] += (10.0, -3.0, 7.0)
    y0 = contact_planes(lbs_numpy(v, idx, wts, m), planes, m)
    y1 = contact_planes(lbs_numpy(v, idx, wts, shifted), planes, shifted)
    np.testing.assert_allclose(y1 - (10.0, -3.0, 7.0), y0, atol=1e-6)


def test_contact_body_has_fewer_buried_vertices_in_knee_bend():
    from kisekae.qa.check import self_contact_pose

    av = load_builtin_avatar().with_body_contact()
    rec = self_contact_pose(av, named_pose(av.skeleton, "knee_bend"))
    assert rec["body_buried_plain"] == 62  # plain skinning, docs/contact.md
    assert rec["body_buried"] <= 5 and rec["body_self_crossings"] < rec["body_self_crossings_plain"] / 4
    # the plain avatar is untouched by with_body_contact
    plain = load_builtin_avatar()
    assert plain.body.deform is None


def test_contact_body_keeps_a_bent_elbow_out_of_the_upper_arm():
    """MakeHuman's elbows are bent 47 degrees at rest: the rest bisector (:func:`rest_normal`) keeps a 90 degree turn
    of the forearm clean (14 buried body vertices and 25 crossing edges across the child's direction alone)."""
    from kisekae.avatar.poses import pose_from_dict
    from kisekae.qa.check import self_contact_pose

    av = load_builtin_avatar().with_body_contact()
    pose = pose_from_dict(av.skeleton, {"lowerarm_r": {"world_axis": [1, 0, 0], "degrees": -90}})
    rec = self_contact_pose(av, pose)
    assert rec["body_buried_plain"] >= 10 and rec["body_self_crossings_plain"] >= 20
    assert rec["body_buried"] == 0 and rec["body_self_crossings"] == 0


def test_bad_input_gets_clear_errors():
    v, idx, wts, rest = tube()
    with pytest.raises(KisekaeError, match="blend ring"):
        JointPlanes.from_skin([-1, 0], rest, idx, np.stack([np.ones(len(v)), np.zeros(len(v))], 1), v)
    with pytest.raises(KisekaeError, match="ring_factor"):
        JointPlanes.from_skin([-1, 0], rest, idx, wts, v, ring_factor=1.0)
    bad = rest.copy()
    bad[1, 0, 0] = np.nan
    with pytest.raises(KisekaeError, match="rest matrices"):
        JointPlanes.from_skin([-1, 0], bad, idx, wts, v)
    planes = JointPlanes.from_skin([-1, 0], rest, idx, wts, v)
    m = bend(rest, 90.0)
    x = lbs_numpy(v, idx, wts, m)
    x[3, 1] = np.nan
    with pytest.raises(KisekaeError, match="posed body vertices"):
        contact_planes(x, planes, m)
    with pytest.raises(KisekaeError, match="gap"):
        contact_planes(lbs_numpy(v, idx, wts, m), planes, m, gap=-0.001)
    with pytest.raises(KisekaeError, match="points"):
        contact_planes(v[:10], planes, m)


def test_cli_contact_reports_both_bodies(capsys):
    from kisekae.cli import main

    assert main(["check", "--pose", "knee_bend", "--garment", "skirt", "--self-contact", "--contact"]) == 0
    out = capsys.readouterr().out
    assert "plain buried" in out and "body buried" in out


def test_demo_section_pictures_and_numbers(tmp_path):
    from kisekae.app.contact_report import CONTACT_POSES, CONTACT_VIEWS, body_contact_rows, section_body_contact

    av = load_builtin_avatar()
    assert CONTACT_VIEWS == ("knees", "hips", "armpits")  # issue 14: the knee, the groin and the armpit
    rows, records = body_contact_rows(av, size=(160, 90))
    assert len(rows) == len(CONTACT_POSES) and all(len(r) == 2 * len(CONTACT_VIEWS) for r in rows)
    for row in rows:  # plain and contact pictures differ where the contact moved the body
        assert row[0].shape == (90, 160, 3) and np.abs(row[0].astype(int) - row[1]).sum() > 0
    by = {(r["pose"], r["body"]): r for r in records}
    for pose in CONTACT_POSES:
        assert by[(pose, "contact")]["body_buried"] < by[(pose, "plain")]["body_buried"] / 2
        # the shape numbers beside them: plain skinning turns the fold's triangles inside out, the contact fewer
        assert by[(pose, "contact")]["body_inverted_faces"] < by[(pose, "plain")]["body_inverted_faces"]
        assert 0 < by[(pose, "plain")]["body_dihedral_p99_deg"] < 180
    html = section_body_contact({"avatar": av, "out": tmp_path})
    assert "body_contact.png" in html and (tmp_path / "img" / "body_contact.png").stat().st_size > 10_000
    assert "inside-out triangles" in html and "dihedral p99" in html


# -- the contact body as the default of the command line, and the rules that choose a skeleton's bone axes -----


def _check_records(capsys, tmp_path, name, *flags):
    from kisekae.cli import main

    out = tmp_path / f"{name}.json"
    assert main(["check", "--pose", "crouch", "--garment", "skirt", "--self-contact", *flags, "--json", str(out)]) == 0
    capsys.readouterr()
    import json

    return json.loads(out.read_text())[0]


def test_cli_default_is_the_contact_body_and_no_contact_is_plain(capsys, tmp_path):
    from kisekae.qa.check import check_pose

    default = _check_records(capsys, tmp_path, "default")
    plain = _check_records(capsys, tmp_path, "plain", "--no-contact")
    # the default body is the contact body: far fewer buried body vertices than plain skinning (docs/contact.md)
    assert default["body_buried_plain"] == 296 and default["body_buried"] < default["body_buried_plain"] / 2
    # --no-contact is plain skinning: the same plain numbers, and no second (plain) set beside them
    assert plain["body_buried"] == default["body_buried_plain"]
    assert plain["body_self_crossings"] == default["body_self_crossings_plain"]
    assert not [k for k in plain if k.endswith("_plain")]
    # and the garment numbers are those of the library's plain avatar and of its contact body
    av = load_builtin_avatar()
    pose = named_pose(av.skeleton, "crouch")
    assert plain["inside_count"] == check_pose(av, pose, ["skirt"])[0]["inside_count"] == 130
    assert default["inside_count"] == check_pose(apply_contact(av, GAP), pose, ["skirt"])[0]["inside_count"]
    assert default["inside_count"] < plain["inside_count"]
    # --contact GAP sets the gap: the same numbers as the library's contact body of that gap
    wide = _check_records(capsys, tmp_path, "wide", "--contact", "0.03")
    lib = apply_contact(av, 0.03)
    assert wide["inside_count"] == check_pose(lib, pose, ["skirt"])[0]["inside_count"] != default["inside_count"]
    assert wide["body_volume_change"] != default["body_volume_change"] and wide["body_buried_plain"] == 296


@pytest.mark.parametrize("argv", [
    ["check"], ["fit"], ["tension"], ["wound", "hit", "--ray", "0", "1", "1", "0", "0", "-1"], ["demo"], ["preview"],
])
def test_every_posing_command_takes_contact_flags(argv):
    from kisekae.cli import build_parser
    from kisekae.cli.common import contact_gap

    parser = build_parser()
    assert contact_gap(parser.parse_args(argv)) == GAP
    assert contact_gap(parser.parse_args(argv + ["--no-contact"])) is None
    assert contact_gap(parser.parse_args(argv + ["--contact"])) == GAP
    assert contact_gap(parser.parse_args(argv + ["--contact", "0.01"])) == 0.01


def test_contact_and_no_contact_together_is_a_clear_error(capsys):
    from kisekae.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["check", "--pose", "stand", "--contact", "0.01", "--no-contact"])
    assert exc.value.code == 2
    assert "argument --no-contact: not allowed with argument --contact" in capsys.readouterr().err


@pytest.mark.parametrize("gap", ["abc", "-0.001", "nan", "inf"])
def test_bad_gap_is_a_one_line_error(capsys, gap):
    from kisekae.cli import main

    assert main(["check", "--pose", "stand", "--garment", "skirt", f"--contact={gap}"]) == 2
    err = capsys.readouterr().err
    assert f"--contact: GAP must be a finite number of metres, at least 0, got '{gap}'" in err
    assert "Traceback" not in err


def test_contact_gap_setting():
    from kisekae.avatar.contact import contact_gap

    assert contact_gap(True) == GAP and contact_gap(False) is None and contact_gap(None) is None
    assert contact_gap(0) == 0.0 and contact_gap(0.02) == 0.02 and isinstance(contact_gap(0), float)
    for bad in ("yes", -0.001, float("nan"), float("inf"), [0.01]):
        with pytest.raises(KisekaeError, match=r"^where: must be true .* false .* or a gap in metres"):
            contact_gap(bad, "where")


def test_rigid_body_keeps_plain_skinning(capsys):
    from argparse import Namespace
    from dataclasses import replace

    from kisekae.avatar import SkinnedMesh, Skin
    from kisekae.avatar.contact import NoBlendedJoint, apply_contact

    av = load_builtin_avatar()
    rigid = Skin(av.body.skin.indices[:, :1].copy(), np.ones((av.body.mesh.n_vertices, 1)))
    body = SkinnedMesh(av.body.mesh, rigid)
    stiff = replace(av, body=body)
    with pytest.raises(NoBlendedJoint, match="no joint has a blend ring"):
        stiff.with_body_contact()
    assert apply_contact(stiff, GAP) is stiff and apply_contact(av, None) is av
    from kisekae.avatar.contact import joint_contact_of

    assert joint_contact_of(apply_contact(av, 0.01).body.deform).gap == 0.01
    assert joint_contact_of(apply_contact(av, 0.01, correctives=None).body.deform).gap == 0.01
    assert apply_contact(av, 0.01, correctives=None, part_contact=False).body.deform.gap == 0.01
    # the command line says so on stderr, and goes on with plain skinning
    from kisekae.cli.common import with_contact

    assert with_contact(stiff, Namespace(contact=None, no_contact=False)) is stiff
    assert "no joint of the body blends two bones; plain skinning" in capsys.readouterr().err


def test_world_aligned_joints_take_their_direction_from_head_to_tail():
    """VRM joints are aligned with the world axes, so a bone's +Y axis is not its direction: the planes must
    come out as those of the same body whose +Y axes follow the bones (the built-in rig)."""
    from dataclasses import replace

    from kisekae.avatar import Skeleton
    from kisekae.avatar.contact import bone_directions

    av = load_builtin_avatar()
    sk = av.skeleton
    ours = bone_directions(sk.rest, sk.parents, sk.tails)
    np.testing.assert_array_equal(ours, sk.rest[:, :3, 1])  # the built-in rig keeps its +Y axes, bit for bit
    world = sk.rest.copy()
    world[:, :3, :3] = np.eye(3)
    vrm_like = replace(av, skeleton=Skeleton(sk.names, sk.parents, world, sk.tails))
    a, b = av.with_body_contact(), vrm_like.with_body_contact()
    np.testing.assert_allclose(b.body.deform.planes.direction, a.body.deform.planes.direction, atol=1e-5)
    # the same skinning matrices give the same contact body (the deformation does not depend on the rest frames)
    for name in ("crouch", "arms_up"):
        m = named_pose(sk, name).skinning_matrices(sk)
        x = av.body.skinned(m)
        np.testing.assert_allclose(b.body.deform(x, m), a.body.deform(x, m), atol=1e-6)
    # without tails, the children's heads give the direction (the mean head for a bone with several)
    no_tails = bone_directions(world, sk.parents)
    kids = [np.flatnonzero(sk.parents == c) for c in range(sk.n_bones)]
    for c in [c for c in range(sk.n_bones) if len(kids[c]) == 1]:
        d = sk.rest[kids[c][0], :3, 3] - sk.rest[c, :3, 3]
        np.testing.assert_allclose(no_tails[c], d / np.linalg.norm(d), atol=1e-6)


def test_contact_body_buries_no_more_than_plain_skinning_in_the_packaged_clip():
    """The clip's head nods: with no radial reach the neck joint's plane pushed the face (eyes against lids),
    99-104 buried vertices per frame against plain skinning's 2-45. The radial reach leaves the face alone."""
    from kisekae.io.bvh import load_bvh
    from kisekae.qa.check import self_contact_pose
    from kisekae.data import sample_path

    av = load_builtin_avatar().with_body_contact()
    frames = load_bvh(sample_path("cmu_35_01_excerpt.bvh"), av.skeleton).poses
    recs = [self_contact_pose(av, p) for p in frames]
    assert sum(r["body_buried"] for r in recs) <= sum(r["body_buried_plain"] for r in recs)
    for r in recs:
        assert r["body_buried"] <= r["body_buried_plain"] + 5


def legs(spread=0.09, radius=0.06, n_rings=41, n_around=24):
    """Two tubes hanging from a pelvis bone (0) at the origin: bone 1 heads the left tube at x = +spread, bone 2
    the right one at x = -spread; each tube blends from the pelvis over its top 6 cm."""
    y = -np.linspace(0.0, 0.5, n_rings)
    a = np.linspace(0, 2 * np.pi, n_around, endpoint=False)
    ring = np.stack([np.cos(a) * radius, np.zeros_like(a), np.sin(a) * radius], 1)
    verts, idx, wts = [], [], []
    for bone, x0 in ((1, spread), (2, -spread)):
        v = (ring[None] + np.array([x0, 0.0, 0.0])).repeat(n_rings, 0).reshape(n_rings, n_around, 3)
        v[..., 1] = y[:, None]
        v = v.reshape(-1, 3)
        w = np.clip(-v[:, 1] / 0.06, 0, 1)
        verts.append(v)
        idx.append(np.stack([np.zeros(len(v)), np.full(len(v), bone)], 1))
        wts.append(np.stack([1 - w, w], 1))
    rest = np.tile(np.eye(4), (3, 1, 1))
    rest[:, :3, :3] = np.array([[1, 0, 0], [0, -1, 0], [0, 0, -1]])
    rest[1, :3, 3] = (spread, 0, 0)
    rest[2, :3, 3] = (-spread, 0, 0)
    return np.concatenate(verts), np.concatenate(idx).astype(np.int32), np.concatenate(wts), rest


def test_pair_plane_keeps_two_limbs_on_their_side_of_the_midline():
    """Two legs turned in towards each other by 15 degrees cross the midline under skinning; the pair plane
    (half-way between the heads, normal along the line between them, carried by the common ancestor) keeps each
    leg's vertices within its reach on their own side, moves them along that normal only, and leaves vertices
    beyond the reach alone."""
    from kisekae.avatar.contact import _common_ancestor

    v, idx, wts, rest = legs()
    parents = [-1, 0, 0]
    plain = JointPlanes.from_skin(parents, rest, idx, wts, v)
    planes = JointPlanes.from_skin(parents, rest, idx, wts, v, pairs=[(1, 2)])
    assert _common_ancestor(parents, 1, 2) == 0
    assert len(planes.child) == len(plain.child) + 1
    j = len(planes.child) - 1
    assert planes.child[j] == planes.parent[j] == 0
    np.testing.assert_allclose(planes.centre[j], 0.0, atol=1e-12)
    np.testing.assert_allclose(planes.direction[j], (1, 0, 0), atol=1e-12)
    assert planes.radius[j] == pytest.approx(0.18)
    m = np.tile(np.eye(4), (3, 1, 1))
    for bone, sign in ((1, -1.0), (2, 1.0)):  # each leg turns about Z towards the midline
        r = axis_angle_matrix((0.0, 0.0, 1.0), np.radians(15.0 * sign))
        h = rest[bone, :3, 3]
        m[bone, :3, :3] = r
        m[bone, :3, 3] = h - r @ h
    x = lbs_numpy(v, idx, wts, m).astype(np.float64)
    y = contact_planes(x, planes, m)
    np.testing.assert_allclose(y, contact_planes_numpy(x, planes, m), atol=1e-9)
    side = np.where(idx[:, 1] == 1, 1.0, -1.0)
    dist = np.linalg.norm(v, axis=1) / 0.18
    near = (dist <= 1.0) & (v[:, 0] * side >= 0.01 + GAP / 2)
    assert near.sum() > 100
    assert (x[near, 0] * side[near]).min() < -0.01  # skinning put them across the midline
    assert (y[near, 0] * side[near]).min() >= GAP / 2 - 1e-12
    far = dist >= RING_FACTOR
    assert far.sum() > 100
    np.testing.assert_array_equal(y[far], x[far])
    # without the pair the legs stay crossed
    assert (contact_planes(x, plain, m)[near, 0] * side[near]).min() < -0.01
    # rest pose unchanged
    eye = np.tile(np.eye(4), (3, 1, 1))
    np.testing.assert_array_equal(contact_planes(v.astype(np.float64), planes, eye), v)


def test_for_vertices_gives_another_mesh_the_same_joints():
    """A second skinned mesh (a garment) gets the body's joint table and its own slots and sides: for the body's own
    vertices it reproduces the body's tables exactly."""
    v, idx, wts, rest = legs()
    planes = JointPlanes.from_skin([-1, 0, 0], rest, idx, wts, v, pairs=[(1, 2)])
    again = planes.for_vertices([-1, 0, 0], v, idx, wts)
    for name in ("slots", "side", "rest"):
        np.testing.assert_array_equal(getattr(again, name), getattr(planes, name))
    shell = v * np.array([1.02, 1.0, 1.02])  # a layer 2 % further out, skinned the same
    cloth = planes.for_vertices([-1, 0, 0], shell, idx, wts)
    assert cloth.child is planes.child and cloth.centre is planes.centre
    np.testing.assert_array_equal(cloth.side, planes.side)
    with pytest.raises(KisekaeError, match="skin"):
        planes.for_vertices([-1, 0, 0], shell[:-1], idx, wts)
    with pytest.raises(KisekaeError, match="bones"):
        planes.for_vertices([-1], shell, np.zeros_like(idx), wts)


def test_neck_joints_reach_less_far_across_and_leave_the_face_alone(avatar_cmu):
    """The neck and head joints get NECK_FLESH_FACTOR ring medians of radial reach instead of FLESH_FACTOR; on the
    packaged clip's first frame (the neck bent 21 degrees) the wider reach pushed parts of the face unevenly: 32
    buried face vertices with the contact body, none with plain skinning. Now none."""
    from kisekae.avatar.contact import FLESH_FACTOR, NECK_FLESH_FACTOR, bone_directions, neck_bones
    from kisekae.avatar.skeleton import Skeleton
    from kisekae.data import sample_path
    from kisekae.io.bvh import load_bvh
    from kisekae.qa.check import self_contact_pose

    sk = avatar_cmu.skeleton
    assert {sk.names[b] for b in neck_bones(sk)} == {"Neck", "Neck1", "Head"}
    game = load_builtin_avatar().skeleton
    assert {game.names[b] for b in neck_bones(game)} == {"neck_01", "head"}
    plain = Skeleton(["a", "b"], np.array([-1, 0]), np.tile(np.eye(4), (2, 1, 1)))
    assert neck_bones(plain) == set()
    b = avatar_cmu.body
    args = (sk.parents, sk.rest, b.skin.indices, b.skin.weights, b.mesh.vertices)
    kw = {"directions": bone_directions(sk.rest, sk.parents, sk.tails)}
    wide = JointPlanes.from_skin(*args, **kw)
    narrow = JointPlanes.from_skin(*args, neck=neck_bones(sk), **kw)
    is_neck = np.isin(narrow.child, list(neck_bones(sk)))
    assert is_neck.sum() >= 2
    np.testing.assert_allclose(narrow.flesh[is_neck], wide.flesh[is_neck] * NECK_FLESH_FACTOR / FLESH_FACTOR)
    np.testing.assert_array_equal(narrow.flesh[~is_neck], wide.flesh[~is_neck])
    av = apply_contact(avatar_cmu, GAP)
    pose = load_bvh(sample_path("cmu_35_01_excerpt.bvh"), sk, "0").poses[0]
    rec = self_contact_pose(av, pose)
    head = np.argmax(b.skin.dense(sk.n_bones), axis=1) == sk.index["Head"]
    assert not (rec["buried"] & head).any()


def test_shoulder_planes_leave_the_head_to_the_neck_chain(avatar_cmu):
    """The shoulder (clavicle) joints' blend rings reach up the neck, so the lower head, whose skin gives a few per
    cent to the chest bone, took slots on their parent side, and a shrug pushed it up to 15 mm while its neighbours
    (carried by the head alone) stayed: 37 crossing edges in the face on the packaged clip's first frame, none with
    plain skinning. With the neck chain given, vertices the chain carries get no parent-side slot of a joint outside
    the chain (joints above it keep the head on their child side); without it, they do."""
    from kisekae.avatar.contact import bone_directions, neck_bones
    from kisekae.data import sample_path
    from kisekae.io.bvh import load_bvh
    from kisekae.qa.check import body_self_contact

    sk = avatar_cmu.skeleton
    b = avatar_cmu.body
    args = (sk.parents, sk.rest, b.skin.indices, b.skin.weights, b.mesh.vertices)
    kw = {"directions": bone_directions(sk.rest, sk.parents, sk.tails)}
    neck = neck_bones(sk)
    planes = JointPlanes.from_skin(*args, neck=neck, **kw)
    free = JointPlanes.from_skin(*args, **kw)
    dense = b.skin.dense(sk.n_bones)
    carried = dense[:, [sk.index[n] for n in ("Neck", "Neck1", "Head")]].sum(axis=1) >= 0.5
    shoulders = [j for j in range(len(planes.child)) if sk.names[planes.child[j]] in ("LeftShoulder", "RightShoulder")]
    assert len(shoulders) == 2

    def parent_side(p, joints):
        return ((np.isin(p.slots, joints)) & (p.side < 0)).any(axis=1)

    assert parent_side(free, shoulders)[carried].sum() > 50
    assert not parent_side(planes, shoulders)[carried].any()
    # vertices outside the chain's subtree keep every slot; the joints of the chain and above it keep theirs (a freed
    # slot may go to the next nearest joint)
    np.testing.assert_array_equal(planes.slots[~carried], free.slots[~carried])
    above = [j for j in range(len(planes.child)) if sk.names[planes.child[j]] in ("Neck", "Neck1", "Head", "Spine1")]
    for j in above:
        assert not ((free.slots == j).any(axis=1) & ~(planes.slots == j).any(axis=1)).any()
    # the packaged clip's first frame: no body edge of the head crosses the body (plain skinning has none either)
    pose = load_bvh(sample_path("cmu_35_01_excerpt.bvh"), sk, "0").poses[0]
    m = pose.skinning_matrices(sk)
    contact = body_self_contact(avatar_cmu)
    crossing = contact.edges[contact.self_crossings(apply_contact(avatar_cmu, GAP).body.posed(m))]
    assert not carried[crossing].any()
    crossing_free = contact.edges[contact.self_crossings(contact_planes(b.skinned(m), free, m))]
    assert carried[crossing_free].any(axis=1).sum() > 10


def test_branch_bones_take_slots_after_the_hinges(avatar_cmu):
    """On the cmu_mb rig the hip branch bones (LHipJoint, RHipJoint: heads at the pelvis centre) are marked and a vertex
    gives them slots only after its other hinges. With their planes first, the deep squat's thighs sank into the belly
    (25 buried, 117 crossings); now about half that (docs/contact.md, "The cmu_mb rig in deep poses"). The slots are
    the same for the avatar read back from a glb file, whose skin is rounded to float32 (the two branches share their
    centre, so an unrounded tie between them followed that noise)."""
    import json
    from pathlib import Path

    from kisekae.avatar.contact import BRANCH, apply_contact, contact_gap, joint_contact_of
    from kisekae.avatar.poses import pose_from_dict
    from kisekae.qa.check import self_contact_pose

    av = apply_contact(avatar_cmu, contact_gap(True))
    planes = joint_contact_of(av.body.deform).planes
    sk = av.skeleton
    marked = sorted(sk.names[int(planes.child[j])] for j in range(len(planes.child)) if planes.limbs[j, 0] == BRANCH)
    assert marked == ["LHipJoint", "RHipJoint"]
    spec = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "poses" / "deep_squat.json").read_text())
    r = self_contact_pose(av, pose_from_dict(sk, spec, "deep_squat"))
    assert r["body_buried"] <= 17 and r["body_self_crossings"] <= 95, (r["body_buried"], r["body_self_crossings"])


def test_body_poses_benchmark_compares_the_child_planes_with_the_default(capsys):
    """``benchmarks/bench_body_poses.py``: the same pose measured on plain skinning, the previous planes
    (``rest_bend_limit=0`` through :meth:`Avatar.with_body_contact`) and the default body, in one run."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_body_poses

    (rec,) = bench_body_poses.run(("game_engine",), ["forearm_90"])
    assert rec["default"]["body_buried"] == 0 and rec["default"]["body_self_crossings"] == 0
    assert rec["child planes"]["body_buried"] >= 10 and rec["child planes"]["body_self_crossings"] >= 20
    assert rec["plain"]["body_buried"] > rec["child planes"]["body_buried"]
    assert 0 < rec["default_max_move_m"] < 0.05
    assert bench_body_poses.main(["--rig", "game_engine", "--poses", "stand"]) == 0
    assert "0 / 0" in capsys.readouterr().out

"""Pose-space correctives of the body (kisekae.avatar.correctives): features from their formula, the ridge fit
recovering a known model, the kernel against the NumPy reference, the rest pose, invariance, files and refusals,
and the packaged bake against the joint planes alone on the named poses."""

import json
import zipfile

import numpy as np
import pytest

from kisekae.avatar import correctives as C
from kisekae.avatar.poses import named_pose, range_of_motion_poses
from kisekae.errors import KisekaeError


def _angle(a, b):
    """Rotation angle between two unit quaternions, straight from the definition (the relative rotation's angle)."""
    from scipy.spatial.transform import Rotation

    return Rotation.from_quat(a).inv().__mul__(Rotation.from_quat(b)).magnitude()


def test_features_follow_the_formula_and_vanish_at_rest_and_far_away():
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(1)
    centres = np.concatenate([[[0, 0, 0, 1.0]], Rotation.random(3, random_state=2).as_quat()])[None]
    sigma = np.array([0.7])
    one = np.array([0, 0, 0, 1.0])
    for q in Rotation.random(5, random_state=3).as_quat():
        got = C.joint_features(q[None], centres, sigma)[0]
        g = lambda a, b: np.exp(-(_angle(a, b) / 0.7) ** 2)  # noqa: E731
        want = [g(q, c) - g(q, one) * g(c, one) for c in centres[0]]
        np.testing.assert_allclose(got, want, atol=1e-9)
    assert np.all(C.joint_features(one[None], centres, sigma) == 0.0)
    # a rotation far from every centre gets (almost) nothing, not the nearest centre's value
    far = Rotation.from_rotvec([0, np.pi, 0]).as_quat()
    near_c = np.concatenate([[[0, 0, 0, 1.0]], Rotation.from_rotvec(rng.normal(0, 0.1, (3, 3))).as_quat()])[None]
    assert np.abs(C.joint_features(far[None], near_c, np.array([0.3]))).max() < 1e-6


def _synthetic(avatar, n=40, seed=5):
    """Range-of-motion poses and the features the fit will use (from a first fit on zero offsets)."""
    sk = avatar.skeleton
    mats = np.array([p.skinning_matrices(sk) for p in range_of_motion_poses(sk, n, seed=seed)], dtype=np.float64)
    zero = np.zeros((n, avatar.body.mesh.n_vertices, 3), np.float32)
    zero[:, 0, 0] = 1e-3 * np.arange(n)  # one moved vertex so the first fit has something to fit
    first = C.fit_correctives(avatar, mats, zero, centres=6)
    q = np.array([C.joint_quaternions(sk, m) for m in mats])
    phi = C.joint_features(q[:, first.joints], first.centres, first.sigma)
    return mats, phi, first


def test_arm_joints_get_their_own_width(avatar, avatar_cmu):
    """The joints that the arms-at-the-sides poses turn take ``arm_sigma`` times their centres' median spacing,
    every other joint ``sigma`` times it; on either rig."""
    sk = avatar.skeleton
    arms = C.arm_joints(sk)
    assert {sk.names[b] for b in arms} == {f"{p}_{s}" for p in ("clavicle", "upperarm", "lowerarm") for s in "lr"}
    assert len(C.arm_joints(avatar_cmu.skeleton)) == 6
    mats, _, _ = _synthetic(avatar, n=40)
    d = np.zeros((40, avatar.body.mesh.n_vertices, 3), np.float32)
    d[:, 0, 0] = 1e-3 * np.arange(40)
    one = C.fit_correctives(avatar, mats, d, centres=6, sigma=1.0, arm_sigma=1.0)
    two = C.fit_correctives(avatar, mats, d, centres=6, sigma=1.0, arm_sigma=2.0)
    np.testing.assert_array_equal(one.centres, two.centres)
    want = np.array([2.0 if int(j) in arms else 1.0 for j in one.joints])
    assert (want == 2.0).sum() >= 4  # the samples turn the arms
    np.testing.assert_allclose(two.sigma / one.sigma, want, rtol=1e-12)
    assert two.settings["arm_sigma"] == 2.0 and two.settings["sigma"] == 1.0
    with pytest.raises(KisekaeError, match="arm_sigma"):
        C.fit_correctives(avatar, mats, d, arm_sigma=0.0)


def test_fit_recovers_a_known_corrective_model(avatar):
    """Offsets made by a known linear model of the features of the joints near each vertex are fitted back
    exactly (ridge 0), and predicted at poses the fit never saw."""
    mats, phi, first = _synthetic(avatar, n=120)  # more samples than the 8 joints x 6 features of a hip vertex
    near = C._near_joints(avatar.skeleton, avatar.body.skin, first.joints)
    n = avatar.body.mesh.n_vertices
    rng = np.random.default_rng(0)
    # thin parts (the fingers) get their fitted offsets smoothed over the one-ring (tests/test_thin_parts.py)
    from kisekae.avatar.thin_parts import thin_part_vertices

    thin = thin_part_vertices(avatar.body.mesh.vertices, avatar.body.skin)
    verts = [i for i in rng.choice(n, 300, replace=False) if near[i] and not thin[i]][:100]
    truth = {i: rng.normal(0, 0.01, (len(near[i]), 6, 3)) for i in verts}
    d = np.zeros((len(mats), n, 3))
    for i in verts:
        d[:, i] = np.einsum("sjk,jkc->sc", phi[:, list(near[i])], truth[i])
    fit = C.fit_correctives(avatar, mats, d.astype(np.float32), centres=6, ridge=0.0, active=1e-7)
    np.testing.assert_array_equal(fit.joints, first.joints)
    test = range_of_motion_poses(avatar.skeleton, 3, seed=99)
    for pose in test:
        m = pose.skinning_matrices(avatar.skeleton)
        f = fit.features(avatar.skeleton, m)
        got = C.corrective_offsets_numpy(fit, f)
        for i in verts:
            want = np.einsum("jk,jkc->c", f[list(near[i])], truth[i])
            np.testing.assert_allclose(got[i], want, atol=2e-6)
    untouched = np.setdiff1d(np.flatnonzero(~thin), verts)
    assert np.all(np.diff(fit.vertex_ptr)[untouched] == 0)


def test_kernel_equals_reference_and_rest_pose_is_unchanged(avatar):
    mats, _, _ = _synthetic(avatar, n=12)
    rng = np.random.default_rng(3)
    d = rng.normal(0, 0.004, (len(mats), avatar.body.mesh.n_vertices, 3)).astype(np.float32)
    fit = C.fit_correctives(avatar, mats, d, centres=5)
    f = rng.normal(0, 1, fit.centres.shape[:2])
    np.testing.assert_allclose(C.corrective_offsets(fit, f), C.corrective_offsets_numpy(fit, f), atol=1e-12)
    deform = C.BodyCorrectives(fit, avatar.skeleton, avatar.body.skin)
    rest = np.tile(np.eye(4), (avatar.skeleton.n_bones, 1, 1))
    x = avatar.body.skinned(rest)
    assert np.array_equal(deform(x, rest), x.astype(np.float64))
    with pytest.raises(KisekaeError, match="features"):
        C.corrective_offsets(fit, f[:, :2])


def test_joint_major_kernel_equals_the_entries_summed_per_vertex():
    """The kernel walks the entries joint by joint (PoseCorrectives.by_joint); summed per vertex by hand, in the
    stored vertex order, they must give the same offsets, with dead joints (all features 0) skipped exactly."""
    rng = np.random.default_rng(11)
    n, j, k = 40, 5, 6
    counts = rng.integers(0, 4, n)
    entry_joint = np.concatenate([np.sort(rng.choice(j, c, replace=False)) for c in counts]).astype(np.int32)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    coef = rng.normal(0, 0.01, (len(entry_joint), k, 3)).astype(np.float32)
    cen = np.tile([0, 0, 0, 1.0], (j, k, 1))
    c = C.PoseCorrectives(np.arange(j), cen, np.ones(j), ptr, entry_joint, coef, [f"b{i}" for i in range(j)], "x", {})
    c.check()
    joint_ptr, entry_vertex, coef_t = c.by_joint
    assert joint_ptr[-1] == len(entry_joint) and np.all(np.diff(joint_ptr) == np.bincount(entry_joint, minlength=j))
    f = rng.normal(0, 1, (j, k))
    f[2] = 0.0  # a dead joint
    want = np.zeros((n, 3))
    for i in range(n):
        for e in range(ptr[i], ptr[i + 1]):
            want[i] += f[entry_joint[e]] @ coef[e].astype(np.float64)
    for jj in range(j):  # the table's runs hold exactly each joint's entries, transposed
        rows = np.flatnonzero(entry_joint == jj)
        np.testing.assert_array_equal(coef_t[joint_ptr[jj]:joint_ptr[jj + 1]], coef[rows].transpose(0, 2, 1))
        np.testing.assert_array_equal(entry_vertex[joint_ptr[jj]:joint_ptr[jj + 1]],
                                      np.searchsorted(ptr, rows, side="right") - 1)
    np.testing.assert_allclose(C.corrective_offsets(c, f), want, atol=1e-14)
    assert np.all(C.corrective_offsets(c, np.zeros((j, k))) == 0.0)


def test_skinned_offsets_equal_skinning_the_offset_rest_mesh(avatar):
    from kisekae.avatar.skinning import lbs_numpy

    body = avatar.body
    m = named_pose(avatar.skeleton, "crouch").skinning_matrices(avatar.skeleton)
    d = np.random.default_rng(0).normal(0, 0.01, (body.mesh.n_vertices, 3))
    a = lbs_numpy(body.mesh.vertices + d, body.skin.indices, body.skin.weights, m, dtype=np.float64)
    b = lbs_numpy(body.mesh.vertices, body.skin.indices, body.skin.weights, m, dtype=np.float64)
    np.testing.assert_allclose(b + C.skinned_offsets(body.skin, m, d), a, atol=1e-9)
    d[::3] = 0.0  # the kernel copies vertices without an offset
    np.testing.assert_allclose(C.add_skinned_offsets(b, body.skin, m, d), b + C.skinned_offsets(body.skin, m, d),
                               atol=1e-12)


@pytest.fixture(scope="module")
def builtin(avatar):
    return C.load_correctives(C.builtin_correctives_path("game_engine"))


def test_packaged_bake_matches_the_builtin_body(avatar, builtin):
    assert builtin.mesh_hash == C.mesh_hash(avatar.body.mesh.vertices, avatar.body.mesh.faces, avatar.body.skin)
    assert builtin.settings["poses"] == "range_of_motion" and builtin.settings["samples"] >= 300
    names = {avatar.skeleton.names[j] for j in builtin.joints}
    assert {"thigh_l", "calf_r", "spine_01", "lowerarm_l"} <= names and "head" not in names
    with pytest.raises(KisekaeError, match="no packaged correctives"):
        C.builtin_correctives_path("no_such_rig")


def test_packaged_bake_keeps_body_parts_apart_in_poses_it_never_saw(avatar, builtin):
    """The named poses are not among the range-of-motion samples. Joint planes alone leave 44 buried body
    vertices in the crouch and 23 in the sit (docs/contact.md); with the correctives before them, a handful."""
    from kisekae.qa.check import self_contact_pose

    planes = avatar.with_body_contact()
    both = C.with_correctives(planes, builtin)
    for name, most in (("crouch", 10), ("sit", 6), ("knee_bend", 2)):
        pose = named_pose(avatar.skeleton, name)
        a, b = self_contact_pose(planes, pose), self_contact_pose(both, pose)
        assert b["body_buried"] <= most and b["body_buried"] < a["body_buried"], (name, a["body_buried"], b["body_buried"])
        assert b["body_self_crossings"] < a["body_self_crossings"] / 2
        assert np.abs(both.body.posed(pose.skinning_matrices(avatar.skeleton))
                      - planes.body.skinned(pose.skinning_matrices(avatar.skeleton))).max() < 0.09
    stand = named_pose(avatar.skeleton, "stand").skinning_matrices(avatar.skeleton)
    np.testing.assert_array_equal(both.body.posed(stand), planes.body.posed(stand))


def test_packaged_bake_frees_arms_hanging_at_the_sides(avatar, builtin):
    """Arms hanging straight down (the rest A-pose's upper arms turned down by their rest elevation) bury the
    upper arm in the ribs under skinning. Buried / crossings: the planes alone 74 / 116; a bake without the
    arms-at-the-sides training poses 47 / 82; one with them 36 / 74; with them and the arms' wider bases
    (``arm_sigma``, the packaged bake) 9 / 12 (docs/contact.md, "Basis width")."""
    from kisekae.avatar.poses import Pose, Z, resolve_bone, rest_elevation
    from kisekae.qa.check import self_contact_pose

    assert builtin.settings.get("arm_poses", 0) >= 100 and builtin.settings["arm_sigma"] > builtin.settings["sigma"]
    sk = avatar.skeleton
    pose = Pose.rest(sk, "arms_hanging")
    for name in ("upperarm_l", "upperarm_r"):
        b = resolve_bone(sk, name, "test")
        pose.rotate_world(sk, b, Z, -rest_elevation(sk, b, Z))
    planes = avatar.with_body_contact()
    a = self_contact_pose(planes, pose)
    b = self_contact_pose(C.with_correctives(planes, builtin), pose)
    assert b["body_buried"] < 0.3 * a["body_buried"], (a["body_buried"], b["body_buried"])
    assert b["body_self_crossings"] < 0.3 * a["body_self_crossings"], (a["body_self_crossings"], b["body_self_crossings"])


def test_training_poses_add_arms_at_the_sides_with_the_rest_of_the_body_at_rest(avatar):
    from kisekae.avatar.poses import ARMS_AT_SIDES, Z, resolve_bone, rest_elevation

    sk = avatar.skeleton
    poses = C.training_poses(sk, 4, 30, seed=3)
    assert len(poses) == 34
    rom = range_of_motion_poses(sk, 4, seed=3)
    for p, q in zip(poses[:4], rom):
        np.testing.assert_array_equal(p.skinning_matrices(sk), q.skinning_matrices(sk))
    moved = {resolve_bone(sk, e[0], "test") for e in ARMS_AT_SIDES}
    arm = resolve_bone(sk, "upperarm_l", "test")
    child = int(np.flatnonzero(np.asarray(sk.parents) == arm)[0])
    def chain(b):
        while b >= 0:
            yield b
            b = int(sk.parents[b])

    down = []
    for p in poses[4:]:
        m = p.skinning_matrices(sk)
        for b in range(sk.n_bones):
            if not any(a in moved for a in chain(b)):
                np.testing.assert_allclose(m[b], np.eye(4), atol=1e-12)
        d = (m[child] @ sk.rest[child][:, 3])[:3] - (m[arm] @ sk.rest[arm][:, 3])[:3]
        down.append(np.degrees(np.arctan2(np.hypot(d[0], d[2]), -d[1])))  # the upper arm's angle from hanging
    assert max(down) < 70.0 and np.median(down) < 35.0  # the range of motion raises them to 120°
    assert rest_elevation(sk, arm, Z) > 30.0  # the rest pose holds the arms out (A-pose): hanging is a turn away
    assert len(C.training_poses(sk, 2, 0)) == 2
    for bad in (-1, 1.5, True):
        with pytest.raises(KisekaeError, match="corrective arm poses"):
            C.training_poses(sk, 4, bad)


def test_same_body_wherever_it_stands(avatar, builtin):
    from scipy.spatial.transform import Rotation

    sk = avatar.skeleton
    both = C.with_correctives(avatar, builtin)
    m = named_pose(sk, "sit").skinning_matrices(sk).astype(np.float64)
    move = np.eye(4)
    move[:3, :3] = Rotation.from_rotvec([0.3, 1.1, -0.2]).as_matrix()
    move[:3, 3] = (10.0, 2.0, -7.0)
    a = both.body.deform(avatar.body.skinned(m), m)
    mm = move @ m
    b = both.body.deform(avatar.body.skinned(mm), mm)
    np.testing.assert_allclose(b, a @ move[:3, :3].T + move[:3, 3], atol=2e-5)  # float32 skinning of 10 m
    np.testing.assert_allclose(builtin.features(sk, mm), builtin.features(sk, m), atol=1e-6)


def test_save_load_round_trip_and_refusals(avatar, tmp_path):
    mats, _, _ = _synthetic(avatar, n=8)
    d = np.random.default_rng(2).normal(0, 0.003, (len(mats), avatar.body.mesh.n_vertices, 3)).astype(np.float32)
    fit = C.fit_correctives(avatar, mats, d, centres=4)
    p = C.save_correctives(fit, tmp_path / "c.npz")
    back = C.load_correctives(p)
    for k in ("joints", "centres", "sigma", "vertex_ptr", "entry_joint", "coefficients"):
        np.testing.assert_array_equal(getattr(back, k), getattr(fit, k))
    assert back.mesh_hash == fit.mesh_hash and back.bone_names == list(avatar.skeleton.names)

    def rewrite(name, **change):
        with np.load(p) as z:
            arrays = {k: z[k] for k in z.files}
        arrays.update(change)
        q = tmp_path / name
        np.savez(q, **arrays)
        return q

    bad = {
        "nan.npz": dict(coefficients=np.full_like(fit.coefficients, np.nan)),
        "ptr.npz": dict(vertex_ptr=fit.vertex_ptr[::-1].copy()),
        "slot.npz": dict(entry_joint=np.full_like(fit.entry_joint, 999)),
        "version.npz": dict(header=np.array(json.dumps({"format": "kisekae-correctives", "version": 99}))),
        "header.npz": dict(header=np.array("{not json")),
        "quat.npz": dict(centres=fit.centres * 2),
    }
    for name, change in bad.items():
        with pytest.raises(KisekaeError, match=name):
            C.load_correctives(rewrite(name, **change))
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(KisekaeError, match="junk.npz"):
        C.load_correctives(tmp_path / "junk.npz")
    with zipfile.ZipFile(tmp_path / "empty.npz", "w"):
        pass
    with pytest.raises(KisekaeError, match="missing arrays"):
        C.load_correctives(tmp_path / "empty.npz")
    # another body: a shaped avatar has other rest positions
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.shape import parse_body

    heavy = load_builtin_avatar(shape=parse_body("weight=0.9", "--body"))
    with pytest.raises(KisekaeError, match="another body"):
        C.with_correctives(heavy, back)


def test_apply_contact_uses_the_packaged_bake_only_where_it_fits(avatar, builtin):
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.contact import BodyContact, apply_contact
    from kisekae.avatar.shape import parse_body

    from kisekae.avatar.part_contact import PartContact, inner_deform

    auto = apply_contact(avatar, 0.004)
    assert isinstance(auto.body.deform, PartContact)  # the part contact last
    auto = inner_deform(auto.body.deform)
    assert isinstance(auto, C.BodyCorrectives) and isinstance(auto.then, BodyContact)
    assert apply_contact(avatar, None).body.deform is None  # plain skinning stays plain
    assert isinstance(inner_deform(apply_contact(avatar, 0.004, correctives=None).body.deform), BodyContact)
    assert isinstance(apply_contact(avatar, 0.004, correctives=None, part_contact=False).body.deform, BodyContact)
    # a MakeHuman shape of the built-in body takes its correctives over (same vertices, bones and weights) ...
    shaped = load_builtin_avatar(shape=parse_body("weight=0.8", "--body"))
    got = inner_deform(apply_contact(shaped, 0.004).body.deform)
    assert isinstance(got, C.BodyCorrectives) and got.correctives.mesh_hash == builtin.mesh_hash
    with pytest.raises(KisekaeError, match="another body"):  # an explicit bake must hash as its body
        apply_contact(shaped, 0.004, correctives=builtin)
    # ... a body with other weights does not
    from dataclasses import replace

    from kisekae.avatar.skinning import Skin

    n = avatar.body.mesh.n_vertices
    other = replace(avatar, body=replace(avatar.body, skin=Skin(avatar.body.skin.indices[:, :2].copy(),
                                                                 np.full((n, 2), 0.5, np.float32))))
    assert not isinstance(inner_deform(apply_contact(other, 0.004).body.deform), C.BodyCorrectives)
    with pytest.raises(KisekaeError, match="auto"):
        apply_contact(avatar, 0.004, correctives="yes")


def test_half_precision_file_rounds_only_the_coefficients(avatar, tmp_path):
    mats, _, _ = _synthetic(avatar, n=8)
    d = np.random.default_rng(4).normal(0, 0.01, (len(mats), avatar.body.mesh.n_vertices, 3)).astype(np.float32)
    fit = C.fit_correctives(avatar, mats, d, centres=4)
    full = C.save_correctives(fit, tmp_path / "full.npz")
    half = C.load_correctives(C.save_correctives(fit, tmp_path / "half.npz", half=True))
    assert (tmp_path / "half.npz").stat().st_size < 0.75 * full.stat().st_size
    scale = np.abs(fit.coefficients).max()
    assert 0 < np.abs(half.coefficients - fit.coefficients).max() <= scale * 2.0 ** -11
    np.testing.assert_array_equal(half.centres, fit.centres)
    assert half.coefficients.dtype == np.float32


def test_a_bone_scaled_to_zero_poses_a_finite_body(avatar):
    """Animations hide props by scaling their bones to zero; the joints' local rotations then come from a
    least-squares inverse instead of failing, and the body stays finite."""
    from kisekae.avatar.contact import GAP, apply_contact

    both = apply_contact(avatar, GAP)
    m = named_pose(avatar.skeleton, "sit").skinning_matrices(avatar.skeleton).copy()
    for name in ("lowerarm_l", "hand_l"):
        m[list(avatar.skeleton.names).index(name)][:3, :3] = 0.0
    assert np.all(np.isfinite(both.body.posed(m)))
    m[3] = np.nan
    with pytest.raises(KisekaeError, match="finite"):
        both.body.posed(m)


def test_bad_training_input_is_named(avatar):
    mats, _, _ = _synthetic(avatar, n=4)
    n = avatar.body.mesh.n_vertices
    d = np.zeros((4, n, 3), np.float32)
    with pytest.raises(KisekaeError, match="corrective samples"):
        C.fit_correctives(avatar, mats, d[:, :10])
    d[1, 3] = np.nan
    with pytest.raises(KisekaeError, match="finite"):
        C.fit_correctives(avatar, mats, d)
    with pytest.raises(KisekaeError, match="centres"):
        C.fit_correctives(avatar, mats, np.zeros_like(d), centres=1)
    with pytest.raises(KisekaeError, match="corrective poses"):
        C.bake_correctives_parallel(avatar, 1)


def test_cli_bake_and_check(tmp_path, capsys):
    from kisekae.cli import main

    out = tmp_path / "c.npz"
    assert main(["bake-correctives", "--poses", "3", "--arm-poses", "2", "-o", str(out)]) == 0
    assert "from 3 + 2 poses" in capsys.readouterr().out
    assert main(["bake-correctives", "--poses", "3", "-o", str(out)]) == 2  # no overwrite without --force
    assert "exists" in capsys.readouterr().err
    assert C.load_correctives(out).settings["samples"] == 5
    assert C.load_correctives(out).settings["arm_poses"] == 2
    rc = main(["check", "--pose", "crouch", "--garment", "tights", "--correctives", "builtin", "--self-contact",
               "--json", str(tmp_path / "r.json")])
    assert rc in (0, 1)
    rec = json.loads((tmp_path / "r.json").read_text())
    body = [r for r in (rec if isinstance(rec, list) else rec.get("records", [rec])) if "body_buried" in r]
    assert body and body[0]["body_buried"] < body[0]["body_buried_plain"] / 10
    # the default (auto) is the packaged bake on the built-in body; off is the joint planes alone
    for flag, name in ((["--correctives", "off"], "off.json"), ([], "auto.json")):
        assert main(["check", "--pose", "crouch", "--garment", "tights", "--self-contact", *flag,
                     "--json", str(tmp_path / name)]) in (0, 1)
    off, auto = (json.loads((tmp_path / n).read_text())[0] for n in ("off.json", "auto.json"))
    assert auto["body_buried"] == body[0]["body_buried"] < off["body_buried"]
    (tmp_path / "bad.npz").write_text("nope")
    assert main(["check", "--pose", "stand", "--correctives", str(tmp_path / "bad.npz")]) == 2
    assert "--correctives" in capsys.readouterr().err


# ---- the engine bake (kisekae.shaders.corrective_bake) ---------------------------------------------------------------

def test_engine_bake_round_trip_features_and_blend_shapes(avatar, builtin):
    """The bake read back gives the same offsets; an engine's features from skinning matrices and the bake's rest
    matrices equal the Python features; the blend shapes weighted by the features sum to the offsets; mirroring
    both the rotations and the centres (glTF importers that flip X) changes no feature."""
    from scipy.spatial.transform import Rotation

    from kisekae.shaders import corrective_bake as B

    sk = avatar.skeleton
    doc, blob = B.corrective_bake(builtin, sk)
    doc = json.loads(json.dumps(doc))
    back, rest, parent_rest, parents = B.correctives_from_bake(doc, blob, sk.names)
    np.testing.assert_array_equal(back.coefficients, builtin.coefficients)
    np.testing.assert_array_equal(back.vertex_ptr, builtin.vertex_ptr)
    shapes = B.blend_shapes(back)
    assert len(shapes) == len(back.joints) * back.centres.shape[1]
    for name in ("crouch", "sit"):
        m = named_pose(sk, name).skinning_matrices(sk)
        want = builtin.features(sk, m)
        # the engine's skinning matrices include where the character stands
        move = np.eye(4)
        move[:3, :3] = Rotation.from_rotvec([0.0, 2.0, 0.0]).as_matrix()
        move[:3, 3] = (3.0, 0.0, -4.0)
        got = B.engine_features(back, rest, parent_rest, parents, move @ m)
        np.testing.assert_allclose(got, want, atol=1e-9)
        total = np.zeros((back.n_vertices, 3))
        for j, k, verts, deltas in shapes:
            np.add.at(total, verts, want[j, k] * deltas)
        np.testing.assert_allclose(total, C.corrective_offsets_numpy(builtin, want), atol=1e-9)
        q = C.joint_quaternions(sk, m)[builtin.joints]
        a = C.joint_features(q, builtin.centres, builtin.sigma)
        b = C.joint_features(B.mirrored_quaternions(q), B.mirrored_quaternions(builtin.centres), builtin.sigma)
        np.testing.assert_allclose(a, b, atol=1e-12)
        # the mirror is the reflection x -> -x applied to the rotation matrices
        mirror = np.diag([-1.0, 1.0, 1.0])
        r = Rotation.from_quat(q).as_matrix()
        np.testing.assert_allclose(Rotation.from_matrix(mirror @ r @ mirror).as_matrix(),
                                   Rotation.from_quat(B.mirrored_quaternions(q)).as_matrix(), atol=1e-12)


def test_engine_bake_refusals(avatar, builtin):
    from kisekae.shaders import corrective_bake as B

    sk = avatar.skeleton
    doc, blob = B.corrective_bake(builtin, sk)
    cases = [
        (dict(doc, version=9), blob, "version"),
        (doc, blob[:-4], "coefficients"),
        ({k: v for k, v in doc.items() if k != "layout"}, blob, "layout"),
        (dict(doc, joints=[dict(doc["joints"][0], bone="nope")] + doc["joints"][1:]), blob, "nope"),
        (dict(doc, joints=[dict(doc["joints"][0], sigma=-1.0)] + doc["joints"][1:]), blob, "sigma"),
    ]
    for d, b, match in cases:
        with pytest.raises(KisekaeError, match=match):
            B.correctives_from_bake(d, b, sk.names, "bake.json")
    bad = bytearray(blob)
    at = doc["layout"]["coefficients"]["offset"]
    bad[at:at + 4] = np.array([np.nan], "<f4").tobytes()
    with pytest.raises(KisekaeError, match="finite"):
        B.correctives_from_bake(doc, bytes(bad), sk.names)


def test_o3de_corrective_macros_compile_with_the_srg_flattened(tmp_path):
    from conftest import flat_srg
    from kisekae.shaders import compile_hlsl

    flat_srg(tmp_path)
    (tmp_path / "probe.hlsl").write_text("""#include "srg.hlsl"
#include "kisekae_core.hlsl"
RWStructuredBuffer<float4> gOut;
[numthreads(64, 1, 1)]
void main(uint3 id : SV_DispatchThreadID)
{
    gOut[id.x] = float4(KisekaeSkinnedOffset(id.x, KisekaeCorrectiveOffset(id.x)), 0.0);
}
""")
    c = compile_hlsl(tmp_path / "probe.hlsl", "comp", use_cache=False)
    for name in ("m_correctivePtr", "m_correctiveJoint", "m_correctiveCoef", "m_correctiveFeature", "m_skinBones",
                 "m_skinWeights", "m_skinRows"):
        assert name in c.glsl, name


def test_unity_component_reads_the_bake_fields():
    """The C# component's serialised fields are the bake document's keys (JsonUtility matches them by name)."""
    from kisekae.shaders import corrective_bake as B

    cs = (B.Path(B.__file__).parent / "unity" / "Runtime" / "KisekaeBodyCorrectives.cs").read_text()
    assert f"BakeVersion = {B.BAKE_VERSION};" in cs
    for key in ("version", "centres", "vertexCount", "entryCount", "joints", "layout", "vertexPtr", "entryJoint",
                "coefficients", "bone", "parent", "rest", "parentRest", "sigma", "offset", "count"):
        assert f" {key};" in cs, key


def test_fit_decides_which_bakes_to_write(avatar):
    """``kisekae fit`` writes body_correctives.json + .bytes where the body has correctives and body_contact.json
    where it has the planes (tests/test_fix.py runs the command and reads both back)."""
    from kisekae.avatar.contact import GAP, apply_contact
    from kisekae.cli.fit import _contact, _correctives, _part_paths

    planes = apply_contact(avatar, GAP, correctives=None, part_contact=False)
    assert _correctives(planes) is None and _contact(planes) is planes.body.deform
    assert _part_paths(planes, "out") == ()
    both = apply_contact(avatar, GAP)  # the command line's body: correctives, planes, part contact
    inner = both.body.deform.before
    assert _correctives(both) is inner.correctives and _contact(both) is inner.then
    assert [p.name for p in _part_paths(both, "out")] == ["body_parts.json", "body_parts.bytes"]
    assert _correctives(avatar) is None and _contact(avatar) is None

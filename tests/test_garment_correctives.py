"""Garment pose-space correctives (kisekae.fit.garment_correctives): learned from the per-frame path, used by it."""

from dataclasses import replace

import numpy as np
import pytest

from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.contact import GAP, apply_contact
from kisekae.avatar.correctives import BodyCorrectives, blended_rotations, joint_features, joint_quaternions, training_poses
from kisekae.avatar.poses import named_pose
from kisekae.errors import KisekaeError
from kisekae.fit.carry import CarryState
from kisekae.fit.garment_correctives import (bake_garment_correctives, corrected_skin, garment_correctives,
                                             garment_correction_samples, packaged_garment_correctives,
                                             use_garment_correctives)
from kisekae.fit.runtime import pop_mm, runtime_pose
from kisekae.render.animation import inbetween


@pytest.fixture(scope="module")
def contact_avatar():
    return apply_contact(load_builtin_avatar("game_engine"), GAP)


def test_samples_are_the_runtime_correction_in_rest_space(contact_avatar):
    av = contact_avatar
    pose = named_pose(av.skeleton, "knee_bend")
    mats, offsets = garment_correction_samples(av, "tights", [pose])
    part = av.part("tights")
    m = pose.skinning_matrices(av.skeleton).astype(np.float64)
    # the samples are the path without the body follow (the frame adds it on top of the correctives)
    y = runtime_pose(av, pose, ["tights"], correctives="off", body_follow=False)["tights"][0].astype(np.float64)
    # independent: carry the rest-space offsets back with each vertex's own blend of bone rotations
    rot = np.einsum("nk,nkij->nij", part.skin.weights, m[part.skin.indices][..., :3, :3])
    back = part.skinned(m) + np.einsum("nij,nj->ni", rot, offsets[0].astype(np.float64))
    assert mats.shape == (1, av.skeleton.n_bones, 4, 4) and offsets.shape == (1, part.mesh.n_vertices, 3)
    assert np.abs(back - y).max() < 1e-5
    assert np.linalg.norm(y - part.skinned(m), axis=1).max() > 5e-3  # the knee bend needs a correction


def test_fit_on_a_garment_reproduces_smooth_samples_and_keeps_the_rest_pose():
    av = load_builtin_avatar("game_engine")
    part = av.part("skirt")
    poses = training_poses(av.skeleton, 60, 0, seed=3)
    mats = np.array([p.skinning_matrices(av.skeleton) for p in poses], dtype=np.float64)
    # samples that the model can express: each vertex moves along a fixed direction by the sine of its first
    # bone's turn from rest (0 at rest)
    q = np.array([joint_quaternions(av.skeleton, m) for m in mats])
    turn = 2 * np.arccos(np.clip(np.abs(q[..., 3]), 0, 1))  # (S, B)
    first = part.skin.indices[:, 0]
    direction = np.random.default_rng(0).normal(size=(part.mesh.n_vertices, 3)) * 0.01
    offsets = np.sin(turn[:, first])[..., None] * direction[None]
    from kisekae.avatar.correctives import corrective_offsets, fit_correctives

    c = fit_correctives(av, mats, offsets, part="skirt", sigma=2.0, arm_sigma=2.0)
    assert c.n_vertices == part.mesh.n_vertices and c.settings["sigma"] == 2.0
    got = np.array([corrective_offsets(c, c.features(av.skeleton, m)) for m in mats])
    err = np.sqrt(np.mean((got - offsets) ** 2))
    assert err < 0.1 * np.sqrt(np.mean(offsets ** 2))
    rest = np.repeat(np.eye(4)[None], av.skeleton.n_bones, axis=0)
    assert np.abs(corrective_offsets(c, c.features(av.skeleton, rest))).max() == 0.0
    assert np.allclose(joint_features(q[:1, c.joints], c.centres, c.sigma)[0], c.features(av.skeleton, mats[0]),
                       atol=1e-9)


def test_packaged_bakes_fit_the_default_body_only(contact_avatar):
    for rig in ("game_engine", "cmu_mb"):
        av = contact_avatar if rig == "game_engine" else apply_contact(load_builtin_avatar(rig), GAP)
        c = packaged_garment_correctives(av, "tights")
        assert c is not None, rig  # fails when the body is re-baked without its garments
        assert c.settings["garment"] == "tights" and c.settings["sigma"] == 2.0
        assert packaged_garment_correctives(av, "skirt") is None  # none packaged: they made its pops worse
    plain = load_builtin_avatar("game_engine")
    assert packaged_garment_correctives(plain, "tights") is None  # made on the contact body
    assert packaged_garment_correctives(apply_contact(plain, 0.01), "tights") is None  # another gap
    av = apply_contact(load_builtin_avatar("game_engine"), GAP)
    part = av.part("tights")
    w = part.skin.weights.copy()
    w[0] = w[0][::-1]
    av.garments["tights"] = replace(part, skin=replace(part.skin, weights=w))
    assert packaged_garment_correctives(av, "tights") is None  # another skin


def test_choices_and_what_they_start_from():
    av = apply_contact(load_builtin_avatar("game_engine"), GAP)
    packaged = packaged_garment_correctives(av, "tights")
    assert garment_correctives(av, "tights") is packaged and garment_correctives(av, "tights", "off") is None
    with pytest.raises(KisekaeError, match="unknown choice"):
        garment_correctives(av, "tights", "on")
    use_garment_correctives(av, "tights", None)
    assert garment_correctives(av, "tights") is None
    with pytest.raises(KisekaeError, match="another garment"):
        use_garment_correctives(av, "skirt", packaged)
    m = named_pose(av.skeleton, "sit").skinning_matrices(av.skeleton)
    x = av.part("tights").skinned(m)
    y = corrected_skin(av, "tights", packaged, m, x)
    d = np.linalg.norm(y - x, axis=1)
    assert 5e-3 < d.max() < 0.1  # the sit's correction is centimetres, not decimetres
    assert np.array_equal(corrected_skin(av, "tights", None, m, x), x.astype(np.float64))
    rest = np.repeat(np.eye(4)[None], av.skeleton.n_bones, axis=0)
    x0 = av.part("tights").skinned(rest)
    assert np.abs(corrected_skin(av, "tights", packaged, rest, x0) - x0).max() == 0.0
    # the offsets are carried by each vertex's blended rotation (independent einsum)
    d_rest = BodyCorrectives(packaged, av.skeleton, av.part("tights").skin).rest_offsets(m)
    want = x + np.einsum("nij,nj->ni", blended_rotations(av.part("tights").skin, m), d_rest)
    assert np.abs(y - want).max() < 1e-9


def test_a_small_bake_is_used_by_the_runtime():
    av = apply_contact(load_builtin_avatar("game_engine"), GAP)
    c = bake_garment_correctives(av, "skirt", n_poses=30, arm_poses=0, seed=5)
    assert c.settings["n_poses"] == 30 and c.settings["gap"] == GAP
    use_garment_correctives(av, "skirt", c)
    pose = named_pose(av.skeleton, "knee_bend")
    on = runtime_pose(av, pose, ["skirt"])["skirt"][0]
    off = runtime_pose(av, pose, ["skirt"], correctives="off")["skirt"][0]
    assert np.abs(on - off).max() > 1e-4


def test_correctives_take_the_tights_pops_under_the_issue_limit(contact_avatar):
    """One second at 30 fps from stand to knee_bend: plain skinning as the start pops above 5 mm a frame, the
    packaged correctives under it (docs/fit.md, 'Garment correctives'), and so does the body follow alone (docs/fit.md,
    'Body follow')."""
    av = contact_avatar
    poses = inbetween([named_pose(av.skeleton, "stand"), named_pose(av.skeleton, "knee_bend")], 30)
    pops = {}
    for choice, follow in (("auto", True), ("auto", False), ("off", True), ("off", False)):
        state, prev, worst = CarryState(), None, 0.0
        for pose in poses:
            y = runtime_pose(av, pose, ["tights"], state=state, correctives=choice, body_follow=follow)["tights"][0]
            corr = y.astype(np.float64) - av.part("tights").skinned(pose.skinning_matrices(av.skeleton))
            worst = worst if prev is None else max(worst, pop_mm(prev, corr))
            prev = corr
        pops[choice, follow] = worst
    assert pops["auto", True] <= 5.0 and pops["auto", False] <= 5.0 < pops["off", False]
    assert pops["off", True] <= 5.0


def test_cli_bakes_a_garment_and_check_uses_the_file(tmp_path, capsys):
    from kisekae.cli import main

    out = tmp_path / "skirt.npz"
    assert main(["bake-correctives", "--garment", "skirt", "--poses", "30", "--arm-poses", "0", "-o", str(out)]) == 0
    assert "skirt vertices corrected" in capsys.readouterr().out
    from kisekae.avatar.correctives import load_correctives

    c = load_correctives(str(out))
    assert c.settings["garment"] == "skirt" and c.settings["n_poses"] == 30 and c.settings["gap"] == GAP
    js = {}
    for choice in (str(out), "off"):
        js[choice] = tmp_path / f"{len(js)}.json"
        assert main(["check", "--runtime", "--garment", "skirt", "--pose", "knee_bend", "--garment-correctives",
                     choice, "--json", str(js[choice])]) == 0
    assert js[str(out)].read_text() != js["off"].read_text()  # the file's correctives moved the start
    capsys.readouterr()
    assert main(["check", "--runtime", "--garment", "tights", "--pose", "stand", "--garment-correctives",
                 str(out)]) == 2
    assert "not among --garment" in capsys.readouterr().err
    assert main(["check", "--runtime", "--pose", "stand", "--garment-correctives", "off", "--garment-correctives",
                 str(out)]) == 2
    assert "give it alone" in capsys.readouterr().err
    before = out.read_bytes()
    assert main(["bake-correctives", "--garment", "skirt", "--poses", "2", "--arm-poses", "0", "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err and out.read_bytes() == before  # never overwritten unasked


def test_check_refuses_a_body_bake_as_a_garment_bake(capsys):
    from kisekae.avatar.correctives import builtin_correctives_path
    from kisekae.cli import main

    assert main(["check", "--runtime", "--garment", "tights", "--pose", "stand", "--garment-correctives",
                 str(builtin_correctives_path("game_engine"))]) == 2
    assert "body bake" in capsys.readouterr().err


def test_bake_does_not_depend_on_the_worker_count(contact_avatar):
    one = bake_garment_correctives(contact_avatar, "skirt", n_poses=20, arm_poses=2, seed=1)
    two = bake_garment_correctives(contact_avatar, "skirt", n_poses=20, arm_poses=2, seed=1, jobs=2)
    assert np.array_equal(one.vertex_ptr, two.vertex_ptr) and np.array_equal(one.coefficients, two.coefficients)


def test_fit_exports_the_garment_correctives_for_the_engine(tmp_path, contact_avatar):
    """``kisekae fit`` writes tights.correctives.json + .bytes (the packaged bake, in the body bake's format) and
    nothing for the skirt, which has none; an engine reading the bake gets the offsets the per-frame path starts
    from."""
    import json

    from kisekae.avatar.correctives import corrective_offsets_numpy
    from kisekae.cli import main
    from kisekae.shaders import corrective_bake as B

    assert main(["fit", "--pose", "stand", "--garment", "tights", "--garment", "skirt", "-o", str(tmp_path)]) == 0
    assert not B.corrective_bake_paths(tmp_path, "skirt")[0].exists()
    head, blob = B.corrective_bake_paths(tmp_path, "tights")
    sk = contact_avatar.skeleton
    c, rest, parent_rest, parents = B.correctives_from_bake(json.loads(head.read_text()), blob.read_bytes(), sk.names)
    packaged = garment_correctives(contact_avatar, "tights")
    assert c.settings["garment"] == "tights" and c.n_vertices == contact_avatar.part("tights").mesh.n_vertices
    np.testing.assert_array_equal(c.coefficients, packaged.coefficients.astype(np.float32))
    m = named_pose(sk, "knee_bend").skinning_matrices(sk)
    got = corrective_offsets_numpy(c, B.engine_features(c, rest, parent_rest, parents, m))
    want = BodyCorrectives(packaged, sk, contact_avatar.part("tights").skin).rest_offsets(m)
    assert np.abs(want).max() > 5e-3  # the knee bend asks for real offsets
    np.testing.assert_allclose(got, want, atol=1e-5)
    # the plain body has no garment correctives either
    plain = tmp_path / "plain"
    assert main(["fit", "--no-contact", "--pose", "stand", "--garment", "tights", "-o", str(plain)]) == 0
    assert not B.corrective_bake_paths(plain, "tights")[0].exists()
    # --garment-correctives off writes none; a bake file is written for the garment it was made for
    off = tmp_path / "off"
    assert main(["fit", "--pose", "stand", "--garment", "tights", "--garment-correctives", "off", "-o", str(off)]) == 0
    assert not B.corrective_bake_paths(off, "tights")[0].exists()
    from kisekae.avatar.correctives import save_correctives

    own = save_correctives(bake_garment_correctives(contact_avatar, "skirt", n_poses=6, arm_poses=0),
                           tmp_path / "skirt.npz")
    given = tmp_path / "given"
    assert main(["fit", "--pose", "stand", "--garment", "tights", "--garment", "skirt", "--garment-correctives",
                 str(own), "-o", str(given)]) == 0
    head, blob = B.corrective_bake_paths(given, "skirt")
    c, *_ = B.correctives_from_bake(json.loads(head.read_text()), blob.read_bytes(), sk.names)
    assert c.settings["garment"] == "skirt" and c.settings["n_poses"] == 6
    assert B.corrective_bake_paths(given, "tights")[0].exists()  # the others auto


def test_samples_are_repaired_offline_where_the_path_leaves_crossings(contact_avatar):
    """The crouch's per-frame tights leave four crotch edges through the body: the bake's sample lifts them out
    (kisekae.fit.crossing_repair) by millimetres at a few dozen vertices, and leaves every other vertex as the path
    has it; the stand has nothing to repair."""
    from kisekae.fit.crossing_repair import repair_crossings
    from kisekae.qa.check import body_topology
    from kisekae.qa.penetration import BodyQuery

    av = contact_avatar
    poses = [named_pose(av.skeleton, "crouch"), named_pose(av.skeleton, "stand")]
    _, plain = garment_correction_samples(av, "tights", poses, repair=False)
    mats, fixed = garment_correction_samples(av, "tights", poses)
    moved = np.linalg.norm(fixed - plain, axis=2)
    assert 5 <= (moved[0] > 1e-6).sum() <= 100 and moved[0].max() < 0.015 and moved[1].max() == 0.0
    # the repaired sample is the repair of the path's result, taken back to rest space (independently here)
    part = av.part("tights")
    x = part.skinned(mats[0]).astype(np.float64)
    rot = blended_rotations(part.skin, mats[0])
    y = x + np.einsum("nij,nj->ni", rot, plain[0].astype(np.float64))
    query = BodyQuery(body_topology(av), av.body.posed(mats[0]))
    assert query.crossing_edges(y, part.mesh.edges).sum() > 0
    want = repair_crossings(query, y, part.mesh.edges, 0.002, weld=part.mesh.weld, slack=None)[0]
    assert not query.crossing_edges(want, part.mesh.edges).any()
    got = x + np.einsum("nij,nj->ni", rot, fixed[0].astype(np.float64))
    assert np.abs(got - want).max() < 1e-4  # float32 rest-space samples


def test_cli_refuses_no_repair_without_a_garment(tmp_path, capsys):
    from kisekae.cli import main

    out = tmp_path / "body.npz"
    assert main(["bake-correctives", "--no-repair", "--poses", "2", "--arm-poses", "0", "-o", str(out)]) == 2
    assert "--no-repair" in capsys.readouterr().err and not out.exists()

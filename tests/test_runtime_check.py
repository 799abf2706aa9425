"""``kisekae check --runtime``: the per-frame path measured like the fix, and its frame-to-frame pop."""

import json

import numpy as np

from conftest import SHARED
from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.contact import GAP, apply_contact
from kisekae.avatar.poses import named_pose
from kisekae.cli import main
from kisekae.fit.bound import push_out_runtime
from kisekae.fit.carry import CarryState
from kisekae.fit.fix import params_for
from kisekae.fit.runtime import avatar_capsule_rig, garment_binding, pop_mm, runtime_pose
from kisekae.io.bvh import load_bvh
from kisekae.qa.check import check_pose


def test_runtime_pose_capsules_is_the_shader_path_on_the_fitted_rig():
    av = load_builtin_avatar()
    pose = named_pose(av.skeleton, "leg_raise")
    got = runtime_pose(av, pose, ["skirt"], method="capsules")["skirt"]
    m = pose.skinning_matrices(av.skeleton)
    caps = avatar_capsule_rig(av).posed(pose.world_matrices(av.skeleton))
    want, push = push_out_runtime(garment_binding(av, "skirt"), av.part("skirt").posed(m), caps, av.body.posed(m),
                                  av.body.mesh.faces, params_for("skirt", None))
    assert np.abs(got[0] - want).max() < 1e-6  # float32 storage of the same result
    assert got[1]["max_push_m"] == push.max()
    # it is not a no-op: it removes some of the leg_raise clipping of the skirt, not all of it
    before = check_pose(av, pose, ["skirt"])[0]["inside_count"]
    after = check_pose(av, pose, ["skirt"], posed_garments={"skirt": got[0]})[0]["inside_count"]
    assert 0 < after < before


def test_pop_mm_is_the_largest_change_of_the_correction():
    a = np.zeros((4, 3))
    b = np.zeros((4, 3))
    b[2] = (0.003, 0.004, 0.0)
    assert pop_mm(a, b) == 5.0
    assert pop_mm(b, b) == 0.0


def test_check_runtime_records_and_pop(tmp_path, capsys):
    out_json = tmp_path / "r.json"
    bvh = SHARED / "cmu_35_01_excerpt.bvh"
    code = main(["check", "--runtime", "--bvh", str(bvh), "--frames", "0:2", "--garment", "skirt",
                 "--json", str(out_json)])
    capsys.readouterr()
    assert code == 0
    recs = json.loads(out_json.read_text())
    assert [(r["pose"].split(":")[1], r["stage"]) for r in recs] == [("0", "before"), ("0", "runtime"),
                                                                     ("1", "before"), ("1", "runtime")]
    assert "pop_mm" not in recs[1] and "pop_mm" in recs[3]
    # independent: the two frames' corrections computed here (clips use the cmu_mb rig by default, and the
    # command line poses the contact body by default); the default per-frame method carries its correction
    # from frame to frame, so one state goes through the clip
    av = apply_contact(load_builtin_avatar("cmu_mb"), GAP)
    corr = []
    state = CarryState()
    for pose in load_bvh(bvh, av.skeleton, "0:2").poses:
        fixed = runtime_pose(av, pose, ["skirt"], state=state)["skirt"][0]
        corr.append(fixed.astype(np.float64) - av.part("skirt").posed(pose.skinning_matrices(av.skeleton)))
    want = np.linalg.norm(corr[1] - corr[0], axis=1).max() * 1e3
    assert abs(recs[3]["pop_mm"] - want) < 1e-3
    for r in recs:
        assert {"flipped_faces", "strain_p99", "self_crossings"} <= set(r)


def test_check_inbetweens_measures_pop_between_slerped_poses(tmp_path, capsys):
    """``--inbetweens 3`` checks the two key poses and two slerped poses between them, with pop_mm from the second
    on, equal to the change of the correction computed here from independently slerped poses."""
    from kisekae.render.animation import interpolate_pose

    out_json = tmp_path / "ib.json"
    code = main(["check", "--runtime", "--pose", "stand", "--pose", "knee_bend", "--inbetweens", "3",
                 "--garment", "tights", "--json", str(out_json)])
    capsys.readouterr()
    assert code == 0
    recs = [r for r in json.loads(out_json.read_text()) if r["stage"] == "runtime"]
    assert len(recs) == 4 and recs[0]["pose"] == "stand" and recs[-1]["pose"] == "knee_bend"
    assert "pop_mm" not in recs[0] and all("pop_mm" in r for r in recs[1:])
    av = apply_contact(load_builtin_avatar(), GAP)
    a, b = named_pose(av.skeleton, "stand"), named_pose(av.skeleton, "knee_bend")
    corr = []
    state = CarryState()
    runtime_pose(av, a, ["tights"], state=state)  # the clip's memory starts at its first pose
    for t in (1 / 3, 2 / 3):
        pose = interpolate_pose(a, b, t)
        fixed = runtime_pose(av, pose, ["tights"], state=state)["tights"][0]
        corr.append(fixed.astype(np.float64) - av.part("tights").posed(pose.skinning_matrices(av.skeleton)))
    assert recs[1]["runtime_method"] == "carried" and recs[1]["runtime_steps"] >= 1
    assert abs(recs[2]["pop_mm"] - np.linalg.norm(corr[1] - corr[0], axis=1).max() * 1e3) < 1e-3
    assert main(["check", "--pose", "stand", "--inbetweens", "3"]) != 0
    assert "two poses" in capsys.readouterr().err
    assert main(["check", "--pose", "stand", "--pose", "crouch", "--inbetweens", "0"]) != 0
    assert "--inbetweens" in capsys.readouterr().err


def test_culling_covered_skin_removes_its_poke_through_pixels():
    from kisekae.app.report import add_poke_pixels

    av = load_builtin_avatar()
    pose = named_pose(av.skeleton, "crouch")
    nf = len(av.body.mesh.faces)
    kw = dict(views=("knees", "hips"), sizes=((320, 240),))
    recs = [{"garment": "tights"}]
    add_poke_pixels(av, pose, recs, **kw)
    add_poke_pixels(av, pose, recs, cull={"tights": np.zeros(nf, bool)}, key="none_culled_pixels", **kw)
    add_poke_pixels(av, pose, recs, cull={"tights": np.ones(nf, bool)}, key="all_culled_pixels", **kw)
    assert recs[0]["poke_through_pixels"] > 0
    assert recs[0]["none_culled_pixels"] == recs[0]["poke_through_pixels"]
    assert recs[0]["all_culled_pixels"] == 0
    assert set(recs[0]["poke_through"]) == set(recs[0]["all_culled"]) == {"320x240"}


def test_runtime_runs_the_cached_push_plan_like_the_numpy_reference():
    """The per-frame path runs the garment's CapsulePushPlan (built once per garment and parameters);
    its result equals the NumPy reference of the same steps (capsule push, bound clearance, cap)."""
    from kisekae.fit.bound import push_out_bound
    from kisekae.fit.pushout import cap_displacement, push_out_reference
    from kisekae.fit.runtime import garment_plan

    av = load_builtin_avatar()
    p = params_for("tights", None)
    plan = garment_plan(av, "tights", p)
    assert garment_plan(av, "tights", p) is plan and garment_plan(av, "skirt", p) is not plan
    pose = named_pose(av.skeleton, "crouch")
    m = pose.skinning_matrices(av.skeleton)
    caps = avatar_capsule_rig(av).posed(pose.world_matrices(av.skeleton))
    pts = av.part("tights").posed(m).astype(np.float64)
    body = av.body.posed(m)
    binding = garment_binding(av, "tights")
    got, push = push_out_runtime(binding, pts, caps, body, av.body.mesh.faces, p, plan=plan)
    after_caps, cap_push, _ = push_out_reference(pts, *caps, p, tightness=0.0, softness=0.0)
    want, _, _ = push_out_bound(binding, after_caps, body, av.body.mesh.faces, p, 0.0, 0.0, (0.0, 1.0, 0.0))
    cap_displacement(want, pts, p.max_push)
    assert (cap_push > 0).sum() > 100
    np.testing.assert_allclose(got, want, atol=1e-9)
    np.testing.assert_allclose(push, np.linalg.norm(want - pts, axis=1), atol=1e-9)
    first = runtime_pose(av, pose, ["tights"], method="capsules")["tights"][0]
    assert np.abs(first - want).max() < 1e-6  # runtime_pose: the same, stored as float32


def test_covered_skin_mask_keeps_tight_fabric_skin_culled_in_folds():
    """Tights: skin under fabric within TIGHT_COVER at rest is culled in every pose, so the crouch's hip crease,
    where the bend folds skin through the corrected tights, shows (almost) nothing; the skirt keeps the
    verification-pose mask alone, since a raised leg comes out from under it."""
    from kisekae.app.report import add_poke_pixels
    from kisekae.avatar.poses import VERIFICATION_POSES
    from kisekae.fit.covered import avatar_covered
    from kisekae.fit.runtime import COVER_CONE, covered_skin_triangles

    av = load_builtin_avatar().with_body_contact()
    poses = [named_pose(av.skeleton, p) for p in VERIFICATION_POSES]
    per_pose = {g: avatar_covered(av, poses, [g], cone_angle=COVER_CONE[0], cone_rays=COVER_CONE[1])[1]
                for g in ("tights", "skirt")}
    tights, skirt = covered_skin_triangles(av, "tights"), covered_skin_triangles(av, "skirt")
    np.testing.assert_array_equal(skirt, per_pose["skirt"])
    assert np.all(tights >= per_pose["tights"]) and tights.sum() > per_pose["tights"].sum()
    pose = named_pose(av.skeleton, "crouch")
    # without the edge lift, whose default (crouch tights: 36 px here) leaves too few folds to tell the masks apart
    pos = {"tights": runtime_pose(av, pose, ["tights"], edge_lift=False)["tights"][0]}
    recs = check_pose(av, pose, ["tights"], posed_garments=pos)
    kw = dict(views=("hips",), sizes=((320, 180),))
    add_poke_pixels(av, pose, recs, pos, **kw)
    add_poke_pixels(av, pose, recs, pos, cull={"tights": per_pose["tights"]}, key="pose_mask", **kw)
    add_poke_pixels(av, pose, recs, pos, cull={"tights": tights}, key="tight_mask", **kw)
    r = recs[0]
    assert r["poke_through_pixels"] > 100 and r["pose_mask"] > 100  # the crease shows through without the rule
    assert r["tight_mask"] <= 0.02 * r["pose_mask"]

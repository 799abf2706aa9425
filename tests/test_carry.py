"""The per-frame correction with a memory (kisekae.fit.carry): a slab passing up through a cloth point, paths
between poses, and the carried path against the stateless one on the avatar."""

import numpy as np
import pytest

from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.contact_solve import local_motion, path_steps, pose_path
from kisekae.avatar.poses import named_pose
from kisekae.errors import KisekaeError
from kisekae.fit.carry import CarryState, carry_start
from kisekae.fit.pushout import PushParams
from kisekae.fit.surface import SurfaceCandidates, one_ring, surface_runtime
from kisekae.geom.normals import vertex_normals

P = PushParams(margin=0.004, stiffness=1.0, max_push=0.1)


def slab(top: float, thickness: float = 0.02):
    """A 2 m square slab: its top face at height ``top`` (normal +Z), its bottom ``thickness`` lower (normal -Z)."""
    b = top - thickness
    v = np.array([[-1, -1, top], [1, -1, top], [1, 1, top], [-1, 1, top],
                  [-1, -1, b], [1, -1, b], [1, 1, b], [-1, 1, b]], dtype=np.float64)
    f = np.array([[0, 1, 2], [0, 2, 3], [4, 6, 5], [4, 7, 6]])
    return v, f


def _rise(shift=np.zeros(3), keep=0.9, carried=True):
    """A cloth point skinned 4 mm above the slab's rest top while the slab rises 3 cm in 3 mm steps."""
    x = np.array([[0.1, -0.2, 0.004]]) + shift
    cand = SurfaceCandidates(np.array([[0, 1, 2, 3]], dtype=np.int32), 4)
    ring = one_ring(1, np.zeros((0, 2), dtype=np.int64))
    c = np.zeros((1, 3))
    for top in np.arange(1, 11) * 0.003:
        v, f = slab(top)
        v = v + shift
        n = vertex_normals(v, f).astype(np.float64)
        start = carry_start(x, c, keep) if carried else None
        y = surface_runtime(x, cand, ring, v, n, f, P, start=start)[0]
        c = y - x
    return x + c


def test_the_carried_point_rides_on_top_of_a_slab_that_passes_through_its_skinned_position():
    """At the end the skinned point lies 6 mm under the slab: a push that sees only this frame leaves it there
    (outside, below); the carried one kept it on top, a margin above."""
    carried = _rise()
    np.testing.assert_allclose(carried[0], [0.1, -0.2, 0.03 + P.margin], atol=1e-9)
    stateless = _rise(carried=False)
    np.testing.assert_allclose(stateless[0], [0.1, -0.2, 0.004], atol=1e-12)
    # wherever the scene stands
    shift = np.array([10.0, -3.0, 7.0])
    np.testing.assert_allclose(_rise(shift) - shift, carried, atol=1e-6)


def test_keep_zero_is_the_stateless_push_and_a_kept_correction_fades():
    np.testing.assert_array_equal(_rise(keep=0.0), _rise(carried=False))
    x = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    c = np.array([[0.0, 0.0, 0.01], [0.002, 0.0, 0.0]])
    np.testing.assert_allclose(carry_start(x, c, 0.9), x + 0.9 * c, atol=0)
    np.testing.assert_array_equal(carry_start(x, c, 1.0), x + c)


@pytest.mark.parametrize("keep", [-0.1, 1.5, float("nan"), True, "0.9"])
def test_bad_keep_and_shapes_are_named(keep):
    x = np.zeros((2, 3))
    with pytest.raises(KisekaeError, match="carry keep"):
        carry_start(x, x, keep)
    with pytest.raises(KisekaeError, match="carry keep"):
        CarryState(keep=keep).check()


def test_bad_corrections_are_named():
    with pytest.raises(KisekaeError, match="previous correction"):
        carry_start(np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(KisekaeError, match="previous correction"):
        carry_start(np.zeros((2, 3)), np.full((2, 3), np.nan))
    with pytest.raises(KisekaeError, match="step degrees"):
        CarryState(step_degrees=0.0).check()


@pytest.fixture(scope="module")
def avatar():
    return load_builtin_avatar().with_body_contact()


def _angle(a, b):
    """Largest angle between matching rotations of two (B, 3, 3) stacks, degrees."""
    cos = (np.einsum("bij,bij->b", a, b) - 1.0) / 2.0
    return float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))).max())


def test_path_between_two_poses_ends_on_the_pose_in_bounded_steps(avatar):
    sk = avatar.skeleton
    a = named_pose(sk, "knee_bend").skinning_matrices(sk)
    b = named_pose(sk, "sit").skinning_matrices(sk)
    n = path_steps(sk, b, a, 5.0)
    path = pose_path(sk, b, n, start=a)
    assert len(path) == n and n > 1
    np.testing.assert_array_equal(path[-1], b)
    rots = [local_motion(sk, a)[0]] + [local_motion(sk, m)[0] for m in path]
    steps = [_angle(rots[k], rots[k + 1]) for k in range(n)]
    assert max(steps) <= 5.0 + 1e-6  # no bone turns more than the bound in a step
    assert _angle(rots[0], rots[-1]) > 5.0 * (n - 1) - 1e-6  # and no more steps than the bound needs
    # from the rest pose, the path is the one the contact solve and the carried fix walk
    rest = np.tile(np.eye(4), (sk.n_bones, 1, 1))
    for m0, m1 in zip(pose_path(sk, b, 4), pose_path(sk, b, 4, start=rest)):
        np.testing.assert_allclose(m0, m1, atol=1e-12)
    assert path_steps(sk, b, b) == 1
    with pytest.raises(KisekaeError, match="step degrees"):
        path_steps(sk, b, a, -1.0)


def test_carried_path_pops_less_and_spikes_less_than_the_stateless_one(avatar):
    """Stand to crouch in 12 in-betweens on the contact body: the stateless push flips single vertices from the
    thigh's side to the calf's (pops of centimetres and edges stretched several times); the carried one keeps
    each vertex on its side."""
    from kisekae.fit.runtime import runtime_pose
    from kisekae.qa.check import check_pose
    from kisekae.render.animation import interpolate_pose

    sk = avatar.skeleton
    a, b = named_pose(sk, "stand"), named_pose(sk, "crouch")
    poses = [interpolate_pose(a, b, t) for t in np.linspace(0, 1, 13)]
    state = CarryState()
    result = {}
    for method in ("surface", "carried"):
        prev, pops = None, []
        for pose in poses:
            got, metrics = runtime_pose(avatar, pose, ["tights"], method=method, state=state)["tights"]
            corr = got.astype(np.float64) - avatar.part("tights").posed(pose.skinning_matrices(sk))
            if prev is not None:
                pops.append(np.linalg.norm(corr - prev, axis=1).max())
            prev = corr
        rec = check_pose(avatar, poses[-1], ["tights"], posed_garments={"tights": got})[0]
        result[method] = (max(pops), rec, metrics)
    (pop_s, rec_s, _), (pop_c, rec_c, met_c) = result["surface"], result["carried"]
    assert met_c["runtime_method"] == "carried" and met_c["runtime_steps"] >= 1
    assert pop_c * 2 < pop_s
    assert rec_c["strain_max"] < 1.0 < rec_s["strain_max"]
    assert rec_c["edge_crossings"] < rec_s["edge_crossings"]
    assert rec_c["max_depth_m"] < rec_s["max_depth_m"]


def test_a_single_pose_warms_up_from_rest_and_a_reset_forgets(avatar):
    from kisekae.fit.runtime import runtime_pose

    sk = avatar.skeleton
    pose = named_pose(sk, "crouch")
    state = CarryState()
    first = runtime_pose(avatar, pose, ["skirt"], state=state)["skirt"]
    assert first[1]["runtime_steps"] == path_steps(sk, pose.skinning_matrices(sk)) > 1
    np.testing.assert_array_equal(runtime_pose(avatar, pose, ["skirt"])["skirt"][0], first[0])  # fresh state
    again = runtime_pose(avatar, pose, ["skirt"], state=state)["skirt"]
    assert again[1]["runtime_steps"] == 1  # the same pose once more: one step from where it is
    state.reset()
    assert state.skin_matrices is None and not state.corrections
    np.testing.assert_array_equal(runtime_pose(avatar, pose, ["skirt"], state=state)["skirt"][0], first[0])


def test_cli_carry_keep_zero_is_the_stateless_push_and_bad_keep_is_named(tmp_path, capsys):
    import json

    from kisekae.cli import main

    recs = {}
    for tag, extra in (("keep0", ["--carry-keep", "0"]), ("surface", ["--runtime-method", "surface"])):
        out = tmp_path / f"{tag}.json"
        assert main(["check", "--runtime", "--pose", "sit", "--garment", "tights", "--json", str(out), *extra]) == 0
        recs[tag] = [r for r in json.loads(out.read_text()) if r["stage"] == "runtime"][0]
    capsys.readouterr()
    assert recs["keep0"]["runtime_method"] == "carried" and recs["keep0"]["runtime_steps"] > 1
    for k in ("inside_count", "edge_crossings", "flipped_faces", "strain_max", "max_push_m"):
        assert recs["keep0"][k] == pytest.approx(recs["surface"][k], abs=1e-9), k
    assert main(["check", "--runtime", "--pose", "sit", "--carry-keep", "1.5"]) != 0
    assert "carry keep" in capsys.readouterr().err


def test_carried_runtime_follows_the_body_moved_10_m(avatar):
    """The same pose with the whole body 10 m away: the carried correction (its state in float64) is the same to
    1e-6 m, the positions to float32's rounding at 10 m."""
    from kisekae.avatar.pose import Pose
    from kisekae.fit.runtime import runtime_pose

    sk = avatar.skeleton
    pose = named_pose(sk, "sit")
    shift = np.array([10.0, -3.0, 7.0])
    moved = Pose(pose.rotations, pose.translation + shift, "sit moved", pose.offsets)
    a, b = CarryState(), CarryState()
    runtime_pose(avatar, pose, ["tights"], state=a)
    runtime_pose(avatar, moved, ["tights"], state=b)
    assert a.corrections["tights"].shape == (avatar.part("tights").mesh.n_vertices, 3)
    assert np.abs(a.corrections["tights"]).max() > 0.005
    # the runtime works in the frame of the first bone's skinning translation, so the float32 skinning sees the same
    # numbers in both places (before, its 1e-6 m step at 10 m was amplified to 5e-6 m at a few vertices)
    err = np.abs(b.corrections["tights"] - a.corrections["tights"]).max(axis=1)
    assert err.max() < 1e-6
    got_a = runtime_pose(avatar, pose, ["tights"], state=a)["tights"][0]
    got_b = runtime_pose(avatar, moved, ["tights"], state=b)["tights"][0]
    # positions come back in the world: the same up to float32's rounding at 10 m (about 1e-6 m)
    assert np.abs(got_b.astype(np.float64) - shift - got_a).max() < 2e-6

import numpy as np
import pytest

from conftest import SHARED
from kisekae.errors import KisekaeError
from kisekae.io.bvh import load_bvh, parse_bvh, parse_frames, read_bvh
from kisekae.io.makehuman import read_rig
from kisekae.io.mhclo import add_garments, fit_mhclo, load_mhclo, parse_mhclo
from kisekae.io.obj import parse_obj, read_obj

CLOTHES = SHARED
BVH = SHARED / "cmu_35_01_excerpt.bvh"

OBJ = """g a
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 2 0 0
vt 0 0
vt 1 0
vt 1 1
vt 0 1
f 1/1 2/2 3/3 4/4
g b
f 2 5 3
g a
f 1 3 4
"""


def test_obj_groups_merge_by_name_and_quads_are_kept():
    obj = parse_obj(OBJ)
    assert obj.groups == ["default", "a", "b"]
    assert list(obj.group_polygons("a")) == [0, 2]  # 'a' appears twice: merged
    assert list(obj.group_vertices("b")) == [1, 2, 4]


def test_truncated_obj_names_file_and_line(tmp_path):
    p = tmp_path / "broken.obj"
    p.write_text("v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\nf 1 2 7\n")
    with pytest.raises(KisekaeError, match=r"broken.obj: line 5: index 7 .*truncated"):
        read_obj(p)
    p.write_text("v 0 0 0\nv 1 0")
    with pytest.raises(KisekaeError, match=r"broken.obj: line 2: a vertex needs 3 coordinates"):
        read_obj(p)
    p.write_bytes(b"")
    with pytest.raises(KisekaeError, match="no vertices"):
        read_obj(p)


def test_rig_strategies_on_a_toy_mesh():
    obj = parse_obj(OBJ)
    rig = {
        "root": {"parent": "", "roll": 0.0, "head": {"strategy": "VERTEX", "vertex_index": 0},
                 "tail": {"strategy": "MEAN", "vertex_indices": [2, 3]}},
        "child": {"parent": "root", "roll": 0.0, "head": {"strategy": "MEAN", "vertex_indices": [2, 3]},
                  "tail": {"strategy": "CUBE", "cube_name": "b"}},
    }
    s = read_rig(rig, obj)
    np.testing.assert_allclose(s.heads[0], [0, 0, 0])
    np.testing.assert_allclose(s.tails[0], [0.05, 0.1, 0])  # mean of (1,1,0),(0,1,0) in dm -> m
    np.testing.assert_allclose(s.tails[1], np.array([4, 1, 0]) / 3 * 0.1)  # CUBE: mean of group b
    rig["root"]["tail"] = {"strategy": "VERTEX", "vertex_index": 0}
    with pytest.raises(KisekaeError, match="zero length"):
        read_rig(rig, obj)
    rig["root"]["tail"] = {"strategy": "VERTEX", "vertex_index": 99}
    with pytest.raises(KisekaeError, match="outside the mesh"):
        read_rig(rig, obj)


def test_mhclo_formula_against_hand_computation(avatar):
    info = parse_mhclo(CLOTHES / "female_casualsuit01.mhclo")
    v = avatar.base_vertices.astype(np.float64)
    pos = fit_mhclo(info, v)
    i = 5
    (a, b, c), (wa, wb, wc), off = info["refs"][i], info["weights"][i], info["offsets"][i]
    sx = abs(v[5399, 0] - v[11998, 0]) / 1.3980
    sy = abs(v[791, 1] - v[881, 1]) / 2.2048
    sz = abs(v[962, 2] - v[5320, 2]) / 1.8461
    expect = wa * v[a] + wb * v[b] + wc * v[c] + off * [sx, sy, sz]
    np.testing.assert_allclose(pos[i], expect, atol=1e-9)


def test_mhclo_garments_load(avatar):
    from kisekae.avatar.builtin import load_builtin_avatar

    av = load_builtin_avatar()
    for name, n in (("female_casualsuit01", 2197), ("male_worksuit01", 3763)):
        g = load_mhclo(CLOTHES / f"{name}.mhclo", av)
        assert g.mesh.n_vertices == n
        np.testing.assert_allclose(g.skin.weights.sum(1), 1, atol=1e-5)
        assert len(g.covered_hint) > 1000
        # The fitted garment sits on the body: within 10 cm of the body's box.
        lo, hi = av.body.mesh.bounds()
        assert np.all(g.mesh.vertices.min(0) > lo - 0.1) and np.all(g.mesh.vertices.max(0) < hi + 0.1)


def test_add_garments_by_name_and_file():
    """The command line's and the benchmarks' garment list: names of the avatar's garments, ``.mhclo`` files fitted and
    added once, in order; another file type or an unknown name is an error naming it."""
    from kisekae.avatar.builtin import load_builtin_avatar

    av = load_builtin_avatar()
    suit = CLOTHES / "female_casualsuit01.mhclo"
    names = add_garments(av, ["skirt", str(suit), "tights", suit])
    assert names == ["skirt", "female_casualsuit01", "tights", "female_casualsuit01"]
    assert av.part("female_casualsuit01").mesh.n_vertices == 2197 and list(av.garments).count("female_casualsuit01") == 1
    with pytest.raises(KisekaeError, match="unsupported garment file type") as err:
        add_garments(av, ["coat.fbx"])
    assert "coat.fbx" in str(err.value)
    with pytest.raises(KisekaeError):
        add_garments(av, ["no_such_garment"])


def test_mhclo_pointing_at_missing_vertices(tmp_path, avatar):
    text = (CLOTHES / "female_casualsuit01.mhclo").read_text()
    text = text.replace("17090 17384 17383 0.16911", "99999 17384 17383 0.16911", 1)
    p = tmp_path / "bad.mhclo"
    p.write_text(text)
    (tmp_path / "female_casualsuit01.obj").write_text((CLOTHES / "female_casualsuit01.obj").read_text())
    with pytest.raises(KisekaeError, match=r"bad.mhclo: refers to base vertex 99999, but the base mesh has 19158"):
        load_mhclo(p, avatar)


def test_mhclo_vertex_count_mismatch(tmp_path, avatar):
    p = tmp_path / "g.mhclo"
    p.write_text("obj_file g.obj\nverts 0\n1 2 3 0.3 0.3 0.4 0 0 0\n")
    (tmp_path / "g.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    with pytest.raises(KisekaeError, match="1 vertex lines but g.obj has 3"):
        load_mhclo(p, avatar)


def test_bvh_parses_real_excerpt():
    clip = read_bvh(BVH)
    assert len(clip.joints) == 31 and clip.n_frames == 3
    assert clip.frame_time == pytest.approx(1 / 120, rel=1e-3)


def test_bvh_wrong_channel_count(tmp_path):
    text = BVH.read_text().splitlines()
    motion = text.index("MOTION")
    text[motion + 3] = text[motion + 3] + " 1.0"
    p = tmp_path / "bad.bvh"
    p.write_text("\n".join(text))
    with pytest.raises(KisekaeError, match=r"bad.bvh: line \d+: frame has 97 values but the hierarchy declares 96"):
        read_bvh(p)
    bad = BVH.read_text().replace("CHANNELS 3 Zrotation Yrotation Xrotation", "CHANNELS 2 Zrotation Yrotation Xrotation", 1)
    with pytest.raises(KisekaeError, match="declares 2 channels but names 3"):
        parse_bvh(bad, "x.bvh")


def test_bvh_truncated(tmp_path):
    p = tmp_path / "t.bvh"
    p.write_text(BVH.read_text()[:400])
    with pytest.raises(KisekaeError, match="t.bvh"):
        read_bvh(p)


def test_bvh_retarget_matches_bone_directions(avatar_cmu):
    s = avatar_cmu.skeleton
    clip = read_bvh(BVH)
    motion = load_bvh(BVH, s, "1:3")
    assert motion.frame_names == ["cmu_35_01_excerpt:1", "cmu_35_01_excerpt:2"]
    # Independent check: the posed left thigh points along the BVH's posed LeftUpLeg -> LeftLeg offset.
    q, _ = clip.global_rotations(2)
    names = [j.name for j in clip.joints]
    b = names.index("LeftUpLeg")
    child = names.index("LeftLeg")
    want = q[b] @ clip.joints[child].offset
    w = motion.poses[1].world_matrices(s)
    got = w[s.index["LeftUpLeg"], :3, 1]
    np.testing.assert_allclose(got, want / np.linalg.norm(want), atol=1e-6)


def _still_clip():
    """The packaged clip's hierarchy with one frame of all zeros: the BVH's own rest pose."""
    text = BVH.read_text()
    head, motion = text.split("MOTION")
    lines = motion.strip().splitlines()
    n = len(lines[-1].split())
    return parse_bvh(head + "MOTION\nFrames: 1\n" + lines[1] + "\n" + " ".join(["0"] * n) + "\n", "still")


def test_bvh_retarget_keeps_the_trunk_and_branch_bones_in_their_rest_place(avatar_cmu):
    """In the clip's own rest pose the trunk (hips to head) and the branch bones (CMU's LHipJoint, from the pelvis
    centre to the hip socket) keep their rest rotations and the fingers their rest place on the hand, while the limbs turn from MakeHuman's A-pose to the CMU
    T-pose, the hands keep their rest place on the forearms; and in every frame of the clip the hip sockets keep their
    rest place in the pelvis frame (copying the branch's direction moved them 7 cm)."""
    from kisekae.io.bvh import retarget

    s = avatar_cmu.skeleton
    pose = retarget(_still_clip(), s).poses[0]
    w = pose.world_matrices(s)
    rest = s.rest.astype(np.float64)
    for name in ("LowerBack", "Spine", "Spine1", "Neck", "Neck1", "Head", "LHipJoint", "RHipJoint"):
        i = s.index[name]
        np.testing.assert_allclose(w[i, :3, :3], rest[i, :3, :3], atol=1e-6, err_msg=name)
    # fingers keep their place on the hand, and the hands (CMU's have two children, so no one direction to copy)
    # theirs on the forearm: keeping their world rest rotation bent the wrists 45 degrees in the T-pose
    for name in ("LeftFingerBase", "LeftHandFinger1", "LThumb", "RThumb", "LeftHand", "RightHand"):
        i = s.index[name]
        p = s.parents[i]
        np.testing.assert_allclose(np.linalg.inv(w[p]) @ w[i], np.linalg.inv(rest[p]) @ rest[i], atol=1e-6,
                                   err_msg=name)
    turned = np.degrees(np.arccos(np.clip(w[s.index["LeftArm"], :3, 1] @ rest[s.index["LeftArm"], :3, 1], -1, 1)))
    assert turned > 30  # the arm goes from the A-pose up to the T-pose
    hips = s.index["Hips"]
    for frame in load_bvh(BVH, s).poses:
        w = frame.world_matrices(s)
        for side in ("LeftUpLeg", "RightUpLeg"):
            i = s.index[side]
            got = np.linalg.inv(w[hips]) @ w[i][:, 3]
            want = np.linalg.inv(rest[hips]) @ rest[i][:, 3]
            np.testing.assert_allclose(got, want, atol=1e-6, err_msg=side)


def test_bvh_fingers_turn_about_the_same_axis_relative_to_the_finger(avatar_cmu):
    """A clip finger's turn about its joint (relative to its parent) is given to our finger with the same angle and with
    its axis at the same angle to the finger: CMU's thumb and finger joints point 68-82 degrees away from ours, so
    the same turn about the same world axes twisted ours and bent the thumb into the palm. Independent check from the
    clip's global rotations and rest offsets."""
    from scipy.spatial.transform import Rotation

    s = avatar_cmu.skeleton
    clip = read_bvh(BVH)
    names = [j.name for j in clip.joints]
    motion = load_bvh(BVH, s)
    rest = s.rest.astype(np.float64)
    checked = 0
    for frame in (1, 2):
        q, _ = clip.global_rotations(frame)
        w = motion.poses[frame].world_matrices(s)
        for name in ("LThumb", "RThumb", "LeftFingerBase", "RightFingerBase"):
            b = names.index(name)
            kids = [c for c, jt in enumerate(clip.joints) if jt.parent == b]
            d_clip = clip.joints[kids[0]].offset if len(kids) == 1 else clip.joints[b].end_offset
            turn = Rotation.from_matrix(q[clip.joints[b].parent].T @ q[b]).as_rotvec()
            i = s.index[name]
            p = s.parents[i]
            ours = Rotation.from_matrix(rest[p, :3, :3] @ w[p, :3, :3].T @ w[i, :3, :3] @ rest[i, :3, :3].T).as_rotvec()
            assert np.linalg.norm(turn) > np.radians(5), name  # the clip turns this finger
            np.testing.assert_allclose(np.linalg.norm(ours), np.linalg.norm(turn), atol=1e-6, err_msg=name)
            cos_clip = turn @ d_clip / (np.linalg.norm(turn) * np.linalg.norm(d_clip))
            cos_ours = ours @ rest[i, :3, 1] / (np.linalg.norm(ours) * np.linalg.norm(rest[i, :3, 1]))
            np.testing.assert_allclose(cos_ours, cos_clip, atol=1e-6, err_msg=name)
            checked += 1
    assert checked == 8


def test_bvh_joints_the_rig_lacks_turn_the_bone_above(avatar):
    """CMU's Neck and Neck1 drive the game_engine rig's one neck bone: the neck takes both turns and the head only its
    own, so the head does not fold onto the neck (the clip's T-pose frame: Neck -16, Neck1 +21, Head +11 degrees
    about X). Independent check from the clip's global rotations."""
    from scipy.spatial.transform import Rotation

    s = avatar.skeleton
    clip = read_bvh(BVH)
    names = [j.name for j in clip.joints]
    motion = load_bvh(BVH, s)
    rest = s.rest.astype(np.float64)
    neck, head = s.index["neck_01"], s.index["head"]
    assert s.parents[head] == neck
    for frame in range(clip.n_frames):
        q, _ = clip.global_rotations(frame)
        w = motion.poses[frame].world_matrices(s)
        turn = rest[neck, :3, :3] @ w[neck, :3, :3].T @ w[head, :3, :3] @ rest[head, :3, :3].T
        want = q[names.index("Neck1")].T @ q[names.index("Head")]  # Head's own turn, not Neck1's with it
        got = Rotation.from_matrix(turn).magnitude()
        assert abs(got - Rotation.from_matrix(want).magnitude()) < 1e-6
    assert np.degrees(got) < 12  # frame 2: Head 8.9 degrees; with Neck1's turn added it was about 28


def test_frames_selection():
    assert parse_frames("1:3", 5) == [1, 2]
    assert parse_frames("-1", 5) == [4]
    with pytest.raises(KisekaeError, match="empty"):
        parse_frames("4:2", 5)
    with pytest.raises(KisekaeError, match="bad frame"):
        parse_frames("x", 5)
    # A:B:STEP, e.g. every 4th frame (30 fps out of 120)
    assert parse_frames("0:9:4", 12) == [0, 4, 8]
    assert parse_frames("::5", 12) == [0, 5, 10]
    for bad in ("0:9:0", "0:9:-1"):
        with pytest.raises(KisekaeError, match="STEP must be"):
            parse_frames(bad, 12)


def test_bvh_retargets_by_humanoid_role_onto_other_names(avatar):
    """The CMU clip drives the game_engine rig (other bone names) through humanoid roles."""
    motion = load_bvh(BVH, avatar.skeleton, "2")
    clip = read_bvh(BVH)
    q, _ = clip.global_rotations(2)
    names = [j.name for j in clip.joints]
    want = q[names.index("LeftUpLeg")] @ clip.joints[names.index("LeftLeg")].offset
    got = motion.poses[0].world_matrices(avatar.skeleton)[avatar.skeleton.index["thigh_l"], :3, 1]
    np.testing.assert_allclose(got, want / np.linalg.norm(want), atol=1e-6)


# -- .mhclo offset scale: MakeHuman's TMatrix (scale lines, else shear lines, else its own units) --------
VERTS = "verts 0\n100 200 300 0.2 0.3 0.5 1.5 -2.0 0.5\n4400 4401 4402 1 0 0 -0.4 0.8 1.2\n"


def _affine_part(box_from, box_to):
    """Linear part of the least-squares affine map taking the 8 corners of one box onto the other's
    (what MakeHuman's ``affine_matrix_from_points`` returns for exact data), by plain least squares."""
    corners = [(i, j, k) for i in (0, 1) for j in (0, 1) for k in (0, 1)]
    src = np.array([[box_from[0][i], box_from[1][j], box_from[2][k], 1.0] for i, j, k in corners])
    dst = np.array([[box_to[0][i], box_to[1][j], box_to[2][k]] for i, j, k in corners])
    m, *_ = np.linalg.lstsq(src, dst, rcond=None)
    return m[:3].T


def test_mhclo_without_scale_lines_offsets_are_base_mesh_units(tmp_path, avatar):
    # MakeHuman applies unscaled offsets in its own units (decimetres); kisekae works in metres.
    p = tmp_path / "g.mhclo"
    p.write_text(VERTS)
    v = avatar.base_vertices.astype(np.float64)
    pos = fit_mhclo(parse_mhclo(p), v)
    np.testing.assert_allclose(pos[0], 0.2 * v[100] + 0.3 * v[200] + 0.5 * v[300] + [0.15, -0.2, 0.05], atol=1e-9)
    np.testing.assert_allclose(pos[1], v[4400] + [-0.04, 0.08, 0.12], atol=1e-9)


def test_mhclo_shear_lines_scale_offsets_like_makehuman(tmp_path, avatar):
    v = avatar.base_vertices.astype(np.float64)
    pairs = {0: (5399, 11998), 1: (881, 791), 2: (962, 5320)}
    box = {0: (-0.7, 0.7), 1: (7.0, 9.5), 2: (-0.9, 0.95)}  # decimetres, as a MakeClothes file writes them
    lines = "".join(f"shear_{'xyz'[n]} {a} {b} {box[n][0]} {box[n][1]}\n" for n, (a, b) in pairs.items())
    p = tmp_path / "g.mhclo"
    # l_shear lines are ignored while plain shear lines are present.
    p.write_text(lines + "l_shear_x 1 2 0 1\nl_shear_y 1 2 0 1\nl_shear_z 1 2 0 1\n" + VERTS)
    info = parse_mhclo(p)
    m = _affine_part([box[n] for n in range(3)], [(v[a, n], v[b, n]) for n, (a, b) in pairs.items()])
    np.testing.assert_allclose(m - np.diag(np.diag(m)), 0, atol=1e-12)  # an axis-aligned box: no shear
    pos = fit_mhclo(info, v)
    np.testing.assert_allclose(pos[1], v[4400] + m @ [-0.4, 0.8, 1.2], atol=1e-9)
    # Scale lines take precedence over shear lines.
    p.write_text("x_scale 1 2 1.0\ny_scale 1 2 1.0\nz_scale 1 2 1.0\n" + lines + VERTS)
    s = np.abs(v[1] - v[2])
    np.testing.assert_allclose(fit_mhclo(parse_mhclo(p), v)[1], v[4400] + s * [-0.4, 0.8, 1.2], atol=1e-9)
    # Without plain shear lines, the left set is used.
    p.write_text(lines.replace("shear_", "l_shear_") + VERTS)
    np.testing.assert_allclose(fit_mhclo(parse_mhclo(p), v)[1], pos[1], atol=1e-9)


@pytest.mark.parametrize("lines, message", [
    ("x_scale 1 2 1.0\n", "y_scale and z_scale missing: the scale lines need all three axes"),
    ("shear_x 1 2 0 1\nshear_z 1 2 0 1\n", "shear_y missing: the shear lines need all three axes"),
    ("shear_x 1 2 0.5 0.5\n", "line 1: shear_x reference coordinates must differ"),
    ("r_shear_y 1 2 0\n", "line 1: r_shear_y needs 'a b x1 x2'"),
])
def test_mhclo_incomplete_scale_is_an_error(tmp_path, lines, message):
    p = tmp_path / "g.mhclo"
    p.write_text(lines + VERTS)
    with pytest.raises(KisekaeError, match=message):
        parse_mhclo(p)

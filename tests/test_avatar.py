import numpy as np
import pytest

from kisekae.avatar.mesh import Mesh, triangulate_quads
from kisekae.geom.weld import weld_map
from kisekae.avatar.pose import Pose, euler_xyz_matrix
from kisekae.avatar.poses import NAMED_POSES, named_pose, pose_from_dict
from kisekae.avatar.skinning import lbs, lbs_numpy, top_k_weights
from kisekae.errors import KisekaeError


def test_builtin_avatar_shape(avatar):
    assert avatar.body.mesh.n_vertices == 13380
    assert avatar.garments["tights"].mesh.n_vertices == 2674
    assert avatar.garments["skirt"].mesh.n_vertices == 720
    assert avatar.body.mesh.quads is not None and len(avatar.body.mesh.faces) == 2 * len(avatar.body.mesh.quads)
    lo, hi = avatar.body.mesh.bounds()
    assert lo[1] == pytest.approx(0.0, abs=1e-6)  # feet on the ground
    assert 1.5 < hi[1] - lo[1] < 1.9  # a human in metres
    # Faces +Z: the toes are in front of the heels.
    foot = avatar.skeleton.index["foot_l"]
    assert avatar.skeleton.tails[foot][2] > avatar.skeleton.heads[foot][2]
    # Left is +X.
    assert avatar.skeleton.heads[avatar.skeleton.index["thigh_l"]][0] > 0
    w = avatar.body.skin.weights
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-5)
    assert "uv0" in avatar.body.mesh.uvs and avatar.body.mesh.uvs["uv0"].shape == (13380, 2)


def test_rest_matrices_are_rotations_along_bones(avatar):
    s = avatar.skeleton
    r = s.rest[:, :3, :3].astype(np.float64)
    np.testing.assert_allclose(np.einsum("bij,bik->bjk", r, r), np.tile(np.eye(3), (s.n_bones, 1, 1)), atol=1e-5)
    d = s.tails - s.heads
    np.testing.assert_allclose(r[:, :, 1], d / np.linalg.norm(d, axis=1, keepdims=True), atol=1e-5)
    # DESIGN.md: the thigh's local X axis leans about 26 degrees.
    x = r[s.index["thigh_l"], :, 0]
    lean = np.degrees(np.arccos(abs(x[0])))
    assert 20 < lean < 32


def test_body_is_closed_and_outward(avatar):
    m = avatar.body.mesh
    e = np.sort(np.concatenate([m.faces[:, [0, 1]], m.faces[:, [1, 2]], m.faces[:, [2, 0]]]), axis=1)
    _, counts = np.unique(e, axis=0, return_counts=True)
    assert np.all(counts == 2)


def test_lbs_numba_equals_numpy(avatar):
    for name in ("crouch", "leg_raise", "twist"):
        m = named_pose(avatar.skeleton, name).skinning_matrices(avatar.skeleton)
        sk = avatar.body.skin
        a = lbs(avatar.body.mesh.vertices, sk.indices, sk.weights, m)
        b = lbs_numpy(avatar.body.mesh.vertices, sk.indices, sk.weights, m)
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_rest_pose_is_identity(avatar):
    pose = named_pose(avatar.skeleton, "stand")
    np.testing.assert_allclose(pose.skinning_matrices(avatar.skeleton), np.tile(np.eye(4), (53, 1, 1)), atol=1e-5)
    np.testing.assert_allclose(avatar.posed_vertices("body", pose), avatar.body.mesh.vertices, atol=1e-5)


def test_leg_raise_points_thigh_forward(avatar):
    s = avatar.skeleton
    j = s.index["thigh_l"]
    w = named_pose(s, "leg_raise").world_matrices(s)
    rest_dir = s.rest[j, :3, 1].astype(float)
    # -90 degrees about +X turns (x, y, z) into (x, z, -y)... applied to the rest direction.
    c, sn = np.cos(np.radians(-90)), np.sin(np.radians(-90))
    rx = np.array([[1, 0, 0], [0, c, -sn], [0, sn, c]])
    np.testing.assert_allclose(w[j, :3, 1], rx @ rest_dir, atol=1e-6)
    assert w[j, 2, 1] > 0.9  # forward
    # The child follows its posed parent.
    k = s.index["calf_l"]
    np.testing.assert_allclose(w[k, :3, 3], w[j, :3, :3] @ s.local_rest[k, :3, 3] + w[j, :3, 3], atol=1e-6)


def test_crouch_world_rotations_compose(avatar):
    s = avatar.skeleton
    w = named_pose(s, "crouch").world_matrices(s)
    j = s.index["calf_r"]
    # calf world rotation = R_x(-110) R_x(+130) applied to its rest frame = R_x(20) R_rest.
    a = np.radians(20)
    rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    np.testing.assert_allclose(w[j, :3, :3], rx @ s.rest[j, :3, :3], atol=1e-6)


def test_named_poses_all_build(avatar, avatar_cmu):
    for name in NAMED_POSES:
        for av in (avatar, avatar_cmu):
            p = named_pose(av.skeleton, name)
            assert np.all(np.isfinite(p.world_matrices(av.skeleton)))


def test_pose_file_euler_and_errors(avatar):
    s = avatar.skeleton
    p = pose_from_dict(s, {"calf_l": {"euler_xyz": [0.3, 0.2, 0.1]}})
    np.testing.assert_allclose(p.rotations[s.index["calf_l"]], euler_xyz_matrix(0.3, 0.2, 0.1))
    # Blender XYZ order: X first, then Y, then Z.
    rz = euler_xyz_matrix(0, 0, 0.1)
    ry = euler_xyz_matrix(0, 0.2, 0)
    rx = euler_xyz_matrix(0.3, 0, 0)
    np.testing.assert_allclose(euler_xyz_matrix(0.3, 0.2, 0.1), rz @ ry @ rx)
    with pytest.raises(KisekaeError, match="unknown bone 'thigh_left'.*thigh_l"):
        pose_from_dict(s, {"thigh_left": {"euler_xyz": [0, 0, 0]}}, source="my.json")
    with pytest.raises(KisekaeError, match="world_axis"):
        pose_from_dict(s, {"thigh_l": {"degrees": 3}})
    with pytest.raises(KisekaeError, match="unknown pose"):
        named_pose(s, "dance")


def test_pose_rejects_nan():
    with pytest.raises(KisekaeError, match="non-finite"):
        Pose(np.full((2, 3, 3), np.nan))


def test_mesh_weld_and_edges():
    # Two quads sharing an edge, with the shared edge duplicated (a UV seam).
    v = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [1, 0, 0], [2, 0, 0], [2, 1, 0], [1, 1, 0]], float)
    q = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    m = Mesh(v, triangulate_quads(q), q)
    np.testing.assert_array_equal(m.weld, [0, 1, 2, 3, 1, 5, 6, 2])
    assert len(m.edges) == 7  # 4 + 4 sides, one shared
    assert m.neighbors[4].nnz == m.neighbors[1].nnz == 3
    np.testing.assert_allclose(m.normals[:, 2], 1.0)
    assert np.array_equal(weld_map(v), m.weld)


def test_mesh_rejects_bad_input():
    with pytest.raises(KisekaeError, match="out of range"):
        Mesh(np.zeros((3, 3)), [[0, 1, 3]])
    with pytest.raises(KisekaeError, match="non-finite"):
        Mesh(np.array([[0, 0, np.nan], [1, 0, 0], [0, 1, 0]]), [[0, 1, 2]])


def test_top_k_weights():
    d = np.array([[0.1, 0.5, 0.2, 0.2], [0, 0, 0, 3.0]])
    s = top_k_weights(d, 2)
    np.testing.assert_allclose(s.weights[0], [0.5 / 0.7, 0.2 / 0.7], atol=1e-6)
    assert s.indices[1, 0] == 3 and s.weights[1, 0] == 1.0
    with pytest.raises(KisekaeError, match="no skin weight"):
        top_k_weights(np.zeros((1, 3)))


def test_named_poses_resolve_through_a_humanoid_mapping(avatar):
    """On a rig with other bone names, named poses follow the VRM humanoid mapping."""
    from kisekae.avatar.skeleton import Skeleton

    s = avatar.skeleton
    renamed = Skeleton([f"J_Bip_{i}" for i in range(s.n_bones)], s.parents, s.rest, s.tails)
    with pytest.raises(KisekaeError, match="unknown bone"):
        named_pose(renamed, "leg_raise")
    renamed.humanoid = {"leftUpperLeg": s.index["thigh_l"], "hips": s.index["pelvis"]}
    a = named_pose(s, "leg_raise").world_matrices(s)
    b = named_pose(renamed, "leg_raise").world_matrices(renamed)
    np.testing.assert_allclose(a, b, atol=1e-12)


def test_lbs_with_normals_kernel_matches_reference():
    """The float32 position-and-normal skinning (the vertex stage) against its NumPy reference."""
    from kisekae.avatar.skinning import lbs_numpy, lbs_with_normals, lbs_with_normals_numpy

    rng = np.random.default_rng(4)
    n, b = 500, 6
    v = rng.normal(size=(n, 3)).astype(np.float32)
    nrm = rng.normal(size=(n, 3)).astype(np.float32)
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    idx = rng.integers(0, b, size=(n, 4)).astype(np.int32)
    w = rng.dirichlet(np.ones(4), size=n).astype(np.float32)
    mats = np.tile(np.eye(4, dtype=np.float32), (b, 1, 1))
    for k in range(b):
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        mats[k, :3, :3], mats[k, :3, 3] = q, rng.normal(size=3)
    pos, out_n = lbs_with_normals(v, nrm, idx, w, mats, np.empty_like(v), np.empty_like(v))
    ref_p, ref_n = lbs_with_normals_numpy(v, nrm, idx, w, mats)
    np.testing.assert_allclose(pos, ref_p, atol=1e-5)
    np.testing.assert_allclose(out_n, ref_n, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(out_n, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(pos, lbs_numpy(v, idx, w, mats), atol=1e-5)  # positions: the float64 reference
    assert lbs_numpy(v, idx, w, mats, dtype=np.float64).dtype == np.float64

import numpy as np
import pytest

from kisekae.avatar.skeleton import Skeleton, vec_roll_to_mat3
from kisekae.errors import KisekaeError


def cols(x, y, z):
    return np.array([x, y, z], float).T


@pytest.mark.parametrize(
    "vec, roll, expected",
    [
        # Along +Y the bone frame is the armature frame.
        ((0, 1, 0), 0.0, np.eye(3)),
        # Along +Z: theta = 1, X = (1, 0, 0), Z = (0, -1, 0).
        ((0, 0, 2), 0.0, cols((1, 0, 0), (0, 0, 1), (0, -1, 0))),
        # Along +X: X = (1 - 1, -1, 0), Z = (0, 0, 1 - 0).
        ((1, 0, 0), 0.0, cols((0, -1, 0), (1, 0, 0), (0, 0, 1))),
        # (0.6, 0, 0.8): X = (1 - .36, -.6, -.48), Z = (-.48, -.8, 1 - .64).
        ((0.6, 0, 0.8), 0.0, cols((0.64, -0.6, -0.48), (0.6, 0, 0.8), (-0.48, -0.8, 0.36))),
        # Straight down -Y: Blender mirrors about Z.
        ((0, -1, 0), 0.0, np.diag([-1.0, -1.0, 1.0])),
        # Roll 90 degrees about +Y turns X = (1, 0, 0) into (0, 0, -1).
        ((0, 1, 0), np.pi / 2, cols((0, 0, -1), (0, 1, 0), (1, 0, 0))),
    ],
)
def test_vec_roll_to_mat3_hand_cases(vec, roll, expected):
    np.testing.assert_allclose(vec_roll_to_mat3(vec, roll), expected, atol=1e-12)


def test_vec_roll_to_mat3_almost_down_is_continuous_and_orthonormal():
    # x = 1e-3: theta_alt = 1e-6 > (2.5e-4)^2, so Blender's series branch applies:
    # theta = 1e-6/2 + 1e-12/8 and X = (1 - x^2/theta, -x, -x z/theta).
    x = 1e-3
    v = np.array([x, -1.0, 0.0])
    v /= np.linalg.norm(v)
    m = vec_roll_to_mat3(v, 0.0)
    ta = v[0] ** 2 + v[2] ** 2
    theta = ta * 0.5 + ta * ta * 0.125
    np.testing.assert_allclose(m[:, 0], [1 - v[0] ** 2 / theta, -v[0], 0.0], atol=1e-12)
    np.testing.assert_allclose(m.T @ m, np.eye(3), atol=1e-5)
    np.testing.assert_allclose(m[:, 0], [-1, 0, 0], atol=2e-3)  # close to the exact -Y answer
    # Below the critical threshold it is exactly the -Y answer.
    np.testing.assert_allclose(vec_roll_to_mat3([1e-5, -1.0, 0.0], 0.0), np.diag([-1.0, -1.0, 1.0]), atol=1e-9)


def test_vec_roll_to_mat3_rejects_zero_length():
    with pytest.raises(KisekaeError, match="zero length"):
        vec_roll_to_mat3([0, 0, 0], 0.0)


def test_random_directions_give_rotations_with_y_along_bone():
    rng = np.random.default_rng(1)
    for _ in range(200):
        v = rng.normal(size=3)
        m = vec_roll_to_mat3(v, rng.uniform(-3, 3))
        # Blender's series expansion near -Y is only orthonormal to about 1e-5.
        np.testing.assert_allclose(m.T @ m, np.eye(3), atol=1e-4)
        assert np.linalg.det(m) == pytest.approx(1.0, abs=1e-4)
        np.testing.assert_allclose(m[:, 1], v / np.linalg.norm(v), atol=1e-12)


def test_skeleton_validation():
    rest = np.tile(np.eye(4), (2, 1, 1))
    with pytest.raises(KisekaeError, match="parent"):
        Skeleton(["a", "b"], [1, -1], rest)
    with pytest.raises(KisekaeError, match="duplicate"):
        Skeleton(["a", "a"], [-1, 0], rest)
    s = Skeleton(["a", "b"], [-1, 0], rest)
    with pytest.raises(KisekaeError, match="unknown bone 'c'"):
        s.bone("c")


def test_pose_offsets_move_bone_heads_in_the_parent_frame():
    """FK with offsets against a hand computation: a root at (0, 1, 0) turned 90 degrees about Z,
    a child 0.5 m up its parent's Y axis, offset by 0.2 m along the parent's X axis."""
    from kisekae.avatar.pose import Pose

    rest = np.tile(np.eye(4), (2, 1, 1))
    rest[0, :3, 3] = [0, 1, 0]
    rest[1, :3, 3] = [0, 1.5, 0]
    sk = Skeleton(["root", "child"], [-1, 0], rest)
    rz = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    pose = Pose(np.stack([rz, np.eye(3)]), [0.1, 0, 0], offsets=[[0, 0, 0.3], [0.2, 0, 0]])
    w = pose.world_matrices(sk)
    np.testing.assert_allclose(w[0, :3, 3], [0.1, 1, 0.3])
    # child head: root head + R_root @ ((0, 0.5, 0) + (0.2, 0, 0)) = (0.1, 1, 0.3) + (-0.5, 0.2, 0)
    np.testing.assert_allclose(w[1, :3, 3], [-0.4, 1.2, 0.3])
    np.testing.assert_allclose(Pose(np.stack([rz, np.eye(3)]), [0.1, 0, 0]).world_matrices(sk)[1, :3, 3],
                               [-0.4, 1.0, 0.0])
    with pytest.raises(KisekaeError, match=r"offsets must be \(2, 3\)"):
        Pose(np.stack([rz, np.eye(3)]), offsets=np.zeros((3, 3)))

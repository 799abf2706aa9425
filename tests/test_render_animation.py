"""Pose in-betweens: slerp against the analytic rotation path."""

import numpy as np
import pytest

from kisekae.avatar.pose import Pose
from kisekae.errors import KisekaeError
from kisekae.render.animation import inbetween, interpolate_pose, slerp_rotations


def rot_z(deg):
    c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def rot_x(deg):
    c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
    return np.array([[1.0, 0, 0], [0, c, -s], [0, s, c]])


def test_slerp_follows_the_rotation_about_the_shared_axis():
    base = rot_x(30)
    a = np.stack([base @ rot_z(10), np.eye(3)])
    b = np.stack([base @ rot_z(130), rot_x(-90)])
    for t in (0.0, 0.25, 0.5, 1.0):
        got = slerp_rotations(a, b, t)
        assert np.allclose(got[0], base @ rot_z(10 + 120 * t), atol=1e-12)
        assert np.allclose(got[1], rot_x(-90 * t), atol=1e-12)
        assert np.allclose(got @ got.transpose(0, 2, 1), np.eye(3), atol=1e-12)


def test_inbetween_counts_and_endpoints():
    p0 = Pose(np.stack([np.eye(3)] * 2), np.zeros(3), "a")
    p1 = Pose(np.stack([rot_z(90), rot_x(40)]), np.array([0.0, 0.1, 0.0]), "b")
    seq = inbetween([p0, p1], 4)
    assert len(seq) == 5 and seq[0] is p0 and seq[-1] is p1
    assert np.allclose(seq[2].rotations[0], rot_z(45)) and np.allclose(seq[2].translation, [0, 0.05, 0])
    looped = inbetween([p0, p1], 3, loop=True)
    assert len(looped) == 6 and np.allclose(looped[4].rotations[1], rot_x(40 * 2 / 3))
    mid = interpolate_pose(p0, p1, 0.5)
    assert np.allclose(mid.rotations[1], rot_x(20))
    with pytest.raises(KisekaeError):
        inbetween([p0], 3)
    with pytest.raises(KisekaeError):
        slerp_rotations(np.eye(3)[None], np.stack([np.eye(3)] * 2), 0.5)


def test_interpolate_pose_lerps_offsets():
    a = Pose(np.tile(np.eye(3), (2, 1, 1)), np.zeros(3), "a", offsets=[[0, 0, 0], [0.2, 0, 0]])
    b = Pose(np.tile(np.eye(3), (2, 1, 1)), np.zeros(3), "b")
    mid = interpolate_pose(a, b, 0.25)
    np.testing.assert_allclose(mid.offsets, [[0, 0, 0], [0.15, 0, 0]])
    assert interpolate_pose(b, b, 0.5).offsets is None

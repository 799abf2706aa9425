"""Covered skin: BVH ray kernel vs brute force, analytic plane cases, the .mhclo delete_verts."""

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.fit.covered import agreement, avatar_covered, covered_in_pose, covered_triangles, covered_vertices
from kisekae.geom.raycast import ray_hits, ray_hits_reference


def grid(n, h, y=0.0, x0=0.0, z0=0.0):
    i, k = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    pts = np.column_stack([x0 + h * i.ravel(), np.full(n * n, y), z0 + h * k.ravel()])
    q = (i[:-1, :-1] * n + k[:-1, :-1]).ravel()
    faces = np.concatenate([np.column_stack([q, q + 1, q + n + 1]), np.column_stack([q, q + n + 1, q + n])])
    return pts, faces


def test_bvh_rays_match_brute_force():
    rng = np.random.default_rng(0)
    v = rng.uniform(-0.1, 0.1, (600, 3))
    f = rng.integers(0, 600, (400, 3))
    f = f[(f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])]
    o = rng.uniform(-0.12, 0.12, (2000, 3))
    d = rng.normal(size=(2000, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    for tmax in (0.01, 0.05, 1.0):
        got = ray_hits(o, d, tmax, v, f)
        ref = ray_hits_reference(o, d, tmax, v[f])
        assert 0 < ref.sum() < len(ref)
        np.testing.assert_array_equal(got, ref)


BODY, BODY_F = grid(41, 0.005)  # 20 x 20 cm of skin in y = 0, normals +Y
UP = np.tile([0.0, 1.0, 0.0], (len(BODY), 1))


@pytest.mark.parametrize("gap, angle", [(0.01, 30.0), (0.02, 20.0), (0.005, 45.0)])
def test_plane_under_a_square_garment(gap, angle):
    g, gf = grid(11, 0.01, y=gap, x0=0.05, z0=0.05)  # garment square x, z in [5, 15] cm
    cov = covered_in_pose(BODY, UP, g, gf, cone_angle=angle, cone_rays=8, start_offset=0.001)
    # the cone's footprint on the garment plane has radius tan(angle) * (gap + offset)
    reach = np.tan(np.radians(angle)) * (gap + 0.001)
    inset = np.minimum.reduce([BODY[:, 0] - 0.05, 0.15 - BODY[:, 0], BODY[:, 2] - 0.05, 0.15 - BODY[:, 2]])
    assert np.all(cov[inset > reach + 1e-6])
    assert not np.any(cov[inset < -1e-6])  # outside the square: the normal ray misses
    # where only the side rays miss, the vertex is not covered (8 rays: axis-aligned ones reach `reach`)
    assert not np.any(cov[(inset >= 0) & (inset < reach - 1e-6)])
    # too far away: not covered
    far, ff = grid(11, 0.01, y=0.06, x0=0.05, z0=0.05)
    assert not covered_in_pose(BODY, UP, far, ff, max_distance=0.05).any()
    assert covered_in_pose(BODY, UP, far, ff, max_distance=0.07, cone_rays=0).sum() > 0


def test_covered_in_every_pose_only():
    g, gf = grid(11, 0.01, y=0.01, x0=0.05, z0=0.05)
    moved = g + [0.04, 0, 0]  # in the second pose the garment slides 4 cm along +X
    one = covered_vertices([BODY], BODY_F, [g], gf)
    both = covered_vertices([BODY, BODY], BODY_F, [g, moved], gf)
    second = covered_vertices([BODY], BODY_F, [moved], gf)
    np.testing.assert_array_equal(both, one & second)
    assert one.sum() > both.sum() > 0
    tri = covered_triangles(both, BODY_F)
    assert np.array_equal(tri, both[BODY_F].all(axis=1)) and tri.sum() > 0


def test_agreement_counts():
    c = np.array([1, 1, 1, 0, 0, 0], bool)
    r = agreement(c, [1, 2, 3, 4])
    assert r["precision"] == pytest.approx(2 / 3) and r["recall"] == pytest.approx(0.5)
    assert r["iou"] == pytest.approx(2 / 5)
    with pytest.raises(KisekaeError, match="hint"):
        agreement(c, [9])


def test_covered_bad_input():
    g, gf = grid(5, 0.01, y=0.01)
    with pytest.raises(KisekaeError, match="cone_angle"):
        covered_in_pose(BODY, UP, g, gf, cone_angle=95)
    with pytest.raises(KisekaeError, match="body_normals"):
        covered_in_pose(BODY, UP[:3], g, gf)
    with pytest.raises(KisekaeError, match="max_distance"):
        covered_in_pose(BODY, UP, g, gf, max_distance=0)
    with pytest.raises(KisekaeError, match="garment_poses"):
        covered_vertices([BODY, BODY], BODY_F, [g], gf)
    with pytest.raises(KisekaeError, match="garment_faces"):
        covered_vertices([BODY], BODY_F, [g], gf + 100)
    bad = g.copy()
    bad[0, 0] = np.inf
    with pytest.raises(KisekaeError, match="garment_poses"):
        covered_vertices([BODY], BODY_F, [bad], gf)


@pytest.mark.parametrize("garment, min_iou", [("male_worksuit01", 0.78), ("female_casualsuit01", 0.6)])
def test_mhclo_delete_verts_agree(garment, min_iou):
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import named_pose
    from kisekae.data import sample_path
    from kisekae.io.mhclo import load_mhclo

    av = load_builtin_avatar()
    g = load_mhclo(sample_path(garment + ".mhclo"), av)
    av = type(av)(av.skeleton, av.body, {garment: g}, av.base_vertices, av.base_skin)
    poses = [named_pose(av.skeleton, p) for p in ("stand", "crouch", "leg_raise")]
    cov, tri = avatar_covered(av, poses, [garment])
    r = agreement(cov, g.covered_hint)
    # measured: worksuit precision 0.94 / recall 0.89 / IoU 0.84, casual suit 0.93 / 0.71 / 0.68
    assert r["iou"] >= min_iou and r["precision"] >= 0.85
    stand, _ = avatar_covered(av, poses[:1], [garment])
    assert np.all(stand >= cov) and stand.sum() > cov.sum()  # more poses, fewer covered
    assert tri.sum() > 0.1 * len(tri)

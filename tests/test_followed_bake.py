"""The two-pass candidate bake (kisekae.fit.followed_bake): triangles near the skinned cloth and near the corrected
cloth."""

from __future__ import annotations

import numpy as np
import pytest

from kisekae.avatar.builtin import load_builtin_avatar
from kisekae.avatar.contact import GAP, apply_contact
from kisekae.avatar.poses import range_of_motion_poses
from kisekae.avatar.pose import Pose
from kisekae.fit.edge_lift import vertex_samples
from kisekae.fit.runtime import garment_samples
from kisekae.fit.fix import params_for
from kisekae.fit.followed_bake import FOLLOW_REACH, bake_followed_candidates
from kisekae.fit.surface import bake_surface_candidates, garment_chords, one_ring, surface_runtime
from kisekae.fit.unflip import vertex_faces
from kisekae.geom.normals import vertex_normals

POSES = 12


def _point_triangle_distance(p, a, b, c) -> float:
    """Distance from p to triangle abc, straight from the definition: the plane's foot when it lies inside, else
    the nearest of the three sides."""
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n)
    foot = p - np.dot(p - a, n) * n
    inside = all(np.dot(np.cross(v1 - v0, foot - v0), n) >= 0 for v0, v1 in ((a, b), (b, c), (c, a)))
    if inside:
        return abs(float(np.dot(p - a, n)))

    def side(u, v):
        t = np.clip(np.dot(p - u, v - u) / np.dot(v - u, v - u), 0.0, 1.0)
        return float(np.linalg.norm(p - (u + t * (v - u))))

    return min(side(a, b), side(b, c), side(c, a))


@pytest.fixture(scope="module")
def skirt_bakes():
    av = apply_contact(load_builtin_avatar(), GAP)
    params = params_for("skirt", None)
    followed = bake_followed_candidates(av, "skirt", params, samples=garment_samples(av, "skirt"), n_poses=POSES)
    first = bake_surface_candidates(av, "skirt", n_poses=POSES)
    return av, params, followed, first


def test_with_no_reach_the_bake_is_pass_one(skirt_bakes):
    av, params, followed, first = skirt_bakes
    samples = garment_samples(av, "skirt")
    vertex, sample = bake_followed_candidates(av, "skirt", params, samples=samples, n_poses=POSES, reach=0.0)
    np.testing.assert_array_equal(vertex.triangles, first.triangles)
    np.testing.assert_array_equal(sample.triangles,
                                  bake_surface_candidates(av, "skirt", n_poses=POSES,
                                                          points_of=samples.points).triangles)
    assert followed[0].triangles.shape == first.triangles.shape and followed[1].triangles.shape == sample.triangles.shape


def test_added_triangles_are_where_the_corrected_cloth_lies(skirt_bakes):
    """Every triangle pass 2 adds to a vertex lies within the reach of that vertex as the per-frame correction (with
    pass 1's candidates) places it in one of the bake's poses; and pass 2 adds some."""
    av, params, (vertex, sample), first = skirt_bakes
    mesh = av.part("skirt").mesh
    added = [(v, int(t)) for v in range(mesh.n_vertices)
             for t in set(vertex.triangles[v].tolist()) - set(first.triangles[v].tolist())]
    assert added, "pass 2 added no triangle"
    samples = garment_samples(av, "skirt")
    s_first = bake_surface_candidates(av, "skirt", n_poses=POSES, points_of=samples.points)
    lift = (samples, s_first, vertex_samples(samples, mesh.weld))
    gfaces = (np.asarray(mesh.faces, dtype=np.int64), vertex_faces(mesh.faces, mesh.n_vertices, mesh.weld))
    faces = av.body.mesh.faces
    near = {pair: np.inf for pair in added}
    for pose in [Pose.rest(av.skeleton)] + range_of_motion_poses(av.skeleton, POSES, 0):
        m = pose.skinning_matrices(av.skeleton)
        body = np.asarray(av.body.posed(m), dtype=np.float64)
        x = np.asarray(av.part("skirt").posed(m), dtype=np.float64)
        new = surface_runtime(x, first, one_ring(mesh.n_vertices, mesh.edges, mesh.weld), body,
                              vertex_normals(body, faces).astype(np.float64), faces, params,
                              chord=garment_chords(mesh), lift=lift, faces=gfaces)[0]
        for v, t in added:
            near[(v, t)] = min(near[(v, t)], _point_triangle_distance(new[v], *body[faces[t]]))
    far = {pair: d for pair, d in near.items() if d > FOLLOW_REACH + 1e-9}
    assert not far, f"{len(far)} of {len(added)} added triangles never within reach, e.g. {list(far.items())[:3]}"

"""Capsule fitting and the exact-skin solver on the built-in avatar."""

import numpy as np
import pytest

from kisekae.fit import PushParams, fit_capsules, fit_report, push_out_exact


@pytest.fixture(scope="module")
def avatar():
    from kisekae.avatar.builtin import load_builtin_avatar

    return load_builtin_avatar()


def test_fit_capsules_cover_limbs(avatar):
    sk, body = avatar.skeleton, avatar.body
    rig = fit_capsules(body.mesh.vertices, body.skin.indices, body.skin.weights, sk.rest, sk.names)
    assert 20 <= len(rig) <= 2 * sk.n_bones
    rep = {r["bone"]: r for r in fit_report(rig, body.mesh.vertices, body.skin.indices, body.skin.weights, sk.rest)}
    # a calf is close to a tapered cylinder: its surface lies within a few cm of the capsule
    calf = rep["calf_l"]
    assert calf["capsules"] >= 1 and calf["outside_p95_m"] < 0.03


def test_exact_mode_stand_pose(avatar):
    from kisekae.avatar.poses import named_pose
    from kisekae.qa import BodyQuery
    from kisekae.qa.check import body_topology

    pose = named_pose(avatar.skeleton, "stand")
    m = pose.skinning_matrices(avatar.skeleton)
    q = BodyQuery(body_topology(avatar), avatar.body.posed(m))
    part = avatar.part("tights")
    x = part.posed(m)
    assert q.inside(x).sum() > 0  # the data clips at rest
    params = PushParams()
    new, info = push_out_exact(q, x, part.mesh.edges, params, garment_faces=part.mesh.faces)
    assert q.inside(new).sum() == 0
    assert info["push"].max() <= params.max_push + 1e-7
    # Clear vertices (farther than margin, and not the end of an edge that crosses the body) never move.
    far = ~info["contact"]
    assert np.abs(new[far] - x[far]).max() < 1e-4
    crossing_ends = np.unique(part.mesh.edges[q.crossing_edges(x, part.mesh.edges)].ravel())
    assert set(np.flatnonzero(info["contact"] & (info["d_before"] >= params.margin))) <= set(crossing_ends)
    assert q.crossing_edges(new, part.mesh.edges).sum() == 0

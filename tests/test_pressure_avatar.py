"""Pressure on the built-in avatar: tights and skirt pushed by the capsule field in a crouch."""

import numpy as np
import pytest

from kisekae.fit import PushParams, fit_capsules, push_out_capsules
from kisekae.fit.pressure import avatar_pressure


@pytest.fixture(scope="module")
def crouch():
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import named_pose

    av = load_builtin_avatar()
    sk, body = av.skeleton, av.body
    rig = fit_capsules(body.mesh.vertices, body.skin.indices, body.skin.weights, sk.rest, sk.names)
    pose = named_pose(sk, "crouch")
    m = pose.skinning_matrices(sk)
    a, b, ra, rb = rig.posed(pose.world_matrices(sk))
    after, pushed = {}, {}
    for g in ("tights", "skirt"):
        out, push, _ = push_out_capsules(av.part(g).posed(m), a, b, ra, rb, PushParams())
        after[g], pushed[g] = out, push
    return av, pose, after, pushed


def test_pressure_follows_the_push(crouch):
    av, pose, after, pushed = crouch
    p = avatar_pressure(av, pose, after)
    assert p.min() >= 0 and p.max() <= 1
    assert pushed["tights"].max() > 0.005 and p.max() == pytest.approx(1.0)
    # skin far from every garment (head, hands) feels nothing
    body = av.body.posed(pose.skinning_matrices(av.skeleton))
    top = body[:, 1] > np.percentile(body[:, 1], 90)
    assert np.all(p[top] == 0)
    # nothing pushed and no tightness: no pressure; tightness only adds
    m = pose.skinning_matrices(av.skeleton)
    still = {g: av.part(g).posed(m) for g in after}
    assert np.all(avatar_pressure(av, pose, still) == 0)
    tight = avatar_pressure(av, pose, after, {"tights": 1.0})
    assert np.all(tight >= p - 1e-12) and (tight > p + 1e-3).sum() > 100

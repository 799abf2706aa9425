"""Volume kept by parts (kisekae.avatar.volume_restore): the parts' closed volumes against an explicit construction,
their sum, rigid invariance, the bulge against analytic cases, bad input, and the offline solve on the body."""

import numpy as np
import pytest

from conftest import icosphere
from kisekae.avatar.volume_restore import (PartVolumes, contact_falloff, face_parts, part_caps, part_volumes,
                                           restore_part_volumes)
from kisekae.errors import KisekaeError
from kisekae.qa.selfcontact import signed_volume


def ring(faces, m):
    e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    e = np.unique(np.concatenate([e, e[:, ::-1]]), axis=0)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(e[:, 0], minlength=m))])
    return ptr, e[:, 1]


def two_bone_sphere(subdiv=3, radius=0.1, blend=0.0):
    """A sphere skinned to bone 0 (z < 0) and bone 1 (z > 0), with a linear blend over |z| < blend."""
    v, f = icosphere(subdiv, radius)
    f = f.astype(np.int64)
    z = v[:, 2] / radius
    w1 = np.clip(0.5 + z / (2 * blend), 0, 1) if blend > 0 else (z > 0).astype(float)
    idx = np.tile([0, 1], (len(v), 1))
    w = np.stack([1 - w1, w1], axis=1)
    return v, f, idx, w


def explicit_part_volume(v, f, parts, p):
    """Part ``p`` closed by hand: its triangles plus, per neighbouring part, a fan from the cut's centroid."""
    mine = f[parts == p]
    tris = [v[mine]]
    e = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    owner = np.tile(parts, 3)
    lookup = {(int(a), int(b)): int(o) for (a, b), o in zip(e, owner)}
    cuts = {}
    for (a, b), o in zip(e, owner):
        other = lookup[(int(b), int(a))]
        if o != other and p in (o, other):
            cuts.setdefault(tuple(sorted((int(o), int(other)))), []).append((int(a), int(b), int(o)))
    for key, edges in cuts.items():
        centre = v[np.unique([[a, b] for a, b, _ in edges])].mean(axis=0)
        for a, b, o in edges:
            if o == p:  # the part's own edge, reversed, closes it
                tris.append(np.array([[v[b], v[a], centre]]))
    t = np.concatenate(tris)
    return float(np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum() / 6.0)


def test_parts_sum_to_the_body_and_match_an_explicit_closure():
    v, f, idx, w = two_bone_sphere(blend=0.3)
    parts = face_parts(f, idx, w, 2)
    caps = part_caps(f, parts)
    vol = part_volumes(v, f, parts, caps, 2)
    total = signed_volume(v, f)
    assert vol.sum() == pytest.approx(total, rel=1e-12)
    for p in (0, 1):
        assert vol[p] == pytest.approx(explicit_part_volume(v, f, parts, p), rel=1e-12)
        assert vol[p] == pytest.approx(total / 2, rel=0.05)  # the cut runs near the equator


def test_a_part_moved_rigidly_keeps_its_volume():
    v, f, idx, w = two_bone_sphere()
    parts = face_parts(f, idx, w, 2)
    caps = part_caps(f, parts)
    rest = part_volumes(v, f, parts, caps, 2)
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    moved = v @ q.T + np.array([10.0, -4.0, 2.5])
    assert np.allclose(part_volumes(moved - moved.mean(0), f, parts, caps, 2) * np.linalg.det(q), rest, rtol=1e-9)


def test_restore_gives_back_a_shrunk_part_and_leaves_the_rest_pose():
    v, f, idx, w = two_bone_sphere(blend=0.4)
    ptr, nbr = ring(f, len(v))
    pv = PartVolumes(v, f, idx, w, 2, 1.0, ptr, nbr, parents=np.array([-1, 0]))
    pv.free[:] = True
    assert np.array_equal(pv.restore(v, []), v)  # nothing lost: nothing moves
    squashed = v.copy()
    top = v[:, 2] > 0
    squashed[top, 2] *= 0.7  # the upper half flattened: bone 1's part loses volume
    lost = pv.rest_volumes - pv.volumes(squashed)
    assert lost[1] > 0.1 * pv.rest_volumes[1]
    out = pv.restore(squashed, [], rounds=6)
    assert abs(pv.volumes(out)[1] / pv.rest_volumes[1] - 1) < 0.01  # the tie to the parent keeps a little back
    assert np.all(np.einsum("ij,ij->i", out - squashed, squashed) >= -1e-12)  # outward only


def test_contact_vertices_stay_and_the_mask_falls_off():
    v, f, idx, w = two_bone_sphere()
    ptr, nbr = ring(f, len(v))
    contact = np.flatnonzero(v[:, 2] > 0.09)
    psi = contact_falloff(len(v), contact, ptr, nbr, passes=3)
    assert np.all(psi[contact] == 0) and psi.max() == 1.0 and np.all((psi >= 0) & (psi <= 1))
    squashed = v * np.array([1.0, 1.0, 0.8])
    out, alpha = restore_part_volumes(squashed, part_volumes(v, f, face_parts(f, idx, w, 2),
                                                             part_caps(f, face_parts(f, idx, w, 2)), 2),
                                      f, face_parts(f, idx, w, 2), part_caps(f, face_parts(f, idx, w, 2)),
                                      idx, w, psi)
    assert np.all(alpha >= 0) and alpha.max() > 0
    assert np.array_equal(out[contact], squashed[contact])


def test_restore_does_not_depend_on_where_the_body_stands():
    v, f, idx, w = two_bone_sphere(blend=0.3)
    ptr, nbr = ring(f, len(v))
    pv = PartVolumes(v, f, idx, w, 2, 1.0, ptr, nbr)
    pv.free[:] = True
    squashed = v * np.array([1.0, 0.9, 0.8])
    shift = np.array([10.0, 0.0, -10.0])
    a = pv.restore(squashed, [])
    b = pv.restore(squashed + shift, []) - shift
    assert np.abs(a - b).max() < 1e-9


def test_bad_input_is_refused():
    v, f, idx, w = two_bone_sphere()
    ptr, nbr = ring(f, len(v))
    with pytest.raises(KisekaeError, match="skin of"):
        PartVolumes(v, f, idx[:-1], w[:-1], 2, 1.0, ptr, nbr)
    bad = w.copy()
    bad[0, 0] = np.nan
    with pytest.raises(KisekaeError, match="finite"):
        PartVolumes(v, f, idx, bad, 2, 1.0, ptr, nbr)
    with pytest.raises(KisekaeError, match="within the skeleton"):
        PartVolumes(v, f, idx + 5, w, 2, 1.0, ptr, nbr)
    with pytest.raises(KisekaeError, match="parents"):
        PartVolumes(v, f, idx, w, 2, 1.0, ptr, nbr, parents=[-1])


def test_offline_solve_keeps_the_crouch_volume(avatar):
    from kisekae.avatar.contact_solve import ContactSolveParams, body_contact_solve
    from kisekae.avatar.poses import named_pose
    from kisekae.qa.check import body_self_contact

    av = avatar
    m = named_pose(av.skeleton, "crouch").skinning_matrices(av.skeleton)
    x = av.body.skinned(m)
    measure = body_self_contact(av)
    kept = measure.measure(body_contact_solve(av, ContactSolveParams(keep_volume=True))(x, m))
    lost = measure.measure(body_contact_solve(av)(x, m))  # the default: no volume term
    assert lost["body_volume_change"] < -0.08  # the contact alone loses what skinning and the overlap took
    assert abs(kept["body_volume_change"]) <= 0.025
    assert kept["body_buried"] <= lost["body_buried"] + 5


def test_smoothed_directions_are_unit_and_keep_a_sphere_radial():
    from kisekae.avatar.volume_restore import smooth_directions
    from kisekae.geom.normals import vertex_normals

    v, f, _, _ = two_bone_sphere()
    ptr, nbr = ring(f, len(v))
    n = vertex_normals(v, f, dtype=np.float64)
    d = smooth_directions(n, ptr, nbr, 8)
    assert np.allclose(np.linalg.norm(d, axis=1), 1.0)
    radial = v / np.linalg.norm(v, axis=1)[:, None]
    assert np.einsum("ij,ij->i", d, radial).min() > 0.999
    np.testing.assert_allclose(smooth_directions(n, ptr, nbr, 0), n, atol=1e-12)


def test_crease_vertices_are_parts_facing_each_other_not_flat_skin():
    from kisekae.avatar.contact_solve import crease_vertices, detect_pairs_numpy

    a, fa = icosphere(2, 0.1)
    b, fb = icosphere(2, 0.1, (0.3, 0.0, 0.0))
    rest = np.concatenate([a, b])
    tri = np.concatenate([fa, fb + len(a)]).astype(np.int64)
    assert len(crease_vertices(rest, rest, tri)) == 0  # nothing faces anything at rest
    near = rest.copy()
    near[len(a):, 0] -= 0.3 - 0.206  # B's surface 6 mm from A's
    got = crease_vertices(near, rest, tri)
    assert len(got) > 0
    assert np.all(np.abs(near[got, 0] - 0.103) < 0.03)  # only around the gap between the two
    # the same pairs as the brute-force reference
    import kisekae.avatar.contact_solve as CS

    fast = CS.detect_pairs
    try:
        CS.detect_pairs = detect_pairs_numpy
        np.testing.assert_array_equal(crease_vertices(near, rest, tri), got)
    finally:
        CS.detect_pairs = fast


def test_held_vertices_never_bulge_and_bad_ids_are_refused():
    v, f, idx, w = two_bone_sphere(blend=0.4)
    ptr, nbr = ring(f, len(v))
    held = np.flatnonzero(v[:, 2] > 0.08)
    pv = PartVolumes(v, f, idx, w, 2, 1.0, ptr, nbr, held=held)
    pv.free[:] = True
    squashed = v * np.array([1.0, 1.0, 0.8])
    out = pv.restore(squashed, [])
    assert np.array_equal(out[held], squashed[held]) and np.abs(out - squashed).max() > 1e-4
    with pytest.raises(KisekaeError, match="held vertex ids"):
        PartVolumes(v, f, idx, w, 2, 1.0, ptr, nbr, held=[len(v)])


def test_keep_volume_samples_carry_what_the_planes_take(avatar):
    """A training sample of ``kisekae bake-correctives --keep-volume``: skinning the rest mesh plus the sample's
    rest-space offsets, then the joint planes (what the per-frame body does with learned correctives), keeps the
    crouch's volume; the default sample loses what skinning and the contact take."""
    from kisekae.avatar.correctives import add_skinned_offsets, correction_samples, planes_after
    from kisekae.avatar.poses import named_pose
    from kisekae.qa.check import body_self_contact

    pose = named_pose(avatar.skeleton, "crouch")
    planes = planes_after(avatar)
    measure = body_self_contact(avatar)
    change = {}
    for keep in (False, True):
        mats, offsets = correction_samples(avatar, [pose], keep_volume=keep)
        x = avatar.body.skinned(mats[0]).astype(np.float64)
        y = add_skinned_offsets(x, avatar.body.skin, mats[0], offsets[0].astype(np.float64))
        change[keep] = measure.measure(np.asarray(planes(y.astype(np.float32), mats[0])))["body_volume_change"]
    assert change[False] < -0.1 and abs(change[True]) <= 0.02, change


def test_cli_keep_volume_is_for_the_body_bake(tmp_path, capsys):
    from kisekae.cli import main

    assert main(["bake-correctives", "--garment", "tights", "--keep-volume", "-o", str(tmp_path / "g.npz")]) != 0
    assert "--keep-volume" in capsys.readouterr().err and not (tmp_path / "g.npz").exists()

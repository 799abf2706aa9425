"""The body's self-contact measures against analytic spheres and a brute-force crossing test."""

import numpy as np
import pytest

from kisekae.qa.selfcontact import PROBE_M, BodySelfContact, signed_volume

from _reference import crossing_edges_numpy


def uv_sphere(center, radius, n_lat=24, n_lon=48):
    """A closed, outward-oriented UV sphere (poles as single vertices)."""
    verts = [(0.0, 0.0, radius)]
    for i in range(1, n_lat):
        th = np.pi * i / n_lat
        for j in range(n_lon):
            ph = 2 * np.pi * j / n_lon
            verts.append((radius * np.sin(th) * np.cos(ph), radius * np.sin(th) * np.sin(ph), radius * np.cos(th)))
    verts.append((0.0, 0.0, -radius))
    v = np.asarray(verts) + np.asarray(center)
    ring = lambda i, j: 1 + (i - 1) * n_lon + (j % n_lon)  # noqa: E731
    faces = [(0, ring(1, j), ring(1, j + 1)) for j in range(n_lon)]
    for i in range(1, n_lat - 1):
        for j in range(n_lon):
            a, b, c, d = ring(i, j), ring(i, j + 1), ring(i + 1, j), ring(i + 1, j + 1)
            faces += [(a, c, b), (b, c, d)]
    last = len(v) - 1
    faces += [(last, ring(n_lat - 1, j + 1), ring(n_lat - 1, j)) for j in range(n_lon)]
    return v, np.asarray(faces, dtype=np.int64)


def two_spheres(offset):
    va, fa = uv_sphere((0, 0, 0), 0.1)
    vb, fb = uv_sphere((offset, 0, 0), 0.08)
    return np.vstack([va, vb]), np.vstack([fa, fb + len(va)]), len(va)


def test_signed_volume_is_analytic_for_a_cube_and_close_for_a_sphere():
    cube = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]]) * 0.5
    faces = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4], [1, 2, 6], [1, 6, 5],
                      [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7]])
    assert signed_volume(cube, faces) == pytest.approx(0.125, abs=1e-15)
    assert signed_volume(cube, faces[:, ::-1]) == pytest.approx(-0.125, abs=1e-15)
    v, f = uv_sphere((3, -2, 7), 0.1, 64, 128)
    assert signed_volume(v, f) == pytest.approx(4 / 3 * np.pi * 0.1 ** 3, rel=2e-3)


def test_buried_matches_the_analytic_sphere_test():
    rest_v, faces, na = two_spheres(0.5)  # apart at rest
    posed_v, _, _ = two_spheres(0.12)     # the small sphere pushed into the big one
    sc = BodySelfContact(rest_v, faces)
    buried = sc.buried(posed_v)
    # Independent reference: the probe point of each vertex inside the *other* analytic sphere.
    normals = np.vstack([rest_v[:na] / 0.1, (rest_v[na:] - (0.5, 0, 0)) / 0.08])
    probe = posed_v + PROBE_M * normals
    other_c = np.where(np.arange(len(probe))[:, None] < na, (0.12, 0, 0), (0, 0, 0))
    other_r = np.where(np.arange(len(probe)) < na, 0.08, 0.1)
    dist = np.linalg.norm(probe - other_c, axis=1) - other_r
    clear = np.abs(dist) > 2e-3  # facets make the mesh differ from the sphere by < 1 mm
    assert clear.sum() > 0.9 * len(probe)
    np.testing.assert_array_equal(buried[clear], dist[clear] < 0)
    assert buried.sum() > 100
    assert not sc.buried(rest_v).any()
    m = sc.measure(posed_v)
    assert m["body_buried"] == buried.sum()
    # The overlap counts twice in the signed volume, so moving one rigid part into another keeps it.
    assert m["body_volume_change"] == pytest.approx(0.0, abs=1e-9)


def test_self_crossings_match_brute_force_and_skip_incident_triangles():
    rest_v, faces, _ = two_spheres(0.5)
    posed_v, _, _ = two_spheres(0.12)
    sc = BodySelfContact(rest_v, faces)
    got = sc.self_crossings(posed_v)
    want = crossing_edges_numpy(posed_v, faces, sc.edges)
    np.testing.assert_array_equal(got, want)
    assert want.sum() > 50
    assert not sc.self_crossings(rest_v).any()


def test_builtin_body_self_contact_in_stand_and_crouch():
    from kisekae.avatar import load_builtin_avatar
    from kisekae.avatar.poses import named_pose
    from kisekae.qa.check import self_contact_pose

    av = load_builtin_avatar()
    stand = self_contact_pose(av, named_pose(av.skeleton, "stand"))
    assert (stand["body_buried"], stand["body_self_crossings"]) == (0, 0)
    assert abs(stand["body_volume_change"]) < 1e-6
    crouch = self_contact_pose(av, named_pose(av.skeleton, "crouch"))
    # The issue measured about 305 buried body vertices in the crouch (1 mm probe, Blender).
    assert 250 <= crouch["body_buried"] <= 350
    assert crouch["body_self_crossings"] > 0
    assert crouch["body_volume_change"] < -0.02


def test_dihedral_angles_and_flipped_faces_are_analytic():
    """Two triangles hinged on the x axis: the angle between their normals is the fold (written down from the
    geometry); a triangle turned over against a reference counts once, a zero-area one never."""
    from kisekae.qa.selfcontact import dihedral_angles, flipped_faces

    for fold in (0.0, 30.0, 90.0, 150.0):
        a = np.radians(fold)
        # flat strip: triangle 0 in the y > 0 half-plane, triangle 1 rotated about x by the fold
        v = np.array([[0.0, 0, 0], [1, 0, 0], [0.5, 1, 0], [0.5, -np.cos(a), np.sin(a)]])
        f = np.array([[0, 1, 2], [1, 0, 3]])
        got = dihedral_angles(v, f, np.array([[0, 1]]))
        np.testing.assert_allclose(got, [fold], atol=1e-9)
    flat = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]])
    f = np.array([[0, 1, 2], [1, 3, 2]])
    over = flat.copy()
    over[3, 2] = 0.0
    over[3] = [0.0, -1.0, 0.0]  # triangle 1 folded onto the other side of the shared edge: turned over
    assert flipped_faces(over, flat, f) == 1
    assert flipped_faces(flat, flat, f) == 0
    degenerate = flat.copy()
    degenerate[3] = degenerate[1]  # triangle 1 has no area: left out
    assert flipped_faces(degenerate, flat, f) == 0
    assert len(dihedral_angles(degenerate, f, np.array([[0, 1]]))) == 0


def test_contact_body_reports_flips_and_dihedral_against_plain_skinning():
    """self_contact_pose of a contact body: the dihedral p99 of both bodies (from the normals, brute force here) and
    the triangles the contact turned over against plain skinning."""
    from kisekae.avatar import load_builtin_avatar
    from kisekae.avatar.contact import apply_contact
    from kisekae.avatar.poses import named_pose
    from kisekae.qa.check import self_contact_pose
    from kisekae.qa.shape import face_adjacency

    plain_av = load_builtin_avatar()
    av = apply_contact(plain_av, 0.004, correctives=None)
    pose = named_pose(av.skeleton, "crouch")
    m = pose.skinning_matrices(av.skeleton)
    rec = self_contact_pose(av, pose)
    mesh = av.body.mesh
    adj = face_adjacency(np.asarray(mesh.weld)[mesh.faces])

    def brute(v):
        v = np.asarray(v, dtype=np.float64)
        t = v[mesh.faces]
        n = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
        size = np.linalg.norm(n, axis=1)
        return n, size

    def p99(v):
        n, size = brute(v)
        keep = (size[adj[:, 0]] > 1e-12) & (size[adj[:, 1]] > 1e-12)
        c = np.sum(n[adj[keep, 0]] * n[adj[keep, 1]], axis=1) / (size[adj[keep, 0]] * size[adj[keep, 1]])
        return np.percentile(np.degrees(np.arccos(np.clip(c, -1, 1))), 99)

    body, skinned = av.body.posed(m), plain_av.body.skinned(m)
    assert rec["body_dihedral_p99_deg"] == pytest.approx(p99(body), abs=1e-6)
    assert rec["body_dihedral_p99_deg_plain"] == pytest.approx(p99(skinned), abs=1e-6)
    nb, sb = brute(body)
    ns, ss = brute(skinned)
    want = int(np.sum((np.sum(nb * ns, axis=1) < 0) & (sb > 1e-12) & (ss > 1e-12)))
    assert rec["body_flipped_faces"] == want > 0  # the joint planes fold some triangles in the crouch
    assert "body_flipped_faces" not in self_contact_pose(plain_av, pose)


def test_inverted_faces_against_the_rest_normal_carried_by_the_bones():
    """A triangle rotated rigidly with its bone keeps its side; one whose corner is pulled through the opposite edge
    is inside out. In the crouch plain skinning turns triangles inside out where it collapses a fold, and the
    contact body repairs most of them (which is why it reads as 'flipped' against plain skinning there)."""
    from scipy.spatial.transform import Rotation

    from kisekae.qa.selfcontact import inverted_faces

    rest = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    f = np.array([[0, 1, 2]])
    r = Rotation.from_rotvec([0.3, -1.2, 2.0]).as_matrix()
    blend = np.tile(r, (3, 1, 1))
    posed = rest @ r.T + [1.0, 2.0, 3.0]
    assert inverted_faces(posed, rest, f, blend) == 0
    inside_out = posed.copy()
    inside_out[2] = posed[0] - (posed[2] - posed[0])  # the corner through the opposite edge
    assert inverted_faces(inside_out, rest, f, blend) == 1

    from kisekae.avatar import load_builtin_avatar
    from kisekae.avatar.contact import apply_contact
    from kisekae.avatar.poses import named_pose
    from kisekae.qa.check import self_contact_pose

    rec = self_contact_pose(apply_contact(load_builtin_avatar(), 0.004), named_pose(load_builtin_avatar().skeleton,
                                                                                    "crouch"))
    assert rec["body_inverted_faces_plain"] > 100
    assert rec["body_inverted_faces"] < rec["body_inverted_faces_plain"] / 2
    # the contact's own damage: inside out on the contact body but not under plain skinning, at most all of them
    assert 0 <= rec["body_new_inverted_faces"] <= rec["body_inverted_faces"]
    assert rec["body_new_inverted_faces"] < rec["body_flipped_faces"] / 4  # most flips are repairs

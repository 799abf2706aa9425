"""The surface push in the engine glue: bake document, loader, a NumPy engine that reads only the bake, Unity/O3DE."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import flat_srg

from kisekae.avatar.poses import named_pose
from kisekae.errors import KisekaeError
from kisekae.fit.carry import KEEP
from kisekae.fit.fix import params_for
from kisekae.fit.pushout import bias_direction, push_amount
from kisekae.fit.surface import (CANDIDATES, COMPRESSION_LIMIT, FINISH_STEP, LIMIT_PASSES, LIMIT_TIE, SMOOTH_PASSES, STRETCH_LIMIT,
                                  bake_surface_candidates, body_curvature, chord_allowance, garment_chords, one_ring, surface_runtime)
from kisekae.fit.edge_lift import (LIFT_LIMIT_PASSES, LIFT_PASSES, LIFT_REACH, bake_sample_candidates,
                                   garment_edge_samples, vertex_samples)
from kisekae.fit.unflip import TURN_START, UNFLIP_PASSES, vertex_faces
from kisekae.geom.closest import closest_point_triangles_numpy
from kisekae.geom.normals import vertex_normals
from kisekae.fit.runtime import FOLLOW_SMOOTH, avatar_depth_bound, garment_follow, garment_shortest
from kisekae.shaders import surface_bake as sb
from kisekae.shaders.toolchain import HLSL_DIR, compile_hlsl

UNITY = HLSL_DIR.parent / "unity"
SRG = HLSL_DIR.parent / "o3de" / "KisekaeSrg.azsli"
COMPUTE = UNITY / "Shaders" / "KisekaeSurfacePush.compute"
GLUE = UNITY / "Runtime" / "KisekaeSurfacePush.cs"
PARTS_GLUE = UNITY / "Runtime" / "KisekaeBodyParts.cs"  # finds and dispatches the part contact's kernels


@pytest.fixture(scope="module")
def baked(avatar, tmp_path_factory):
    av = avatar.with_body_contact()
    mesh = av.part("tights").mesh
    cand = bake_surface_candidates(av, "tights", n_poses=40)
    ring = one_ring(mesh.n_vertices, mesh.edges, mesh.weld)
    samples = garment_edge_samples(mesh)
    lift = (samples, bake_sample_candidates(av, "tights", samples, n_poses=40), vertex_samples(samples, mesh.weld))
    doc = sb.surface_bake(cand, ring, av.body.mesh.faces, "tights", chord=garment_chords(mesh),
                          n_body_vertices=av.body.mesh.n_vertices, weld=mesh.weld, lift=lift,
                          shortest=garment_shortest(av, "tights"), follow=garment_follow(av, "tights"),
                          depth_bound=avatar_depth_bound(av))
    folder = tmp_path_factory.mktemp("surface")
    head, binary = sb.write_surface_bake(doc, folder / "tights.surface.json")
    return av, cand, ring, doc, head, binary, lift


def _load(path_or_doc, av):
    return sb.load_surface_bake(path_or_doc, av.part("tights").mesh.n_vertices, av.body.mesh.n_vertices)


def test_bake_round_trips(baked):
    av, cand, ring, doc, head, binary, lift = baked
    n, nb = av.part("tights").mesh.n_vertices, av.body.mesh.n_vertices
    assert n == 2674 and cand.triangles.shape == (n, CANDIDATES)
    header = json.loads(head.read_text())
    assert header["binary"] == binary.name == "tights.surface.bytes"
    assert header["vertices"] == n and header["bodyVertices"] == nb and header["candidates"] == CANDIDATES
    assert header["version"] == sb.SURFACE_BAKE_VERSION and header["garment"] == "tights"
    assert header["smoothPasses"] == SMOOTH_PASSES and header["bodyTriangles"] == len(av.body.mesh.faces)
    assert header["limitPasses"] == LIMIT_PASSES == 4 and header["stretchLimit"] == STRETCH_LIMIT == 0.1
    # CANDIDATES triples of uint32 per vertex (12 B each), the ring (4 B per offset and per entry), the weld map (4 B),
    # the chord (float32, 4 B); per sample its three corners, three weights, chord (28 B) and CANDIDATES candidate
    # triples, the vertex sample table (4 B per offset and per entry): 3,583 edge samples (two corners each) and
    # 1,702 face samples (three); the floor (4 B) and the follow's binding (3 ids, 3 weights, a share: 28 B); the
    # body's depth bound (4 B per body vertex); the self layers (4 candidates of 3 ids and a side, a gap: 68 B)
    samples, scand, (sptr, sidx) = lift
    ns = len(samples)
    assert header["samples"] == ns == 3583 + 1702 and header["vertexSampleEntries"] == len(sidx) \
        == 2 * 3583 + 3 * 1702
    assert header["liftPasses"] == LIFT_PASSES and header["unflipPasses"] == UNFLIP_PASSES
    assert header["liftLimitPasses"] == LIFT_LIMIT_PASSES == 2
    assert header["turnStart"] == TURN_START
    assert binary.stat().st_size == header["bytes"] == 4 * (n * 3 * CANDIDATES + (n + 1) + len(ring[1]) + n + n
                                                            + ns * (7 + 3 * CANDIDATES)
                                                            + (n + 1) + len(sidx) + n + 7 * n + nb
                                                            + 17 * n)
    assert header["followPasses"] == FOLLOW_SMOOTH == 10
    corners, bary, share = garment_follow(av, "tights")
    assert (share == 1).all()  # the tights lie within 2 cm of the skin everywhere
    chords = garment_chords(av.part("tights").mesh)
    shortest = garment_shortest(av, "tights")
    inline = json.loads(json.dumps({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in doc.items()}))
    for source in (head, str(head), doc, inline):
        got = _load(source, av)
        np.testing.assert_array_equal(got["corners"], av.body.mesh.faces[cand.triangles])
        np.testing.assert_array_equal(got["ring"][0], ring[0])
        np.testing.assert_array_equal(got["ring"][1], ring[1])
        np.testing.assert_array_equal(got["weld"], av.part("tights").mesh.weld)
        np.testing.assert_array_equal(got["chord"], chords.astype(np.float32))
        assert got["chord"].dtype == np.float64 and 0.0 < got["chord"].min() and got["chord"].max() < 0.1
        assert got["k"] == CANDIDATES and got["garment"] == "tights" and got["smooth_passes"] == SMOOTH_PASSES
        assert got["limit_passes"] == LIMIT_PASSES and got["stretch_limit"] == STRETCH_LIMIT
        assert type(got["limit_passes"]) is int and type(got["stretch_limit"]) is float
        np.testing.assert_array_equal(got["sample_ends"], samples.ends)
        np.testing.assert_array_equal(got["sample_weights"], samples.bary.astype(np.float32))
        assert (samples.bary > 0).all(axis=1).any() and (samples.bary[:, 2] == 0).any()  # face and edge samples
        np.testing.assert_array_equal(got["sample_chord"], samples.chord.astype(np.float32))
        np.testing.assert_array_equal(got["sample_corners"], av.body.mesh.faces[scand.triangles])
        np.testing.assert_array_equal(got["vertex_samples"][0], sptr)
        np.testing.assert_array_equal(got["vertex_samples"][1], sidx)
        assert got["lift_passes"] == LIFT_PASSES and got["unflip_passes"] == UNFLIP_PASSES
        assert got["turn_start"] == TURN_START
        np.testing.assert_array_equal(got["shortest"], shortest.astype(np.float32))
        assert got["shortest"].dtype == np.float64 and got["shortest"].max() == np.float32(1.0 - COMPRESSION_LIMIT)
        np.testing.assert_array_equal(got["follow_corners"], corners)
        np.testing.assert_allclose(got["follow_bary"], bary, atol=1e-7)
        np.testing.assert_array_equal(got["follow_share"], share.astype(np.float32))
        assert got["follow_passes"] == FOLLOW_SMOOTH
        bound = avatar_depth_bound(av)
        finite = np.isfinite(bound)
        np.testing.assert_array_equal(got["depth_bound"][finite], bound[finite].astype(np.float32))
        assert np.isinf(got["depth_bound"][~finite]).all() and 0.005 < got["depth_bound"][finite].min()
        assert not got["self_side"].any() and not got["self_corners"].any()  # the tights are one sheet
    # other values round-trip through the header and inline; 0 passes: an engine without the stretch limit
    other = sb.surface_bake(cand, ring, av.body.mesh.faces, "tights", chord=chords, weld=av.part("tights").mesh.weld,
                            n_body_vertices=nb, limit_passes=0, stretch_limit=0.25)
    assert other["limitPasses"] == 0 and other["stretchLimit"] == 0.25
    assert not other["followShare"].any()  # no binding given: nothing follows
    assert (other["depthBound"] == np.float32(1e30)).all()  # no bound given: every candidate is trusted
    head2 = sb.write_surface_bake(other, head.parent / "other.surface.json")[0]
    for source in (head2, other):
        got = _load(source, av)
        assert got["limit_passes"] == 0 and got["stretch_limit"] == 0.25
    _self_layers_round_trip(av, cand, ring, chords, head.parent)
    # a bake of the previous version (without the last stretch limit) is refused, as the loader refuses every other
    # version: it was made for an engine without it; kisekae fit writes it again
    old = {k: v for k, v in header.items() if k != "liftLimitPasses"}
    old["version"] = sb.SURFACE_BAKE_VERSION - 1
    (head.parent / "old.surface.json").write_text(json.dumps(old))
    with pytest.raises(KisekaeError, match=rf"old\.surface\.json: not a version-{sb.SURFACE_BAKE_VERSION} kisekae "
                                           rf"surface bake .*version {sb.SURFACE_BAKE_VERSION - 1}; write it again"):
        _load(head.parent / "old.surface.json", av)


def _self_layers_round_trip(av, cand, ring, chords, folder):
    """Self layers of 1 to 4 candidates a vertex survive the bake and its binary; a malformed list is refused."""
    from kisekae.fit.self_layers import SelfLayers

    mesh = av.part("tights").mesh
    n, nf = mesh.n_vertices, len(mesh.faces)
    rng = np.random.default_rng(3)
    count = rng.integers(0, 5, n)
    tri = np.where(np.arange(4) < count[:, None], rng.integers(0, nf, (n, 4)), -1).astype(np.int32)
    sides = np.where(tri >= 0, rng.choice([-1, 1], (n, 4)), 0).astype(np.int8)
    layers = SelfLayers(tri, sides, rng.uniform(0, 0.002, n), nf)
    doc = sb.surface_bake(cand, ring, av.body.mesh.faces, "tights", chord=chords, weld=mesh.weld,
                          n_body_vertices=av.body.mesh.n_vertices, self_layers=(layers, mesh.faces))
    head = sb.write_surface_bake(doc, folder / "layered.surface.json")[0]
    for source in (head, doc):
        got = _load(source, av)
        has = tri >= 0
        np.testing.assert_array_equal(got["self_corners"][has], mesh.faces[tri[has]])
        np.testing.assert_array_equal(got["self_side"], sides)
        np.testing.assert_array_equal(got["self_gap"], layers.gap.astype(np.float32))
    bad = dict(doc, selfSide=doc["selfSide"].copy())
    bad["selfSide"][1] = 0.5
    with pytest.raises(KisekaeError, match="selfSide"):
        _load(bad, av)
    gapped = dict(doc, selfSide=np.tile(np.float32([0, 1, 0, 0]), n))  # a candidate after the end of the list
    with pytest.raises(KisekaeError, match="selfSide"):
        _load(gapped, av)


def engine_push(p, corners, body, normals, params, tight, soft, up, reach, chord, kv, bound=None):
    """One push from the bake's corner triples and chords alone, as KisekaeSurfacePush per vertex: the nearest
    candidate (the first of equals) within reach and, with the bake's depth bound ``bound``, not behind the vertex by
    more than the bound blended at its closest point; the normal and the body curvature kv blended there, the
    clearance less the chord allowance, the seed's push law."""
    n, k, _ = corners.shape
    rep = np.repeat(p, k, axis=0)
    a, b, c = (body[corners[:, :, i].ravel()] for i in range(3))
    q, bary = closest_point_triangles_numpy(rep, a, b, c)[:2]
    dist = np.linalg.norm(rep - q, axis=1).reshape(n, k)
    best = np.argmin(dist, axis=1)
    rows = np.arange(n)
    qb = q.reshape(n, k, 3)[rows, best]
    w = np.asarray(bary).reshape(n, k, 3)[rows, best]
    nrm = np.einsum("nc,ncd->nd", w, normals[corners[rows, best]])
    nrm /= np.maximum(np.linalg.norm(nrm, axis=1), 1e-12)[:, None]
    near = dist[rows, best] <= reach
    if bound is not None:
        b = np.einsum("nc,nc->n", w, np.minimum(bound, 1e30)[corners[rows, best]])
        near &= ~((np.einsum("ij,ij->i", p - qb, nrm) < 0) & (dist[rows, best] > b))
    kappa = np.einsum("nc,nc->n", w, kv[corners[rows, best]])
    s = np.where(near, np.einsum("ij,ij->i", p - qb, nrm) - chord_allowance(chord, kappa), 1.0)
    amount = np.where(near, push_amount(s, params.margin, params.stiffness, params.max_push, tight, soft,
                                        params.skirt_bias), 0.0)
    return p + amount[:, None] * bias_direction(nrm, params.skirt_bias, up)


def engine_smooth(d, ptr, idx):
    """One Jacobi pass of KisekaeSmoothPush from the CSR ring: the mean of the ring where it is longer."""
    out = d.copy()
    for v in range(len(d)):
        nbr = idx[ptr[v]:ptr[v + 1]]
        avg = d[nbr].mean(axis=0) if len(nbr) else np.zeros(3)
        if avg @ avg > d[v] @ d[v]:
            out[v] = 0.5 * (d[v] + avg)
    return out


def engine_limit(x, d, ptr, idx, stretch, shortest):
    """One Jacobi pass of KisekaeStretchLimit from the CSR ring, the skinned garment x and the bake's floor: per
    vertex, each one-ring edge longer than (1 + stretch) times its skinned length pulls it towards the neighbour by
    half the excess, each edge shorter than min(shortest[v], shortest[j]) times it pushes it away by half the
    deficit; the vertex moves by the mean correction. Returns the new displacements and the moved flags."""
    out = d.copy()
    moved = np.zeros(len(d), bool)
    for v in range(len(d)):
        p = x[v] + d[v]
        pull, count = np.zeros(3), 0
        for j in idx[ptr[v]:ptr[v + 1]]:
            dp = x[j] + d[j] - p
            length = np.sqrt(dp @ dp)
            rest = (1.0 + stretch) * np.linalg.norm(x[j] - x[v])
            floor = min(shortest[v], shortest[j]) * np.linalg.norm(x[j] - x[v])
            over = length > rest * (1.0 + LIMIT_TIE)
            if over or 1e-12 < length < floor * (1.0 - LIMIT_TIE):
                bound = rest if over else floor
                pull += (0.5 * (length - bound) / length) * dp
                count += 1
        if count:
            out[v] = d[v] + pull / count
            moved[v] = True
    return out, moved


def engine_lift(x, d, bake, body, normals, params, up, kv):
    """One edge lift from the bake's sample arrays: each sample's point and push (KisekaeSamplePoint,
    KisekaeSamplePush), each vertex's blend of its samples' asks (KisekaeEdgeLift). Returns the lifts (N, 3)."""
    ends, w = bake["sample_ends"], bake["sample_weights"]
    p = x + d
    pts = w[:, 0, None] * p[ends[:, 0]] + w[:, 1, None] * p[ends[:, 1]] + w[:, 2, None] * p[ends[:, 2]]
    lift = engine_push(pts, bake["sample_corners"], body, normals, params, 0.0, 0.0, up, params.max_push,
                       bake["sample_chord"], kv, bake["depth_bound"]) - pts
    ptr, idx = bake["vertex_samples"]
    out = np.zeros_like(d)
    for v in range(len(d)):
        acc, total = np.zeros(3), 0.0
        for code in idx[ptr[v]:ptr[v + 1]]:
            s, corner = divmod(int(code), 3)
            share = w[s, corner] / (w[s] @ w[s])
            ask = share * min(max(2.0 - np.linalg.norm(lift[s]) / LIFT_REACH, 0.0), 1.0) * lift[s]
            acc += (ask @ ask) * ask
            total += ask @ ask
        if total > 0:
            out[v] = acc / total
    return out


def engine_unflip(x, d, faces, fptr, fidx, turn_start):
    """One KisekaeUnflip pass from the garment's faces around each vertex: each face turned towards or past 90
    degrees pulls the vertex to the face's mean displacement with its weight. Returns displacements and moved."""
    out, moved = d.copy(), np.zeros(len(d), bool)
    for v in range(len(d)):
        acc, total = np.zeros(3), 0.0
        for f in fidx[fptr[v]:fptr[v + 1]]:
            i, j, k = faces[f]
            ns = np.cross(x[j] - x[i], x[k] - x[i])
            na = np.cross(x[j] + d[j] - x[i] - d[i], x[k] + d[k] - x[i] - d[i])
            if np.linalg.norm(ns) == 0:
                continue
            c = ns @ na / (np.linalg.norm(ns) * np.linalg.norm(na)) if np.linalg.norm(na) > 0 else 0.0
            w = float(c <= 0) if turn_start <= 0 else min(max((turn_start - c) / turn_start, 0.0), 1.0)
            acc += w * ((d[i] + d[j] + d[k]) / 3 - d[v])
            total += w
        if total > 0:
            out[v] = d[v] + acc / max(total, 1.0)
            moved[v] = True
    return out, moved


def engine_frame(skinned, bake, body, normals, body_faces, params, up=(0.0, 1.0, 0.0), garment=None):
    """The engine's frame from the bake: the body curvature, push, bake['smooth_passes'] smoothing dispatches, push,
    bake['limit_passes'] stretch-limit dispatches (each pushing the vertices it moved again); with ``garment``
    ``(faces, vertex_faces table)``, bake['lift_passes'] rounds of (edge lift, one smoothing pass of the lifts, push
    of the lifted vertices, unflip, push of what it moved) and bake['unflip_passes'] more unflips; cap."""
    up = np.asarray(up, dtype=np.float64)
    x = np.asarray(skinned, dtype=np.float64)
    corners, (ptr, idx), chord, bound = bake["corners"], bake["ring"], bake["chord"], bake["depth_bound"]
    kv = body_curvature(body, normals, body_faces)
    first = engine_push(x, corners, body, normals, params, 0.0, 0.0, up, params.max_push, chord, kv, bound)
    d = first - x
    for _ in range(bake["smooth_passes"]):
        d = engine_smooth(d, ptr, idx)
    d = engine_push(x + d, corners, body, normals, params, 0.0, 0.0, up, params.max_push, chord, kv, bound) - x
    for _ in range(bake["limit_passes"]):
        d, moved = engine_limit(x, d, ptr, idx, bake["stretch_limit"], bake["shortest"])
        pushed = engine_push(x + d, corners, body, normals, params, 0.0, 0.0, up, params.max_push, chord, kv,
                             bound) - x
        d = np.where(moved[:, None], pushed, d)

    def push_where(d, mask):
        pushed = engine_push(x + d, corners, body, normals, params, 0.0, 0.0, up, params.max_push, chord, kv,
                             bound) - x
        return np.where(mask[:, None], pushed, d)

    def unflip(d):
        new, _ = engine_unflip(x, d, garment[0], *garment[1], bake["turn_start"])
        return push_where(new, np.einsum("ij,ij->i", new - d, new - d) > 1e-18)

    for _ in range(bake["lift_passes"] if garment is not None else 0):
        lift = engine_smooth(engine_lift(x, d, bake, body, normals, params, up, kv), ptr, idx)
        d = push_where(d + lift, np.einsum("ij,ij->i", lift, lift) > 1e-18)
        d = unflip(d)
    for _ in range(bake["unflip_passes"] if garment is not None else 0):
        d = unflip(d)
    for _ in range(bake["lift_limit_passes"] if garment is not None and len(bake["sample_chord"]) else 0):
        d, moved = engine_limit(x, d, ptr, idx, bake["stretch_limit"], bake["shortest"])
        d = push_where(d, moved)
    ln = np.linalg.norm(d, axis=1)
    over = ln > params.max_push
    d[over] *= (params.max_push / ln[over])[:, None]
    return x + d


def test_engine_from_the_bake_reproduces_the_runtime(baked):
    """A NumPy engine that reads only the bake's arrays equals surface_runtime(numpy=True) for crouch, with the
    chords runtime_pose passes (the bake's float32 chords against kisekae's float64 ones)."""
    av, cand, ring, doc, head, binary, lift = baked
    bake = _load(head, av)
    pose = named_pose(av.skeleton, "crouch")
    m = pose.skinning_matrices(av.skeleton)
    body = av.body.posed(m).astype(np.float64)
    faces = av.body.mesh.faces
    normals = vertex_normals(body, faces).astype(np.float64)
    skinned = av.part("tights").posed(m)
    params = params_for("tights", None)
    chord = garment_chords(av.part("tights").mesh)
    floor, depth = bake["shortest"], bake["depth_bound"]
    ref, push = surface_runtime(skinned, cand, ring, body, normals, faces, params, numpy=True, chord=chord,
                                shortest=floor, depth_bound=depth)
    assert push.max() > 0.002  # crouch pushes the tights (not a vacuous comparison)
    free = surface_runtime(skinned, cand, ring, body, normals, faces, params, numpy=True, chord=chord)[0]
    assert np.abs(ref - free).max() > 1e-3  # the stretch limit's floor matters here
    plain = surface_runtime(skinned, cand, ring, body, normals, faces, params, numpy=True, shortest=floor)[0]
    assert np.abs(ref - plain).max() > 1e-3  # the chord allowance matters here
    ours = engine_frame(skinned, bake, body, normals, faces, params)
    assert np.abs(ours - ref).max() < 1e-8
    # the stretch limit moves the tights here (not a vacuous comparison), and the bake's limitPasses drives it
    unlimited = surface_runtime(skinned, cand, ring, body, normals, faces, params, numpy=True, chord=chord,
                                limit_passes=0, depth_bound=depth)[0]
    assert np.abs(ref - unlimited).max() > 1e-3
    assert np.abs(engine_frame(skinned, {**bake, "limit_passes": 0}, body, normals, faces, params)
                  - unlimited).max() < 1e-8
    # the edge lift and unflip from the bake's samples (and the garment's own faces) end the frame as in kisekae
    mesh = av.part("tights").mesh
    garment = (mesh.faces.astype(np.int64), vertex_faces(mesh.faces, mesh.n_vertices, mesh.weld))
    full = surface_runtime(skinned, cand, ring, body, normals, faces, params, numpy=True, chord=chord, lift=lift,
                           faces=garment, shortest=floor, depth_bound=depth)[0]
    assert np.abs(full - ref).max() > 1e-3  # the stages move the tights in the crouch
    assert np.abs(engine_frame(skinned, bake, body, normals, faces, params, garment=garment) - full).max() < 1e-6


def _write_binary(path, flat):
    path.write_bytes(np.asarray(flat, dtype="<u4").tobytes())


def test_bad_bakes_are_refused(baked, tmp_path):
    av, cand, ring, doc, head, binary, lift = baked
    n, nb = av.part("tights").mesh.n_vertices, av.body.mesh.n_vertices
    header = json.loads(head.read_text())
    data = np.frombuffer(binary.read_bytes(), dtype="<u4").copy()

    def case(edit_header=None, edit_data=None, raw=None):
        h = dict(header)
        if edit_header:
            h.update(edit_header)
        (tmp_path / "b.surface.json").write_text(json.dumps(h))
        if raw is not None:
            (tmp_path / h["binary"]).write_bytes(raw)
        else:
            d = data.copy()
            if edit_data:
                edit_data(d)
            _write_binary(tmp_path / h["binary"], d)
        return tmp_path / "b.surface.json"

    header["binary"] = "b.surface.bytes"
    path = case()
    assert _load(path, av)["corners"].shape == (n, CANDIDATES, 3)
    for old in (1, 2, 3, 4, 5, 6, 7):  # no chords, stretch limit, edge lift, last stretch limit, face samples, floor,
        # body follow
        with pytest.raises(KisekaeError, match=rf"b\.surface\.json: not a version-{sb.SURFACE_BAKE_VERSION} kisekae surface bake"):
            _load(case({"version": old}), av)
    with pytest.raises(KisekaeError, match="format"):
        _load(case({"format": "something else"}), av)
    wrong = rf"b\.surface\.json: baked for {n} garment vertices, the garment has {n + 1}$"
    with pytest.raises(KisekaeError, match=wrong):
        sb.load_surface_bake(case(), n + 1, nb)
    with pytest.raises(KisekaeError, match=rf"b\.surface\.json: baked for a body of {nb} vertices, the body has 100"):
        sb.load_surface_bake(case(), n, 100)
    for bad in (-1, 2674.5, "2674", True):
        with pytest.raises(KisekaeError, match="'vertices' must be a non-negative integer"):
            _load(case({"vertices": bad}), av)
    for bad in (-1, 1.5, "4", True, None):
        with pytest.raises(KisekaeError, match=r"b\.surface\.json: ('limitPasses' must be a non-negative integer|"
                                               r"missing entry 'limitPasses')"):
            _load(case({"limitPasses": bad}), av)
    for bad in (-0.1, float("inf"), float("nan"), "0.1", True, None, 10 ** 400):
        with pytest.raises(KisekaeError, match=r"b\.surface\.json: ('stretchLimit' must be a finite number >= 0|"
                                               r"missing entry 'stretchLimit')"):
            _load(case({"stretchLimit": bad}), av)
    assert _load(case({"stretchLimit": 0}), av)["stretch_limit"] == 0.0  # JSON's integer 0: no stretch allowed
    with pytest.raises(KisekaeError, match="missing entry 'ringEntries'"):
        (tmp_path / "c.surface.json").write_text(json.dumps({k: v for k, v in header.items() if k != "ringEntries"}))
        _load(tmp_path / "c.surface.json", av)
    # the binary: truncated, too long, missing, ids out of range
    with pytest.raises(KisekaeError, match=rf"b\.surface\.bytes: truncated: .* says {header['bytes']}"):
        _load(case(raw=data.tobytes()[:-4]), av)
    with pytest.raises(KisekaeError, match=r"b\.surface\.bytes: .*longer than"):
        _load(case(raw=data.tobytes() + b"\0\0\0\0"), av)
    with pytest.raises(KisekaeError, match=r"nope\.bytes named by the header is missing"):
        (tmp_path / "d.surface.json").write_text(json.dumps({**header, "binary": "nope.bytes"}))
        _load(tmp_path / "d.surface.json", av)
    with pytest.raises(KisekaeError, match="must name a file next to the header"):
        _load(case({"binary": "../elsewhere.bytes"}), av)

    def corner_out(d):
        d[7] = nb

    with pytest.raises(KisekaeError, match=rf"b\.surface\.bytes: candidate corner ids outside 0\.\.{nb - 1}"):
        _load(case(edit_data=corner_out), av)
    ptr_at = n * CANDIDATES * 3

    def ptr_down(d):
        d[ptr_at + 5] = d[ptr_at + 4] - 1

    with pytest.raises(KisekaeError, match="not CSR"):
        _load(case(edit_data=ptr_down), av)

    def ring_out(d):
        d[ptr_at + n + 1] = n

    with pytest.raises(KisekaeError, match="ring neighbour ids outside"):
        _load(case(edit_data=ring_out), av)
    chord_at = ptr_at + (n + 1) + len(ring[1]) + n
    for bad in (-0.01, np.nan, np.inf):
        def chord_bad(d, bad=bad):
            d[chord_at + 3] = np.array([bad], "<f4").view("<u4")[0]

        with pytest.raises(KisekaeError, match=r"b\.surface\.bytes: 'chord' must be finite lengths >= 0"):
            _load(case(edit_data=chord_bad), av)
    # the edge samples: an end outside the garment, t outside (0, 1), a bad chord, the vertex table not CSR
    ns = header["samples"]
    ends_at = chord_at + n
    w_at = ends_at + 3 * ns
    sptr_at = w_at + 3 * ns + ns + ns * CANDIDATES * 3

    def end_out(d):
        d[ends_at + 1] = n

    def w_bad(d):
        d[w_at] = np.array([1.5], "<f4").view("<u4")[0]

    def w_negative(d):  # still summing to 1
        d[w_at + 3:w_at + 6] = np.array([-0.5, 1.0, 0.5], "<f4").view("<u4")

    def schord_bad(d):
        d[w_at + 3 * ns] = np.array([np.nan], "<f4").view("<u4")[0]

    def sptr_down(d):
        d[sptr_at + 3] = d[sptr_at + 2] - 1

    def sidx_out(d):
        d[sptr_at + n + 1] = 3 * ns

    for edit, message in ((end_out, "sample end ids outside"), (w_bad, "'sampleWeights' must be three weights"),
                          (w_negative, "'sampleWeights' must be three weights"),
                          (schord_bad, "'sampleChord' must be finite"), (sptr_down, "vertexSamplePtr is not CSR"),
                          (sidx_out, "vertexSampleIdx entries outside")):
        with pytest.raises(KisekaeError, match=rf"b\.surface\.bytes: {message}"):
            _load(case(edit_data=edit), av)
    # the stretch limit's floor (before the follow's 7 N values, the body's depth bound and the self layers' 17 N),
    # fractions in [0, 1)
    for bad in (-0.1, 1.0, np.nan):
        def floor_bad(d, bad=bad):
            d[-25 * n - nb + 5] = np.array([bad], "<f4").view("<u4")[0]

        with pytest.raises(KisekaeError, match=r"b\.surface\.bytes: 'shortest' must be fractions in \[0, 1\)"):
            _load(case(edit_data=floor_bad), av)
    # the body follow's binding: corners within the body, barycentric weights, shares in [0, 1]
    def follow_corner_out(d):
        d[-24 * n - nb + 4] = nb

    with pytest.raises(KisekaeError, match=rf"b\.surface\.bytes: followCorners outside 0\.\.{nb - 1}"):
        _load(case(edit_data=follow_corner_out), av)
    for at, bad in ((-4 * n + 3, 1.5), (-4 * n + 3, np.nan), (-n + 2, 1.5), (-n + 2, -0.25), (-n + 2, np.nan)):
        def follow_bad(d, at=at - nb - 17 * n, bad=bad):
            d[at] = np.array([bad], "<f4").view("<u4")[0]

        with pytest.raises(KisekaeError, match=r"b\.surface\.bytes: 'followBary' must be three weights"):
            _load(case(edit_data=follow_bad), av)
    # the body's depth bound: lengths >= 0 (1e30 for none)
    for bad in (-0.01, np.nan):
        def depth_bad(d, bad=bad):
            d[-17 * n - nb + 7] = np.array([bad], "<f4").view("<u4")[0]

        with pytest.raises(KisekaeError, match=r"b\.surface\.bytes: 'depthBound' must be lengths >= 0"):
            _load(case(edit_data=depth_bad), av)
    # the self layers: sides +1 or -1 then 0, corner ids within the garment, gaps finite >= 0
    def self_side_bad(d):
        d[-5 * n + 6] = np.array([0.5], "<f4").view("<u4")[0]

    def self_gap_bad(d):
        d[-n + 3] = np.array([np.nan], "<f4").view("<u4")[0]

    def self_corner_out(d):
        d[-17 * n + 1] = n
        d[-5 * n] = np.array([1.0], "<f4").view("<u4")[0]

    for edit, message in ((self_side_bad, "'selfSide' must be"), (self_gap_bad, "'selfGap' must be"),
                          (self_corner_out, f"selfCorners outside 0\\.\\.{n - 1}")):
        with pytest.raises(KisekaeError, match=rf"b\.surface\.bytes: {message}"):
            _load(case(edit_data=edit), av)
    for bad in (-0.1, float("nan"), "0.05", None):
        with pytest.raises(KisekaeError, match=r"('turnStart' must be a finite number >= 0|missing entry 'turnStart')"):
            _load(case({"turnStart": bad}), av)
    with pytest.raises(KisekaeError, match="layout"):
        _load(case({"layout": [{"name": "corners", "count": 1}]}), av)
    with pytest.raises(KisekaeError, match="not a JSON surface bake header"):
        (tmp_path / "e.surface.json").write_text("{not json")
        _load(tmp_path / "e.surface.json", av)
    with pytest.raises(KisekaeError, match="header not found"):
        _load(tmp_path / "none.surface.json", av)
    # an inline document: negative or non-integer data
    inline = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in doc.items()}
    for bad, message in ((-1, "negative values in 'corners'"), (3.5, "non-integer data in 'corners'"),
                         ("x", "non-integer data in 'corners'"), (None, "non-integer data in 'corners'")):
        corners = list(inline["corners"])
        corners[10] = bad
        with pytest.raises(KisekaeError, match=f"surface bake: {message}"):
            _load({**inline, "corners": corners}, av)
    with pytest.raises(KisekaeError, match="'ringIdx' has 3 entries"):
        _load({**inline, "ringIdx": [0, 1, 2]}, av)
    with pytest.raises(KisekaeError, match="missing arrays weld"):
        _load({k: v for k, v in inline.items() if k != "weld"}, av)
    for bad in ("x", None, True):
        chord = list(inline["chord"])
        chord[10] = bad
        with pytest.raises(KisekaeError, match="surface bake: 'chord' is not an array of numbers"):
            _load({**inline, "chord": chord}, av)
    with pytest.raises(KisekaeError, match="'chord' must be finite"):
        _load({**inline, "chord": [-1.0] * n}, av)
    # baking refuses candidates of another body
    chord = garment_chords(av.part("tights").mesh)
    with pytest.raises(KisekaeError, match="triangles"):
        sb.surface_bake(cand, ring, av.body.mesh.faces[:-1], "tights", chord=chord)
    with pytest.raises(KisekaeError, match="chords of tights: need 2674 finite lengths"):
        sb.surface_bake(cand, ring, av.body.mesh.faces, "tights", chord=chord[:-1])
    fc, fb, fs = garment_follow(av, "tights")
    for follow, message in (((fc[:-1], fb, fs), "binding of"), ((fc + nb, fb, fs), "outside the body's"),
                            ((fc, fb * 2, fs), "barycentric"), ((fc, fb, fs + 0.5), "shares in")):
        with pytest.raises(KisekaeError, match=f"body follow of tights: .*{message}"):
            sb.surface_bake(cand, ring, av.body.mesh.faces, "tights", chord=chord, follow=follow)
    with pytest.raises(KisekaeError, match="follow passes: must be an integer >= 0"):
        sb.surface_bake(cand, ring, av.body.mesh.faces, "tights", chord=chord, follow_passes=-1)
    for bad in (-1, 2.0, True):
        with pytest.raises(KisekaeError, match="limit passes: must be an integer >= 0"):
            sb.surface_bake(cand, ring, av.body.mesh.faces, "tights", chord=chord, limit_passes=bad)
    for bad in (-0.1, np.inf, np.nan, "0.1", False):
        with pytest.raises(KisekaeError, match="stretch limit: must be a finite number >= 0"):
            sb.surface_bake(cand, ring, av.body.mesh.faces, "tights", chord=chord, stretch_limit=bad)


def test_fit_writes_the_surface_bake_and_refuses_to_overwrite(tmp_path, capsys):
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.cli import main

    args = ["fit", "--pose", "stand", "--garment", "skirt", "-o", str(tmp_path)]
    assert main(args) == 0
    head, binary = tmp_path / "skirt.surface.json", tmp_path / "skirt.surface.bytes"
    av = load_builtin_avatar()
    bake = sb.load_surface_bake(head, av.part("skirt").mesh.n_vertices, av.body.mesh.n_vertices)
    assert bake["corners"].shape == (720, CANDIDATES, 3) and bake["garment"] == "skirt"
    np.testing.assert_array_equal(bake["chord"], garment_chords(av.part("skirt").mesh).astype(np.float32))
    # an existing bake (header or binary) is refused before anything is written, and --force overwrites it
    for name in ("skirt.surface.json", "skirt.surface.bytes"):
        out = tmp_path / name.replace(".", "_")
        out.mkdir()
        (out / name).write_text("mine")
        capsys.readouterr()
        assert main(["fit", "--pose", "stand", "--garment", "skirt", "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert name in err and "--force" in err
        assert sorted(p.name for p in out.iterdir()) == [name] and (out / name).read_text() == "mine"
    head.write_text("mine")
    assert main([*args, "--force"]) == 0
    assert json.loads(head.read_text())["vertices"] == 720


def test_fit_writes_the_floor_of_its_compression_limit(tmp_path, capsys):
    """The bake's floor is the runtime's (garment_shortest): 0.85 on the skirt's waistband by default, 1 - C with
    --compression-limit C, none with 0; a limit outside [0, 1) is refused by the parser."""
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.cli import main

    av = load_builtin_avatar()
    n, nb = av.part("skirt").mesh.n_vertices, av.body.mesh.n_vertices
    clings = garment_shortest(av, "skirt") > 0
    assert 50 < clings.sum() < n // 2  # the waistband
    for limit, want in ((None, 1.0 - COMPRESSION_LIMIT), ("0.3", 0.7), ("0", 0.0)):
        out = tmp_path / str(limit)
        extra = [] if limit is None else ["--compression-limit", limit]
        assert main(["fit", "--pose", "stand", "--garment", "skirt", "-o", str(out), *extra]) == 0
        bake = sb.load_surface_bake(out / "skirt.surface.json", n, nb)
        np.testing.assert_array_equal(bake["shortest"], np.where(clings, np.float32(want), 0.0))
    for bad in ("1", "-0.1", "nan", "x"):
        with pytest.raises(SystemExit):
            main(["fit", "--pose", "stand", "--garment", "skirt", "-o", str(tmp_path / "bad"), "--compression-limit",
                  bad])
        assert "--compression-limit" in capsys.readouterr().err


def test_fit_writes_a_suits_self_layers(tmp_path):
    """kisekae fit's surface bake of a garment of several sheets carries its self layers (the casual suit's hem over
    its waistband lining: the same vertices, triangles and gaps as the per-frame path's)."""
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.cli import main
    from kisekae.fit.runtime import garment_self_layers
    from kisekae.io.mhclo import add_garments

    suit = Path(__file__).resolve().parents[1] / "src" / "kisekae" / "data" / "samples" / "female_casualsuit01.mhclo"
    assert main(["fit", "--pose", "stand", "--garment", str(suit), "-o", str(tmp_path)]) == 0
    av = load_builtin_avatar()
    name = add_garments(av, [str(suit)])[0]
    mesh = av.part(name).mesh
    layers = garment_self_layers(av, name)
    bake = sb.load_surface_bake(tmp_path / f"{name}.surface.json", mesh.n_vertices, av.body.mesh.n_vertices)
    has = layers.triangles >= 0
    np.testing.assert_array_equal(bake["self_side"] != 0, has)
    np.testing.assert_array_equal(bake["self_corners"][has], mesh.faces[layers.triangles[has]])
    np.testing.assert_array_equal(bake["self_gap"], layers.gap.astype(np.float32))
    assert 10 < has.any(axis=1).sum() < 200


# KisekaeStretchLimits, not KisekaeStretchLimit: a kernel named as the core function it calls is an overloaded entry
# point (glslang then writes invalid SPIR-V), as KisekaeBodyCurvatures calls KisekaeBodyCurvature
_PART_KERNELS = ("KisekaePartDepths", "KisekaePairFades", "KisekaePartStepFirst", "KisekaeBodySmooth",
                 "KisekaePartStepAgain", "KisekaePartGuards", "KisekaePartApply")
_PROBE_KERNELS = ("KisekaeBodyPrepare", "KisekaeBodyNormals", "KisekaeBodyCurvatures", "KisekaeGarmentCorrectives",
                  "KisekaeSurfacePushFirst",
                  "KisekaeSmooth", "KisekaeSurfacePushSecond", "KisekaeStretchLimits", "KisekaeSampleLifts",
                  "KisekaeEdgeLifts", "KisekaeLiftApply", "KisekaeUnflips", "KisekaeFinish", "KisekaeGarmentNormals",
                  "KisekaeLayerPush", "KisekaeLayerPushAgain", "KisekaeSelfLayers", "KisekaeSelfLayerApply",
                  "KisekaeBodyOffsets", "KisekaeFollowGather") + _PART_KERNELS


def _has_surface_core() -> bool:
    return (HLSL_DIR / "kisekae_surface.hlsl").is_file() and "kisekae_surface.hlsl" in (
        HLSL_DIR / "kisekae_core.hlsl").read_text()


def _compute_layout(tmp_path):
    shutil.copy(UNITY / "Shaders" / "KisekaeCore.hlsl", tmp_path / "KisekaeCore.hlsl")
    shutil.copytree(HLSL_DIR, tmp_path / "hlsl")
    shutil.copy(COMPUTE, tmp_path / "KisekaeSurfacePush.compute.hlsl")
    return tmp_path / "KisekaeSurfacePush.compute.hlsl"


def test_compute_kernels_declared_and_dispatched():
    text = COMPUTE.read_text()
    cs = GLUE.read_text()
    kernels = re.findall(r"^#pragma kernel (\w+)", text, flags=re.M)
    assert tuple(kernels) == _PROBE_KERNELS
    for k in kernels:
        assert re.search(rf"\[numthreads\(64, 1, 1\)\]\s*void {k}\(", text), k
        assert f'FindKernel("{k}")' in (PARTS_GLUE.read_text() if k in _PART_KERNELS else cs), k
    assert '#include "KisekaeCore.hlsl"' in text
    for macro in ("KISEKAE_LOAD_SURFACE_TRIANGLE", "KISEKAE_SURFACE_CANDIDATES", "KISEKAE_LOAD_RING_RANGE",
                  "KISEKAE_LOAD_RING", "KISEKAE_LOAD_DISPLACEMENT", "KISEKAE_LOAD_BODY_POSITION",
                  "KISEKAE_LOAD_BODY_NORMAL", "KISEKAE_LOAD_BODY_CURVATURE", "KISEKAE_LOAD_BODY_FACE_RANGE",
                  "KISEKAE_LOAD_BODY_FACE", "KISEKAE_LOAD_GARMENT_SKINNED"):
        assert f"#define {macro}" in text, macro
    # the macros come before the core: KisekaeStretchLimit is compiled only when KISEKAE_LOAD_GARMENT_SKINNED is
    assert text.index("#define KISEKAE_LOAD_GARMENT_SKINNED") < text.index('#include "KisekaeCore.hlsl"')
    assert "KisekaeStretchLimit(v, _KisekaeStretchLimit, moved)" in text
    # the carried correction: read by the first push, written by the finish, its keep set, cleared on a reset
    record = cs[cs.index("void Record(CommandBuffer cmd)"):]
    assert re.search(r"KisekaeCarryStart\(x \+ _KisekaeGarmentCorrectiveRW\[v\]\.xyz \+ _KisekaeFollow\[v\]\.xyz,\s+"
                     r"_KisekaeCorrectionRW\[v\]\.xyz, _KisekaeCarryKeep\)", text)
    assert ("_KisekaeCorrectionRW[v] = float4(disp - _KisekaeGarmentCorrectiveRW[v].xyz - _KisekaeFollow[v].xyz, 0.0);"
            in text)
    # the garment's correctives: computed before the first push, bound to it and to the finish
    assert record.index("RecordCorrectiveSet(cmd, _garmentSet, _kGarmentCorrectives") \
        < record.index("cmd.DispatchCompute(cs, _kPushFirst, ")
    # the body follow: the body's corrective offsets before the body is prepared, the gather and its smoothing
    # after the body normals, the result bound where the push starts and where the carry is stored
    assert record.index("RecordCorrectiveSet(cmd, _bodySet, _kBodyOffsets") \
        < record.index("cmd.DispatchCompute(cs, _kBodyPrepare, ") < record.index("cmd.DispatchCompute(cs, _kBodyNormals, ") \
        < record.index("GraphicsBuffer follow = RecordFollow(cmd);") < record.index("cmd.DispatchCompute(cs, _kPushFirst, ")
    assert 'cmd.SetComputeBufferParam(cs, k, "_KisekaeFollow", follow);' in cs
    assert "public bool bodyFollow = true;" in cs and f"public int followPasses = {FOLLOW_SMOOTH};" in cs
    assert "public int followPasses;" in cs and "pass < followPasses" in cs
    assert "public KisekaeBodyCorrectives bodyCorrectives;" in cs and "BodyCorrectivesProblem()" in cs
    assert 'cmd.SetComputeBufferParam(cs, _kBodyPrepare, "_KisekaeBodyBeyondRW", _bodyBeyond);' in cs
    for macro in ("KISEKAE_LOAD_FOLLOW_CORNERS", "KISEKAE_LOAD_FOLLOW_WEIGHTS", "KISEKAE_LOAD_BODY_BEYOND"):
        assert f"#define {macro}(" in text, macro
    assert "foreach (int k in new[] { _kPushFirst, _kFinish })" in cs and "public KisekaeBodyCorrectives garmentCorrectives;" in cs
    assert "public const int SkinInfluences = 8;" in cs and "public const int CorrectiveCentres = 16;" in cs
    assert '"_KisekaeCarryKeep", carryKeep' in cs and f"public float carryKeep = {KEEP}f;" in cs
    assert 'cmd.SetComputeBufferParam(cs, _kPushFirst, "_KisekaeCorrectionRW", _correction)' in cs
    assert 'cmd.SetComputeBufferParam(cs, _kFinish, "_KisekaeCorrectionRW", _correction)' in cs
    assert "public void ResetCarry()" in cs
    # the normal guard: on by default, the skinned normals bound to the body normals pass, which weights each triangle
    assert "public bool normalGuard = true;" in cs and 'cmd.SetComputeIntParam(cs, "_KisekaeNormalGuard", guard ? 1 : 0);' in cs
    assert 'cmd.SetComputeBufferParam(cs, _kBodyNormals, "_KisekaeBodySkinned", _bodyVertices);' in cs
    assert 'cmd.SetComputeIntParam(cs, "_KisekaeBodyNormalOffset", 12);' in cs
    normals = text[text.index("void KisekaeBodyNormals("):text.index("void KisekaeBodyCurvatures(")]
    assert "KisekaeGuardedFace(a, b, c, KisekaeBodySkinnedNormal(k.x)" in normals and "_KisekaeNormalGuard != 0u" in normals
    assert '"_KisekaeStretchLimit", stretchLimit' in cs
    assert "_KisekaeSurfaceChord[v]" in text and '"_KisekaeSurfaceChord", chord' in cs
    # the stretch limit's floor (the bake's last array) reaches KisekaeStretchLimit
    assert "#define KISEKAE_LOAD_SHORTEST(j) _KisekaeSurfaceShortest[(j)]" in text
    assert 'cmd.SetComputeBufferParam(cs, _kStretchLimit, "_KisekaeSurfaceShortest", _shortest);' in cs
    assert ('"vertexSampleIdx",\n                                            "shortest", "followCorners", "followBary", "followShare", '
            '"depthBound",\n                                            "selfCorners", "selfSide", "selfGap" };') in cs
    assert "BindSurface(cmd, _bodyPositions, _bodyNormals, _bodyCurvature, _corners, _chord, _depthBound);" in cs
    assert '"_KisekaeBodyCurvature", curvature' in cs and '"chord"' in cs
    # the layer push (beneath): its constants are kisekae's, its stage between the stretch limit and the edge lift,
    # on the garment beneath, and the body bound again after it
    from kisekae.fit import layer_push as lp

    assert f"public const float LayerReach = {lp.LAYER_REACH}f;" in cs
    assert f"public const float LayerFade = {lp.LAYER_FADE}f;" in cs
    assert f"public const int LayerSmooth = {lp.LAYER_SMOOTH};" in cs
    assert f"public const int LayerLiftPasses = {lp.LAYER_LIFT_PASSES};" in cs
    assert ("BindSurface(cmd, beneath._positions, beneath._normals, _layerCurvature, _layerCorners, _layerChord,\n"
            "                        _layerDepthBound);") in cs  # a garment beneath: no depth bound (1e30)
    assert "_layerDepthBound.SetData(noBound)" in cs and "noBound[i] = 1e30f" in cs
    # the loader's checks walk the binary in layout order: after the follow's binding it reads the depth bound, whose
    # offset must equal the sum of the arrays before it (a wrong step reads past the end of the bake)
    check = cs[cs.index("float floor = BitConverter.ToSingle"):cs.index("_data = data;")]
    steps = re.findall(r"at \+= (\d*) ?\*? ?n;", check)
    assert steps == ["", "3", "4"], steps  # shortest N, followCorners 3 N, then followBary 3 N + followShare N
    record = cs[cs.index("void Record(CommandBuffer cmd)"):]
    assert record.index("cmd.DispatchCompute(cs, _kStretchLimit, ") < record.index("RecordLayer(cmd, ref src, ref dst)") \
        < record.index("cmd.DispatchCompute(cs, _kSampleLifts, ")
    layer = cs[cs.index("void RecordLayer("):cs.index("void Record(CommandBuffer cmd)")]

    def dispatched(k):  # a dispatch of kernel k in RecordLayer, direct or through Pass
        found = [i for i in (layer.find(f"cmd.DispatchCompute(cs, {k}, "), layer.find(f"Pass(cmd, {k}, ")) if i >= 0]
        assert found, k
        return min(found)

    order = [dispatched(k) for k in ("_kBodyCurvatures", "_kLayerPush", "_kSmooth", "_kLayerPushAgain",
                                     "_kSampleLifts", "_kEdgeLifts", "_kLiftApply")]
    assert order == sorted(order)
    assert layer.rindex("BindSurface(cmd, _bodyPositions") > layer.rindex("cmd.DispatchCompute(")
    assert "foreach (KisekaeSurfacePush outer in _above) outer.RunFrame();" in cs
    assert f"#define KISEKAE_SURFACE_CANDIDATES {CANDIDATES}" in text
    assert f"public const int Candidates = {CANDIDATES};" in cs
    assert f"public const int BakeVersion = {sb.SURFACE_BAKE_VERSION};" in cs
    assert f"public int smoothPasses = {SMOOTH_PASSES};" in cs
    assert f"public int limitPasses = {LIMIT_PASSES};" in cs and f"public float stretchLimit = {STRETCH_LIMIT}f;" in cs
    assert "public int limitPasses;" in cs and "public float stretchLimit;" in cs  # the header's entries
    # the order of the dispatches: push, smoothing, push, stretch limit, finish, normals
    order = [record.index(f"cmd.DispatchCompute(cs, {k}, ") for k in ("_kPushFirst", "_kSmooth", "_kPushSecond",
                                                                     "_kStretchLimit", "_kFinish", "_kGarmentNormals")]
    assert order == sorted(order)
    assert "pass < limitPasses" in cs
    # the edge lift and unflip after the stretch limit, before the finish; kisekae's counts as the defaults
    order = [record.index(f"cmd.DispatchCompute(cs, {k}, ") for k in ("_kStretchLimit", "_kSampleLifts", "_kEdgeLifts",
                                                                     "_kLiftApply", "_kUnflips", "_kFinish")]
    assert order == sorted(order)
    assert f"public int liftPasses = {LIFT_PASSES};" in cs and f"public int unflipPasses = {UNFLIP_PASSES};" in cs
    assert f"public float turnStart = {TURN_START}f;" in cs and '"_KisekaeTurnStart", turnStart' in cs
    # the component's defaults are kisekae's: the edge lift on, capped at FINISH_STEP
    assert "public bool edgeLift = true;" in cs and f"public float finishStep = {FINISH_STEP}f;" in cs
    assert "edgeLift && pass < liftPasses + unflipPasses" in cs
    # then the stretch limit again (the last _kStretchLimit dispatch after the unflips), before the finish
    assert f"public int liftLimitPasses = {LIFT_LIMIT_PASSES};" in cs and "public int liftLimitPasses;" in cs
    assert record.index("cmd.DispatchCompute(cs, _kUnflips, ") < record.rindex("cmd.DispatchCompute(cs, _kStretchLimit, ") \
        < record.index("cmd.DispatchCompute(cs, _kFinish, ")
    assert "pass < liftLimitPasses" in cs
    for macro in ("KISEKAE_LOAD_SAMPLE_TRIANGLE", "KISEKAE_LOAD_SAMPLE_ENDS", "KISEKAE_LOAD_SAMPLE_WEIGHTS",
                  "KISEKAE_LOAD_SAMPLE_LIFT", "KISEKAE_LOAD_VERTEX_SAMPLE_RANGE", "KISEKAE_LOAD_VERTEX_SAMPLE",
                  "KISEKAE_LOAD_GARMENT_FACE_RANGE", "KISEKAE_LOAD_GARMENT_FACE", "KISEKAE_LOAD_BODY_DEPTH_BOUND"):
        assert f"#define {macro}(" in text, macro
    for array in sb.LAYOUT:
        assert f'"{array}"' in cs, array
    assert "vertexBufferTarget |= GraphicsBuffer.Target.Raw" in cs and "GetVertexBuffer()" in cs
    # the counts are checked against both meshes, and a mismatch is refused with the object's name
    assert "h.vertices != n" in cs and "h.bodyVertices != nb" in cs and "enabled = false" in cs


def test_o3de_srg_defines_the_surface_macros():
    srg = SRG.read_text()
    for macro in ("KISEKAE_LOAD_SURFACE_TRIANGLE", "KISEKAE_SURFACE_CANDIDATES", "KISEKAE_LOAD_RING_RANGE",
                  "KISEKAE_LOAD_RING", "KISEKAE_LOAD_DISPLACEMENT", "KISEKAE_LOAD_BODY_CURVATURE",
                  "KISEKAE_LOAD_BODY_FACE_RANGE", "KISEKAE_LOAD_BODY_FACE", "KISEKAE_LOAD_GARMENT_SKINNED",
                  "KISEKAE_LOAD_SHORTEST", "KISEKAE_LOAD_FOLLOW_CORNERS", "KISEKAE_LOAD_FOLLOW_WEIGHTS",
                  "KISEKAE_LOAD_BODY_BEYOND", "KISEKAE_LOAD_BODY_DEPTH_BOUND", "KISEKAE_LOAD_SELF_TRIANGLE",
                  "KISEKAE_LOAD_SELF_GAP"):
        assert f"#define {macro}(" in srg or f"#define {macro} " in srg, macro
    for member in ("m_surfaceCorners", "m_ringPtr", "m_ringIdx", "m_displacement", "m_surfaceChord", "m_surfaceShortest",
                   "m_bodyCurvature", "m_bodyVertexFacePtr", "m_bodyVertexFaces", "m_bodyTriangles",
                   "m_garmentSkinned", "m_correction", "m_carryKeep", "m_finishBudget", "m_finishStep", "m_followCorners",
                   "m_followBary", "m_followShare", "m_bodyBeyond", "m_follow", "m_bodyDepthBound", "m_selfCorners",
                   "m_selfSide", "m_selfGap"):
        assert member in srg, member


@pytest.mark.skipif(not _has_surface_core(), reason="the core has no kisekae_surface.hlsl yet")
@pytest.mark.parametrize("kernel", _PROBE_KERNELS)
def test_unity_compute_kernels_compile(tmp_path, kernel):
    """Every kernel of KisekaeSurfacePush.compute, in the Unity include layout, through glslang (no warnings)."""
    src = _compute_layout(tmp_path)
    c = compile_hlsl(src, "comp", entry=kernel, use_cache=False, core_dir=tmp_path / "hlsl")
    assert c.spirv[:4] == b"\x03\x02\x23\x07" and "WARNING" not in c.log.upper()


def test_o3de_surface_macros_compile_with_the_srg_flattened(tmp_path):
    """The SRG's surface macros, with the SRG turned into plain globals (AZSLc is not here), drive the core's
    KisekaeSurfacePush (with the chord allowance), KisekaeSmoothPush, KisekaeStretchLimit, KisekaeBodyCurvature and
    KisekaeBodyFollowLoad through glslang."""
    if not _has_surface_core():
        pytest.skip("the core has no kisekae_surface.hlsl yet")
    flat_srg(tmp_path)
    (tmp_path / "probe.hlsl").write_text("""#include "srg.hlsl"
#include "kisekae_core.hlsl"
RWStructuredBuffer<float4> gOut;
[numthreads(64, 1, 1)]
void main(uint3 id : SV_DispatchThreadID)
{
    KisekaePushParams P;
    P.margin = m_push0.x; P.stiffness = m_push0.y; P.maxPush = m_push0.z; P.skirtBias = m_push0.w;
    P.smoothK = m_push1.x; P.up = m_push1.yzw;
    float push; float s;
    float3 start = KisekaeCarryStart(KISEKAE_LOAD_DISPLACEMENT(id.x), m_correction[id.x].xyz, m_carryKeep);
    float3 q = KisekaeSurfacePush(start, id.x, 0.0, 0.0, P, P.maxPush,
                                  m_surfaceChord[id.x], push, s);
    bool moved;
    float3 limited = KisekaeStretchLimit(id.x, 0.1, moved);
    float3 sp = KisekaeSamplePoint(id.x);
    float3 lifted = KisekaeSamplePush(sp, id.x, 0.0, 0.0, P, P.maxPush, m_sampleChord[id.x], push, s) - sp;
    bool turned;
    float3 unflipped = KisekaeUnflip(id.x, m_turnStart, turned);
    bool lifted2;
    float3 own = KisekaeSelfLayerPush(id.x, lifted2);
    gOut[id.x] = float4(q + KisekaeSmoothPush(id.x) + limited + lifted + KisekaeEdgeLift(id.x) + unflipped
                        + KisekaeBodyFollowLoad(id.x) + m_follow[id.x].xyz + own,
                        push + KisekaeBodyCurvature(id.x) + (moved ? 1.0 : 0.0) + (turned ? 1.0 : 0.0));
}
""")
    c = compile_hlsl(tmp_path / "probe.hlsl", "comp", use_cache=False)
    for name in ("m_surfaceCorners", "m_ringPtr", "m_ringIdx", "m_displacement", "m_surfaceChord", "m_bodyCurvature",
                 "m_bodyVertexFacePtr", "m_bodyVertexFaces", "m_bodyTriangles", "m_garmentSkinned", "m_correction",
                 "m_carryKeep", "m_sampleEnds", "m_sampleWeights", "m_sampleChord", "m_sampleCorners", "m_vertexSamplePtr",
                 "m_vertexSampleIdx", "m_sampleLift", "m_garmentTriangles", "m_garmentVertexFacePtr",
                 "m_garmentVertexFaces", "m_weld", "m_turnStart", "m_followCorners", "m_followBary", "m_followShare",
                 "m_bodyBeyond", "m_follow", "m_selfCorners", "m_selfSide", "m_selfGap"):
        assert name in c.glsl, name


# ---- the Unity kernels on llvmpipe, dispatched in KisekaeSurfacePush.cs's order ------------------------------------

class _Kernel:
    """One kernel of KisekaeSurfacePush.compute as a moderngl compute program; the loose uniforms ($Global) laid
    out from spirv-cross's reflection."""

    def __init__(self, ctx, src, core, entry):
        self.c = compile_hlsl(src, "comp", entry=entry, core_dir=core)
        self.program = ctx.compute_shader(self.c.glsl)
        spv = src.parent / f"{entry}.spv"
        spv.write_bytes(self.c.spirv)
        refl = json.loads(subprocess.run(["spirv-cross", str(spv), "--reflect"], capture_output=True, text=True,
                                         check=True).stdout)
        # buffers by their variable (instance) names: spirv-cross names a block by its type, which two
        # StructuredBuffer<uint> of the same kernel share (_KisekaeSurfaceCorners and _KisekaeSampleCorners)
        self.bindings = dict(self.c.bindings)
        for m in re.finditer(r"layout\(binding = (\d+)[^)]*\)\s+(?:readonly\s+|writeonly\s+)?buffer\s+\w+\s*"
                             r"\{[^}]*\}\s*(\w+);", self.c.glsl):
            self.bindings[re.sub(r"_\d+$", "", m.group(2))] = ("buffer", int(m.group(1)))
        self.block = None
        for ub in refl.get("ubos", []):
            members = refl["types"][ub["type"]]["members"]
            self.block = (ub["block_size"], {m["name"]: m["offset"] for m in members})
        self.ctx = ctx

    def run(self, n, uniforms, buffers, textures=()):
        keep = []
        b = self.bindings
        if self.block is not None:
            size, offsets = self.block
            data = bytearray(size)
            for name, value in uniforms.items():
                if name in offsets:
                    raw = np.ascontiguousarray(value).tobytes()
                    data[offsets[name]:offsets[name] + len(raw)] = raw
            ubo = self.ctx.buffer(bytes(data))
            ubo.bind_to_uniform_block(b["_Global"][1])
            keep.append(ubo)
        for name, buf in buffers.items():
            if name in b:
                buf.bind_to_storage_buffer(b[name][1])
        for unit, (name, tex) in enumerate(textures):
            for u in self.program:
                if name in u:
                    self.program[u].value = unit
                    tex.use(location=unit)
        self.program.run(group_x=(n + 63) // 64)
        for k in keep:
            k.release()


def unity_frame(tmp_path, body_local, garment_local, body_to_world, garment_to_world, bake, body_tris, garment_tris,
                params, contact=None, mask=(0.0, 0.0), carry=None, finish_step=None, layer=None, correctives=None,
                follow=None, guard=None, parts=None):
    """KisekaeSurfacePush.cs's frame: the thirteen kernels with its bindings, its ping-pong (the smoothing, the second
    push, the stretch-limit passes, the edge lift and unflip rounds and the unflips, from the bake's counts) and its
    stride-40 skinned buffers (position, normal,
    tangent). Returns (positions + push, normals, body positions, body normals), float32
    (N, 4) each, world space, and the body curvature (Nb,). ``carry``: (previous correction (N, 3) world m, keep) in
    the correction buffer and _KisekaeCarryKeep (None: zeros, keep 0), and then the correction buffer after the
    frame (N, 4) is returned last. ``finish_step``: metres in _KisekaeFinishStep (None: -1, no cap). ``layer``: the
    garment beneath (KisekaeSurfacePush.beneath, RecordLayer): dict of its world ``positions`` and ``normals`` (M, 3),
    ``triangles`` and the layer ``bake`` (load_surface_bake of OUTER.over.INNER). ``correctives``: the garment's
    pose-space correctives (KisekaeSurfacePush.garmentCorrectives): dict of the bake ``c``
    (:class:`~kisekae.avatar.correctives.PoseCorrectives`), this frame's ``features`` (J, K), the garment's ``skin``
    and the world ``skin_matrices`` (B, 4, 4), run through KisekaeGarmentCorrectives first (None: zero offsets).
    ``follow``: KisekaeSurfacePush.bodyFollow, a dict whose ``body`` is None or the body's correctives in the form of
    ``correctives`` (KisekaeSurfacePush.bodyCorrectives, run through KisekaeBodyOffsets over the body), then
    KisekaeFollowGather with the bake's binding and its ``follow_passes`` smoothing passes (None: no follow).
    ``guard``: the body's skinned normals (Nb, 3) in its renderer's space, written into the skinned vertices' normal
    slot with _KisekaeNormalGuard on (KisekaeSurfacePush.normalGuard; None: junk normals, the guard off).
    ``parts``: the body's part contact (KisekaeSurfacePush.parts, KisekaeBodyParts.Record), ``_unity_parts``' dict,
    dispatched after KisekaeBodyPrepare (None: the planes body)."""
    from kisekae.shaders.execute import gl_context

    ctx = gl_context()
    src = _compute_layout(tmp_path)
    kernels = {k: _Kernel(ctx, src, tmp_path / "hlsl", k) for k in _PROBE_KERNELS}
    nb, n = len(body_local), len(garment_local)
    made = []

    def buf(data=None, reserve=0):
        b = ctx.buffer(data) if data is not None else ctx.buffer(reserve=reserve)
        made.append(b)
        return b

    def skinned(points, normals=None):
        v = np.full((len(points), 10), 7.0, np.float32)  # junk normal and tangent around each position
        v[:, :3] = points
        if normals is not None:
            v[:, 3:6] = normals
        return buf(v.tobytes())

    def u32(a):
        a = np.asarray(a, np.uint32).ravel()
        return buf((a if a.size else np.zeros(1, np.uint32)).tobytes())

    def f4(a):
        return buf(np.ascontiguousarray(a, np.float32).tobytes())

    def vertex_faces(tris, count, rep):  # as KisekaeSurfacePush.VertexFaces
        tris = np.asarray(tris).reshape(-1, 3)
        owners = rep[tris.ravel()]
        order = np.argsort(owners, kind="stable")
        ptr = np.concatenate([[0], np.cumsum(np.bincount(owners, minlength=count))])
        return ptr, (np.arange(tris.size) // 3)[order]

    bptr, bfaces = vertex_faces(body_tris, nb, np.arange(nb))
    gptr, gfaces = vertex_faces(garment_tris, n, bake["weld"])
    bufs = {
        "_KisekaeBodySkinned": skinned(body_local, guard), "_KisekaeGarmentSkinned": skinned(garment_local),
        "_KisekaeBodyTriangles": u32(body_tris), "_KisekaeBodyVertexFacePtr": u32(bptr),
        "_KisekaeBodyVertexFaces": u32(bfaces), "_KisekaeGarmentTriangles": u32(garment_tris),
        "_KisekaeGarmentVertexFacePtr": u32(gptr), "_KisekaeGarmentVertexFaces": u32(gfaces),
        "_KisekaeSurfaceCorners": u32(bake["corners"]), "_KisekaeRingPtr": u32(bake["ring"][0]),
        "_KisekaeRingIdx": u32(bake["ring"][1]), "_KisekaeWeld": u32(bake["weld"]),
        "_KisekaeSurfaceChord": buf(np.asarray(bake["chord"], np.float32).tobytes()),
        "_KisekaeSurfaceShortest": buf(np.asarray(bake["shortest"], np.float32).tobytes()),
        "_KisekaeGarmentUV": f4(np.full((n, 2), 0.5)),
        "_KisekaeSampleEnds": u32(bake["sample_ends"]), "_KisekaeSampleCorners": u32(bake["sample_corners"]),
        "_KisekaeSampleWeights": buf(np.asarray(bake["sample_weights"], np.float32).tobytes()),
        "_KisekaeSampleChord": buf(np.asarray(bake["sample_chord"], np.float32).tobytes()),
        "_KisekaeVertexSamplePtr": u32(bake["vertex_samples"][0]),
        "_KisekaeVertexSampleIdx": u32(bake["vertex_samples"][1]),
    }
    ns = len(bake["sample_chord"])
    sample_lift, lifts = buf(reserve=max(ns, 1) * 16), [buf(reserve=n * 16), buf(reserve=n * 16)]
    body_pos, body_nrm, body_kv = buf(reserve=nb * 16), buf(reserve=nb * 16), buf(reserve=nb * 4)
    disp = [buf(reserve=n * 16), buf(reserve=n * 16)]
    out_pos, out_nrm = buf(reserve=n * 16), buf(reserve=n * 16)
    bufs["_KisekaeFinishBudgetRW"] = buf(reserve=n * 4)
    previous, keep = carry if carry is not None else (np.zeros((n, 3)), 0.0)
    correction = f4(np.c_[np.asarray(previous, np.float64), np.zeros(n)])
    uni = {
        "_KisekaeBodyCount": np.uint32(nb), "_KisekaeBodyStride": np.uint32(40),
        "_KisekaeBodyPositionOffset": np.uint32(0), "_KisekaeGarmentCount": np.uint32(n),
        "_KisekaeBodyNormalOffset": np.uint32(12), "_KisekaeNormalGuard": np.uint32(guard is not None),
        "_KisekaeGarmentStride": np.uint32(40), "_KisekaeGarmentPositionOffset": np.uint32(0),
        # HLSL's default column_major packing, as Unity's SetMatrix uploads a Matrix4x4: one column after the other
        "_KisekaeBodyToWorld": np.ascontiguousarray(np.asarray(body_to_world, np.float32).T),
        "_KisekaeGarmentToWorld": np.ascontiguousarray(np.asarray(garment_to_world, np.float32).T),
        "_KisekaeContactOn": np.uint32(contact is not None),
        "_KisekaePush0": np.array([params.margin, params.stiffness, params.max_push, params.skirt_bias], np.float32),
        "_KisekaePush1": np.array([0.0, 0.0, 1.0, 0.0], np.float32),
        "_KisekaeReach": np.float32(params.max_push),
        "_KisekaeStretchLimit": np.float32(bake["stretch_limit"]),
        "_KisekaeCarryKeep": np.float32(keep),
        "_KisekaeSampleCount": np.uint32(ns), "_KisekaeTurnStart": np.float32(bake["turn_start"]),
        "_KisekaeFinishStep": np.float32(-1.0 if finish_step is None else finish_step),
    }
    if contact is not None:
        for key in ("_KisekaeJointCentre", "_KisekaeJointNormal", "_KisekaeJointRest", "_KisekaeJointRestDir"):
            table = np.zeros((64, 4), np.float32)
            table[:len(contact[key])] = contact[key]
            uni[key] = table
        uni["_KisekaeContact"] = np.asarray(contact["_KisekaeContact"], np.float32)
    for key in ("joints", "sides", "rest"):
        data = np.zeros((1, 4)) if contact is None else contact[key]
        bufs["_KisekaeContact" + key.capitalize()] = f4(data)
    tex = ctx.texture((1, 1), 4, np.array([*mask, 0.0, 0.0], np.float32).tobytes(), dtype="f4")
    textures = [("KisekaeMaskMap", tex)]
    body_offset, beyond = buf(np.zeros((nb, 4), np.float32).tobytes()), buf(reserve=nb * 16)
    if follow is not None and follow["body"] is not None:
        kernels["KisekaeBodyOffsets"].run(nb, uni, {**_corrective_buffers(follow["body"], nb, buf, u32, f4),
                                                    "_KisekaeBodyOffsetRW": body_offset})
    kernels["KisekaeBodyPrepare"].run(nb, uni, {**bufs, "_KisekaeBodyPositionsRW": body_pos,
                                                "_KisekaeBodyOffset": body_offset, "_KisekaeBodyBeyondRW": beyond})
    if parts is not None:
        _unity_part_contact(kernels, parts, uni, buf, f4, u32, body_pos, beyond, nb)
    kernels["KisekaeBodyNormals"].run(nb, uni, {**bufs, "_KisekaeBodyPositions": body_pos,
                                                "_KisekaeBodyNormalsRW": body_nrm})
    kernels["KisekaeBodyCurvatures"].run(nb, uni, {**bufs, "_KisekaeBodyPositions": body_pos,
                                                   "_KisekaeBodyNormals": body_nrm, "_KisekaeBodyCurvatureRW": body_kv})
    common = {**bufs, "_KisekaeBodyPositions": body_pos, "_KisekaeBodyNormals": body_nrm,
              "_KisekaeBodyCurvature": body_kv,
              "_KisekaeBodyDepthBound": buf(np.minimum(bake["depth_bound"], 1e30).astype(np.float32).tobytes())}
    fol = [buf(np.zeros((n, 4), np.float32).tobytes()), buf(reserve=n * 16)]
    if follow is not None:
        kernels["KisekaeFollowGather"].run(n, uni, {
            **common, "_KisekaeBodyBeyond": beyond, "_KisekaeFollowCorners": u32(bake["follow_corners"]),
            "_KisekaeFollowBary": buf(np.asarray(bake["follow_bary"], np.float32).tobytes()),
            "_KisekaeFollowShare": buf(np.asarray(bake["follow_share"], np.float32).tobytes()),
            "_KisekaeDisplacementOut": fol[0]})
        for _ in range(bake["follow_passes"]):
            kernels["KisekaeSmooth"].run(n, uni, {**bufs, "_KisekaeDisplacementIn": fol[0],
                                                  "_KisekaeDisplacementOut": fol[1]})
            fol.reverse()
    common["_KisekaeFollow"] = bufs["_KisekaeFollow"] = fol[0]
    offsets = buf(np.zeros((n, 4), np.float32).tobytes())
    if correctives is not None:
        kernels["KisekaeGarmentCorrectives"].run(n, uni, {**_corrective_buffers(correctives, n, buf, u32, f4),
                                                          "_KisekaeGarmentCorrectiveRW": offsets})
    bufs["_KisekaeGarmentCorrectiveRW"] = offsets
    common["_KisekaeGarmentCorrectiveRW"] = offsets
    kernels["KisekaeSurfacePushFirst"].run(n, uni, {**common, "_KisekaeDisplacementOut": disp[0],
                                                    "_KisekaeCorrectionRW": correction}, textures)
    src_i = 0
    for _ in range(bake["smooth_passes"]):
        kernels["KisekaeSmooth"].run(n, uni, {**bufs, "_KisekaeDisplacementIn": disp[src_i],
                                              "_KisekaeDisplacementOut": disp[1 - src_i]})
        src_i = 1 - src_i
    kernels["KisekaeSurfacePushSecond"].run(n, uni, {**common, "_KisekaeDisplacementIn": disp[src_i],
                                                     "_KisekaeDisplacementOut": disp[1 - src_i]}, textures)
    src_i = 1 - src_i
    for _ in range(bake["limit_passes"]):
        kernels["KisekaeStretchLimits"].run(n, uni, {**common, "_KisekaeDisplacementIn": disp[src_i],
                                                     "_KisekaeDisplacementOut": disp[1 - src_i]}, textures)
        src_i = 1 - src_i
    if layer is not None:  # KisekaeSurfacePush.RecordLayer
        src_i = _unity_layer(kernels, layer, uni, bufs, buf, f4, u32, vertex_faces, disp, src_i, sample_lift, lifts,
                             n, ns, textures)
    if bake["self_side"].any():  # KisekaeSurfacePush.RecordSelf (selfLayers on, a bake with self layers)
        src_i = _unity_self(kernels, bake, uni, common, bufs, buf, u32, disp, src_i, n)
    for r in range(bake["lift_passes"] + bake["unflip_passes"]):
        if r < bake["lift_passes"] and ns:
            kernels["KisekaeSampleLifts"].run(ns, uni, {**common, "_KisekaeDisplacementIn": disp[src_i],
                                                        "_KisekaeSampleLiftRW": sample_lift}, textures)
            kernels["KisekaeEdgeLifts"].run(n, uni, {**bufs, "_KisekaeSampleLift": sample_lift,
                                                     "_KisekaeDisplacementOut": lifts[0]})
            kernels["KisekaeSmooth"].run(n, uni, {**bufs, "_KisekaeDisplacementIn": lifts[0],
                                                  "_KisekaeDisplacementOut": lifts[1]})
            kernels["KisekaeLiftApply"].run(n, uni, {**common, "_KisekaeLift": lifts[1],
                                                     "_KisekaeDisplacementIn": disp[src_i],
                                                     "_KisekaeDisplacementOut": disp[1 - src_i]}, textures)
            src_i = 1 - src_i
        kernels["KisekaeUnflips"].run(n, uni, {**common, "_KisekaeDisplacementIn": disp[src_i],
                                               "_KisekaeDisplacementOut": disp[1 - src_i]}, textures)
        src_i = 1 - src_i
    for _ in range(bake["lift_limit_passes"] if ns else 0):
        kernels["KisekaeStretchLimits"].run(n, uni, {**common, "_KisekaeDisplacementIn": disp[src_i],
                                                     "_KisekaeDisplacementOut": disp[1 - src_i]}, textures)
        src_i = 1 - src_i
    kernels["KisekaeFinish"].run(n, uni, {**bufs, "_KisekaeDisplacementIn": disp[src_i],
                                          "_KisekaeGarmentPositionsRW": out_pos, "_KisekaeCorrectionRW": correction})
    kernels["KisekaeGarmentNormals"].run(n, uni, {**bufs, "_KisekaeGarmentPositions": out_pos,
                                                  "_KisekaeGarmentNormalsRW": out_nrm})
    out = tuple(np.frombuffer(b.read(), np.float32).reshape(-1, 4).copy()
                for b in (out_pos, out_nrm, body_pos, body_nrm)) + (np.frombuffer(body_kv.read(), np.float32).copy(),)
    if carry is not None:
        out = out + (np.frombuffer(correction.read(), np.float32).reshape(-1, 4).copy(),)
    for b in made:
        b.release()
    tex.release()
    return out


def _unity_self(kernels, bake, uni, common, bufs, buf, u32, disp, src_i, n) -> int:
    """KisekaeSurfacePush.RecordSelf: SelfPasses times KisekaeSelfLayers, SelfSmooth KisekaeSmooth passes of its steps
    into two other buffers, KisekaeSelfLayerApply; returns the ping-pong index of the displacement."""
    from kisekae.fit.self_layers import SELF_PASSES, SELF_SMOOTH

    raw, a, b = (buf(reserve=n * 16) for _ in range(3))
    data = {**common, "_KisekaeSelfCorners": u32(bake["self_corners"]),
            "_KisekaeSelfSide": buf(np.asarray(bake["self_side"], np.float32).tobytes()),
            "_KisekaeSelfGap": buf(np.asarray(bake["self_gap"], np.float32).tobytes())}
    for _ in range(SELF_PASSES):
        kernels["KisekaeSelfLayers"].run(n, uni, {**data, "_KisekaeDisplacementIn": disp[src_i],
                                                  "_KisekaeDisplacementOut": raw})
        x, y = raw, a
        for _ in range(SELF_SMOOTH):
            kernels["KisekaeSmooth"].run(n, uni, {**bufs, "_KisekaeDisplacementIn": x, "_KisekaeDisplacementOut": y})
            x, y = y, (b if y is a else a)
        kernels["KisekaeSelfLayerApply"].run(n, uni, {**bufs, "_KisekaeSelfStep": raw, "_KisekaeLift": x,
                                                      "_KisekaeDisplacementIn": disp[src_i],
                                                      "_KisekaeDisplacementOut": disp[1 - src_i]})
        src_i = 1 - src_i
    return src_i


def _unity_parts(fields, settings, world_matrices, mirror_x=False) -> dict:
    """``unity_frame``'s ``parts``: the part contact's buffers as KisekaeBodyParts.cs uploads them from the bake
    (``fields``, ``settings``: :func:`kisekae.shaders.part_bake.part_from_bake`), with this frame's inverse rows from
    the world skinning matrices (B, 4, 4) and each part's live flag. ``mirror_x``: the renderer's mesh space is the
    bake's mirrored in X (KisekaeBodyParts.mirrorX): the matrices map that space to world, and the rows take the bake's
    points there first."""
    from kisekae.avatar.part_contact import MIN_DETERMINANT, MIN_SPREAD, REST_SLACK

    m = np.asarray(world_matrices, np.float64)[fields.bone]
    live = np.abs(np.linalg.det(m[:, :3, :3])) > MIN_DETERMINANT
    inv = np.zeros((fields.n_parts, 4, 4))
    inv[live] = np.linalg.inv(m[live])
    if mirror_x:
        inv[:, 0, :] *= -1.0  # S inverse(M): world -> the renderer's rest space -> the bake's
    inv[:, 3, :] = 0.0
    inv[:, 3, 0] = live
    box = np.zeros((fields.n_parts, 2, 4))
    box[:, 0, :3], box[:, 0, 3], box[:, 1, 0] = fields.lo, fields.part_cell, fields.reach
    skip = fields.skip.astype(np.uint64)
    return {"samples": fields.grid, "box": box.reshape(-1, 4), "index": np.c_[fields.dims, fields.start[:-1]],
            "inverse": inv.reshape(-1, 4), "part": fields.part, "rest": np.c_[fields.rest, np.zeros(len(fields.rest))],
            "skip": np.c_[skip & np.uint64(0xFFFFFFFF), skip >> np.uint64(32)], "ring": fields.ring,
            "triangles": fields.faces, "face_ring": fields.vertex_faces,
            "count": fields.n_parts, "passes": settings["passes"],
            "params": ([settings["gap"], settings["band"], settings["deep"], 0.0], [MIN_SPREAD, REST_SLACK, 0.0, 0.0])}


def _unity_part_contact(kernels, parts, uni, buf, f4, u32, body_pos, beyond, nb) -> None:
    """KisekaeBodyParts.Record's dispatches: the depths, the fades (one group), the first step, the body smoothing
    passes (the body's one-ring bound as the ring; with none, a buffer of zeros), the second step, the flip guard's
    passes and the apply."""
    from kisekae.avatar.flip_guard import GUARD_COS, GUARD_HALVINGS, GUARD_REVERTS

    puni = {**uni, "_KisekaePartCount": np.uint32(parts["count"]),
            "_KisekaePart0": np.array(parts["params"][0], np.float32),
            "_KisekaePart1": np.array(parts["params"][1], np.float32)}
    common = {"_KisekaePartSamples": f4(parts["samples"]), "_KisekaePartBox": f4(parts["box"]),
              "_KisekaePartIndex": u32(parts["index"]), "_KisekaePartInverse": f4(parts["inverse"]),
              "_KisekaeVertexPart": buf(np.asarray(parts["part"], np.int32).tobytes()),
              "_KisekaeVertexSkip": u32(parts["skip"]), "_KisekaeVertexRest": f4(parts["rest"]),
              "_KisekaeBodyPositions": body_pos, "_KisekaeBodyPositionsRW": body_pos, "_KisekaeBodyBeyondRW": beyond}
    depth = u32(np.zeros(64 * 64))
    fade = buf(np.zeros(64 * 64, np.float32).tobytes())
    kernels["KisekaePartDepths"].run(nb, puni, {**common, "_KisekaePairDepthRW": depth})
    kernels["KisekaePairFades"].run(1, puni, {**common, "_KisekaePairDepthRW": depth, "_KisekaePairFadeRW": fade})
    common["_KisekaePairFade"] = fade
    moves = [buf(reserve=nb * 16), buf(reserve=nb * 16)]
    kernels["KisekaePartStepFirst"].run(nb, puni, {**common, "_KisekaeDisplacementOut": moves[0]})
    ring = {"_KisekaeRingPtr": u32(parts["ring"][0]), "_KisekaeRingIdx": u32(parts["ring"][1])}
    for _ in range(parts["passes"]):
        kernels["KisekaeBodySmooth"].run(nb, puni, {**ring, "_KisekaeDisplacementIn": moves[0],
                                                    "_KisekaeDisplacementOut": moves[1]})
        moves.reverse()
    src = moves[0] if parts["passes"] else buf(np.zeros((nb, 4), np.float32).tobytes())
    kernels["KisekaePartStepAgain"].run(nb, puni, {**common, "_KisekaeDisplacementIn": src,
                                                   "_KisekaeDisplacementOut": moves[1]})
    moves.reverse()
    faces = {"_KisekaePartTriangles": u32(parts["triangles"]), "_KisekaePartFacePtr": u32(parts["face_ring"][0]),
             "_KisekaePartFaces": u32(parts["face_ring"][1])}
    for scale in [0.5] * GUARD_HALVINGS + [0.0] * GUARD_REVERTS:
        kernels["KisekaePartGuards"].run(nb, {**puni, "_KisekaePartGuard": np.array([GUARD_COS, scale, 0, 0],
                                                                                       np.float32)},
                                         {**common, **faces, "_KisekaeDisplacementIn": moves[0],
                                          "_KisekaeDisplacementOut": moves[1]})
        moves.reverse()
    kernels["KisekaePartApply"].run(nb, puni, {**common, "_KisekaeDisplacementIn": moves[0]})
    parts["depth_after"] = np.frombuffer(depth.read(), np.uint32).copy()
    parts["fade_out"] = np.frombuffer(fade.read(), np.float32).reshape(64, 64).copy()
    parts["beyond_out"] = np.frombuffer(beyond.read(), np.float32).reshape(nb, 4).copy()


def _corrective_buffers(correctives, n, buf, u32, f4) -> dict:
    """KisekaeSurfacePush.UploadCorrectives' and RecordCorrectives' buffers for ``unity_frame``'s ``correctives``."""
    c, skin = correctives["c"], correctives["skin"]
    k = c.centres.shape[1]
    assert k == 16  # KISEKAE_CORRECTIVE_CENTRES
    ptr = np.asarray(c.vertex_ptr)
    idx = np.zeros((n, 8), np.uint32)
    w = np.zeros((n, 8), np.float32)
    idx[:, :skin.indices.shape[1]] = skin.indices
    w[:, :skin.weights.shape[1]] = skin.weights
    m = np.asarray(correctives["skin_matrices"], np.float32)
    coef = np.zeros((max(len(c.entry_joint), 1) * k, 4), np.float32)
    coef[:len(c.entry_joint) * k, :3] = np.asarray(c.coefficients, np.float32).reshape(-1, 3)
    return {"_KisekaeCorrectiveRange": u32(np.c_[ptr[:-1], np.diff(ptr)]), "_KisekaeCorrectiveJoint": u32(c.entry_joint),
            "_KisekaeCorrectiveCoef": f4(coef),
            "_KisekaeCorrectiveFeature": buf(np.asarray(correctives["features"], np.float32).tobytes()),
            "_KisekaeSkinBones": u32(idx), "_KisekaeSkinWeights": buf(w.tobytes()),
            "_KisekaeSkinRows": f4(m[:, :3, :].reshape(-1, 4))}


def _unity_layer(kernels, layer, uni, bufs, buf, f4, u32, vertex_faces, disp, src_i, sample_lift, lifts, n, ns,
                 textures):
    """The layer push's dispatches with their bindings (KisekaeSurfacePush.RecordLayer); returns the ping-pong index
    of the displacement after it."""
    from kisekae.fit.layer_push import LAYER_FADE, LAYER_LIFT_PASSES, LAYER_REACH, LAYER_SMOOTH

    tris = np.asarray(layer["triangles"])
    ni = len(layer["positions"])
    inner_pos = f4(np.c_[layer["positions"], np.zeros(ni)])
    inner_nrm = f4(np.c_[layer["normals"], np.zeros(ni)])
    iptr, ifaces = vertex_faces(tris, ni, np.arange(ni))
    kv = buf(reserve=ni * 4)
    kernels["KisekaeBodyCurvatures"].run(ni, {**uni, "_KisekaeBodyCount": np.uint32(ni)}, {
        **bufs, "_KisekaeBodyPositions": inner_pos, "_KisekaeBodyNormals": inner_nrm, "_KisekaeBodyTriangles": u32(tris),
        "_KisekaeBodyVertexFacePtr": u32(iptr), "_KisekaeBodyVertexFaces": u32(ifaces), "_KisekaeBodyCurvatureRW": kv})
    luni = {**uni, "_KisekaeReach": np.float32(LAYER_REACH), "_KisekaeLayerFade": np.float32(LAYER_FADE),
            "_KisekaeFinishStep": np.float32(-1.0)}
    common = {**bufs, "_KisekaeBodyPositions": inner_pos, "_KisekaeBodyNormals": inner_nrm,
              "_KisekaeBodyCurvature": kv, "_KisekaeSurfaceCorners": u32(layer["bake"]["corners"]),
              "_KisekaeBodyDepthBound": buf(np.full(ni, 1e30, np.float32).tobytes()),  # a layer: no bound
              "_KisekaeSurfaceChord": buf(np.zeros(n, np.float32).tobytes()),
              "_KisekaeSampleCorners": u32(layer["bake"]["sample_corners"])}
    steps = [buf(reserve=n * 16), buf(reserve=n * 16)]
    kernels["KisekaeLayerPush"].run(n, luni, {**common, "_KisekaeDisplacementIn": disp[src_i],
                                              "_KisekaeDisplacementOut": steps[0]}, textures)
    a = 0
    for _ in range(LAYER_SMOOTH):
        kernels["KisekaeSmooth"].run(n, luni, {**bufs, "_KisekaeDisplacementIn": steps[a],
                                               "_KisekaeDisplacementOut": steps[1 - a]})
        a = 1 - a
    kernels["KisekaeLayerPushAgain"].run(n, luni, {**common, "_KisekaeLift": steps[a],
                                                   "_KisekaeDisplacementIn": disp[src_i],
                                                   "_KisekaeDisplacementOut": disp[1 - src_i]}, textures)
    src_i = 1 - src_i
    for _ in range(LAYER_LIFT_PASSES if ns else 0):
        kernels["KisekaeSampleLifts"].run(ns, luni, {**common, "_KisekaeDisplacementIn": disp[src_i],
                                                     "_KisekaeSampleLiftRW": sample_lift}, textures)
        kernels["KisekaeEdgeLifts"].run(n, luni, {**bufs, "_KisekaeSampleLift": sample_lift,
                                                  "_KisekaeDisplacementOut": lifts[0]})
        kernels["KisekaeLiftApply"].run(n, luni, {**common, "_KisekaeLift": lifts[0],
                                                  "_KisekaeDisplacementIn": disp[src_i],
                                                  "_KisekaeDisplacementOut": disp[1 - src_i]}, textures)
        src_i = 1 - src_i
    return src_i


def _garment_faces(mesh):
    """The garment's faces and the faces around each welded vertex, as the unflip reads them."""
    return mesh.faces.astype(np.int64), vertex_faces(mesh.faces, mesh.n_vertices, mesh.weld)


def _unity_contact(step, names, world_matrices) -> dict:
    """``unity_frame``'s ``contact``: the joint-plane step's tables posed by the world skinning matrices, as
    KisekaeSurfacePush.cs uploads them (the constant arrays, and the per-vertex joints, sides and rest positions)."""
    from kisekae.shaders import contact_bake as cb

    tables = cb.contact_from_bake(cb.contact_bake(step, names), names)
    centre, normal, reach = cb.posed_tables(tables, world_matrices)
    return {"_KisekaeJointCentre": np.c_[centre, reach], "_KisekaeJointNormal": np.c_[normal, tables["radius"]],
            "_KisekaeJointRest": np.c_[tables["rest_centre"], tables["flesh"]],
            "_KisekaeJointRestDir": np.c_[tables["rest_dir"], np.zeros(len(reach))],
            "_KisekaeContact": [tables["gap"], tables["band"], tables["ring_factor"], tables["rest_slack"]],
            "joints": tables["joints"], "sides": tables["sides"],
            "rest": np.c_[tables["rest"], np.zeros(len(tables["rest"]))]}


def _frame_of(T):
    return lambda p: np.asarray(p, np.float64) @ T[:3, :3].T + T[:3, 3]


@pytest.mark.skipif(not _has_surface_core(), reason="the core has no kisekae_surface.hlsl yet")
def test_unity_kernels_on_llvmpipe_reproduce_the_runtime(baked, tmp_path):
    """The nine kernels, bound and dispatched as KisekaeSurfacePush.cs does (ping-pongs included), with the body
    contact, a renderer-to-world transform per mesh and Unity's 40-byte skinned vertices, equal kisekae's runtime
    (surface_runtime on the contact body with the chords runtime_pose passes, crouch) in world space; the body and
    garment normals equal kisekae.geom.normals', the body curvature kisekae.fit.surface.body_curvature."""
    av, cand, ring, doc, head, binary, lift = baked
    bake = _load(head, av)
    mesh, faces = av.part("tights").mesh, av.body.mesh.faces
    m = named_pose(av.skeleton, "crouch").skinning_matrices(av.skeleton)
    T = np.eye(4)  # kisekae's space -> world: turned about up and moved
    T[:3, :3] = [[np.cos(0.7), 0.0, np.sin(0.7)], [0.0, 1.0, 0.0], [-np.sin(0.7), 0.0, np.cos(0.7)]]
    T[:3, 3] = [0.3, -0.1, 2.0]
    G = np.eye(4)  # the garment's renderer sits elsewhere: its skinned vertices are in its own space
    G[:3, 3] = [-1.0, 0.5, 0.25]
    world = _frame_of(T)
    skinned_garment = av.part("tights").posed(m).astype(np.float64)
    contact = _unity_contact(av.body.deform, av.skeleton.names, np.einsum("ij,bjk->bik", T, m))
    params = params_for("tights", None)
    to_garment_local = _frame_of(np.linalg.inv(G) @ T)
    pos, nrm, body_pos, body_nrm, body_kv = unity_frame(tmp_path, av.body.skinned(m),
                                                        to_garment_local(skinned_garment), T, G, bake, faces,
                                                        mesh.faces, params, contact)
    body = av.body.posed(m).astype(np.float64)
    assert np.abs(body_pos[:, :3] - world(body)).max() < 1e-5
    normals = vertex_normals(body, faces).astype(np.float64)
    assert np.abs(body_nrm[:, :3] - normals @ T[:3, :3].T).max() < 2e-3  # unit normals of mm-sized triangles in float32
    kv = body_curvature(body, normals, faces)
    # relative to max(kv, 1/m): the float32 normals of mm-sized triangles above (1.3e-3 measured)
    assert (np.abs(body_kv - kv) / np.maximum(kv, 1.0)).max() < 5e-3
    ref, push = surface_runtime(skinned_garment, cand, ring, body, normals, faces, params, numpy=True,
                                chord=garment_chords(mesh), lift=lift, faces=_garment_faces(mesh),
                                shortest=bake["shortest"])
    assert push.max() > 0.002
    # float32 against float64: the edge lift and unflip add choices (a sample's nearest candidate, a face's turn
    # weight) where the last bits decide; as in the carried frames below, every other vertex within 1e-5 m
    err = np.linalg.norm(pos[:, :3] - world(ref), axis=1)
    assert (err > 1e-5).sum() <= 0.002 * len(err) and err.max() < 5e-4, np.sort(err)[-5:]
    assert np.abs(pos[:, 3] - push)[err <= 1e-5].max() < 1e-5
    garment_normals = vertex_normals(ref, mesh.faces, mesh.weld).astype(np.float64) @ T[:3, :3].T
    assert np.abs(nrm[:, :3] - garment_normals).max() < 2e-3


@pytest.mark.skipif(not _has_surface_core(), reason="the core has no kisekae_surface.hlsl yet")
def test_unity_kernels_guard_the_body_normals(baked, tmp_path):
    """KisekaeSurfacePush.normalGuard: the renderer's skinned normals in the skinned vertices (slot at byte 12), the
    body turned and moved into world space; KisekaeBodyNormals equals kisekae.geom.guarded_normals against
    kisekae.fit.fix.skinned_normals (the runtime's body_normals), and the frame equals surface_runtime with those
    normals. The deep squat, whose belly fold the guard is for (docs/fit.md)."""
    from pathlib import Path

    from kisekae.avatar.poses import load_pose_file
    from kisekae.fit.fix import skinned_normals
    from kisekae.geom.guarded_normals import guarded_vertex_normals

    av, cand, ring, doc, head, binary, lift = baked
    bake = _load(head, av)
    mesh, faces = av.part("tights").mesh, av.body.mesh.faces
    pose = load_pose_file(av.skeleton, Path(__file__).parents[1] / "benchmarks" / "poses" / "deep_squat.json")
    m = pose.skinning_matrices(av.skeleton)
    T = np.eye(4)
    T[:3, :3] = [[np.cos(0.7), 0.0, np.sin(0.7)], [0.0, 1.0, 0.0], [-np.sin(0.7), 0.0, np.cos(0.7)]]
    T[:3, 3] = [0.3, -0.1, 2.0]
    world = _frame_of(T)
    x = av.part("tights").posed(m).astype(np.float64)
    contact = _unity_contact(av.body.deform, av.skeleton.names, np.einsum("ij,bjk->bik", T, m))
    params = params_for("tights", None)
    reference = skinned_normals(av.body, m)
    pos, _, _, body_nrm, _ = unity_frame(tmp_path, av.body.skinned(m), world(x), T, np.eye(4), bake, faces,
                                         mesh.faces, params, contact, guard=reference)
    body = av.body.posed(m).astype(np.float64)
    normals = guarded_vertex_normals(body, faces, reference)
    plain = vertex_normals(body, faces).astype(np.float64)
    far = np.flatnonzero(np.einsum("ij,ij->i", normals, plain) < 0.0)  # where the guard turns a normal around
    assert len(far) >= 5  # the belly fold (4114-4121) among them
    err = np.linalg.norm(body_nrm[:, :3] - normals @ T[:3, :3].T, axis=1)
    assert err.max() < 2e-3 and err[far].max() < 2e-3  # float32 normals of mm-sized triangles, as above
    ref = surface_runtime(x, cand, ring, body, normals, faces, params, numpy=True, chord=garment_chords(mesh),
                          lift=lift, faces=_garment_faces(mesh), shortest=bake["shortest"])[0]
    loose = surface_runtime(x, cand, ring, body, plain, faces, params, numpy=True, chord=garment_chords(mesh),
                            lift=lift, faces=_garment_faces(mesh), shortest=bake["shortest"])[0]
    assert np.abs(ref - loose).max() > 1e-3  # the guard matters for this frame
    err = np.linalg.norm(pos[:, :3] - world(ref), axis=1)
    assert (err > 1e-5).sum() <= 0.002 * len(err) and err.max() < 5e-4, np.sort(err)[-5:]


def _unity_part_frame(baked, tmp_path, k):
    """``unity_frame`` with the part contact (read back from its bake) in range-of-motion pose ``k`` (seed
    conformance.PART_SEED), the body turned and moved 8 m into world space: ``(frame outputs, parts dict, world map,
    avatar with the part contact, skinning matrices, fields, settings, garment skinned)``."""
    from kisekae.avatar.part_contact import inner_deform
    from kisekae.avatar.poses import range_of_motion_poses
    from kisekae.shaders import part_bake as pb
    from kisekae.shaders.conformance import PART_SEED

    av, cand, ring, doc, head, binary, lift = baked
    pc = av.with_part_contact()
    names = av.skeleton.names
    fields, settings = pb.part_from_bake(*pb.part_bake(pc.body.deform, names), names)
    m = range_of_motion_poses(av.skeleton, k + 1, seed=PART_SEED)[k].skinning_matrices(av.skeleton)
    T = np.eye(4)
    T[:3, :3] = [[np.cos(-1.1), 0.0, np.sin(-1.1)], [0.0, 1.0, 0.0], [-np.sin(-1.1), 0.0, np.cos(-1.1)]]
    T[:3, 3] = [-4.0, 0.2, 7.5]
    world = _frame_of(T)
    wm = np.einsum("ij,bjk->bik", T, m)
    x = av.part("tights").posed(m).astype(np.float64)
    parts = _unity_parts(fields, settings, wm)
    out = unity_frame(tmp_path, av.body.skinned(m), world(x), T, np.eye(4), _load(head, av), av.body.mesh.faces,
                      av.part("tights").mesh.faces, params_for("tights", None),
                      _unity_contact(inner_deform(pc.body.deform), names, wm), parts=parts)
    return out, parts, world, pc, m, fields, settings, x


@pytest.mark.skipif(not _has_surface_core(), reason="the core has no kisekae_surface.hlsl yet")
def test_unity_kernels_run_the_part_contact(baked, tmp_path):
    """KisekaeSurfacePush.parts (KisekaeBodyParts.Record): the depths with InterlockedMax, the fades in one group, the
    two steps and the body's smoothing passes, the flip guard's passes and the apply, on the body read back from its
    bake, turned and moved into world space, equal kisekae's part-contact body (Avatar.with_part_contact) within
    1e-5 m, in a held-out pose whose pairs fade (conformance.PART_POSES' rom_27); the fades equal pair_fade, the
    depths are cleared for the next frame, the body follow's input is the prepared body less plain skinning, and the
    garment's frame equals surface_runtime on that body."""
    from kisekae.avatar.part_contact import live_parts, pair_depths_numpy, pair_fade

    av, cand, ring, doc, head, binary, lift = baked
    (pos, _, body_pos, _, _), parts, world, pc, m, fields, settings, x = _unity_part_frame(baked, tmp_path, 27)
    mesh, faces = av.part("tights").mesh, av.body.mesh.faces
    planes = av.body.posed(m).astype(np.float64)
    body = pc.body.posed(m).astype(np.float64)
    assert np.abs(body - planes).max() > 0.01  # the part contact moves this pose by more than a centimetre
    err = np.linalg.norm(body_pos[:, :3] - world(body), axis=1)
    assert err.max() < 1e-5, np.sort(err)[-5:]
    fade = pair_fade(pair_depths_numpy(planes, fields, m), settings["deep"], live_parts(fields, m))
    n_parts = fields.n_parts
    assert 0.0 < fade.min() < 0.9  # pairs that fade in part
    # a fade is 2 - depth / deep: 1e-5 m of depth (float32 world positions 8 m from the origin) is 1e-5 / deep of fade
    assert np.abs(parts["fade_out"][:n_parts, :n_parts] - fade).max() < 1e-5 / settings["deep"]
    assert not parts["depth_after"].any()  # cleared for the next frame
    # what the body follow reads: the prepared body (planes and parts) less plain skinning
    beyond = parts["beyond_out"][:, :3] - (world(body) - world(av.body.skinned(m).astype(np.float64)))
    assert np.abs(beyond).max() < 1e-5
    normals = vertex_normals(body, faces).astype(np.float64)
    ref = surface_runtime(x, cand, ring, body, normals, faces, params_for("tights", None), numpy=True,
                          chord=garment_chords(mesh), lift=lift, faces=_garment_faces(mesh),
                          shortest=_load(head, av)["shortest"])[0]
    err = np.linalg.norm(pos[:, :3] - world(ref), axis=1)
    assert (err > 1e-5).sum() <= 0.002 * len(err) and err.max() < 5e-4, np.sort(err)[-5:]


@pytest.mark.skipif(not _has_surface_core(), reason="the core has no kisekae_surface.hlsl yet")
def test_unity_kernels_guard_the_part_contact(baked, tmp_path):
    """KisekaePartGuards and KisekaePartApply: in the held-out pose whose part contact turns body triangles over
    without the guard (conformance.GUARD_POSE), the kernels give kisekae's guarded body within 1e-5 m, and the guard
    moved vertices there by more than a millimetre."""
    from dataclasses import replace

    from kisekae.avatar.part_contact import part_contact
    from kisekae.qa.selfcontact import flipped_faces
    from kisekae.shaders.conformance import GUARD_POSE

    av = baked[0]
    (_, _, body_pos, _, _), parts, world, pc, m, fields, _, _ = _unity_part_frame(baked, tmp_path, GUARD_POSE)
    planes = av.body.posed(m).astype(np.float64)
    body = pc.body.posed(m).astype(np.float64)
    unguarded = part_contact(planes, replace(fields, faces=None, vertex_faces=None), m)
    faces = np.asarray(av.body.mesh.faces)
    assert flipped_faces(unguarded, planes, faces) > 0 and flipped_faces(body, planes, faces) == 0
    assert np.abs(unguarded - body).max() > 1e-3
    err = np.linalg.norm(body_pos[:, :3] - world(body), axis=1)
    assert err.max() < 1e-5, np.sort(err)[-5:]


def test_unity_parts_rows_read_a_mirrored_mesh_in_the_bakes_space():
    """KisekaeBodyParts.mirrorX: with the renderer's rest space the bake's mirrored in X (S), its skinning matrix M maps
    S y to world; the rows S inverse(M) that ``_unity_parts`` and the component upload take a world point back to the
    bake's y, and carry the bake's gradient g to the world gradient of the field y -> f(S inverse(M) p)."""
    from kisekae.avatar.part_contact import PartFields

    rng = np.random.default_rng(4)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    M = np.eye(4)
    M[:3, :3], M[:3, 3] = 1.3 * q, rng.normal(size=3)
    S = np.diag([-1.0, 1.0, 1.0, 1.0])
    fields = PartFields(grid=np.zeros((8, 4)), start=np.array([0, 8]), lo=np.zeros((1, 3)), dims=np.full((1, 3), 2),
                        bone=np.array([0]), cell=0.01, rest=np.zeros((1, 3)), part=np.array([0]),
                        own_bone=np.array([0]), skip=np.array([1], np.uint64),
                        ring=(np.array([0, 0]), np.zeros(0, np.int64)), reach=np.array([0.01]))
    rows = _unity_parts(fields, {"passes": 8, "gap": 0.004, "band": 0.01, "deep": 0.02}, M[None], mirror_x=True)
    inv = rows["inverse"]
    y = rng.normal(size=3)
    p = (M @ S @ np.r_[y, 1.0])[:3]
    np.testing.assert_allclose(inv[:3] @ np.r_[p, 1.0], y, atol=1e-12)
    assert inv[3, 0] == 1.0
    g = rng.normal(size=3)  # the field f(y) = g . y, read in world space: f(S inverse(M) p)
    eps = 1e-6
    numeric = [(g @ (inv[:3] @ np.r_[p + eps * e, 1.0]) - g @ (inv[:3] @ np.r_[p - eps * e, 1.0])) / (2 * eps)
               for e in np.eye(3)]
    np.testing.assert_allclose(inv[:3, :3].T @ g, numeric, atol=1e-8)  # KisekaePartGradientToPosed's sum


def _plain_crouch(avatar, baked):
    """The plain-skinned crouch the next two tests run the kernels on: (bake, garment mesh, body faces, body, skinned
    garment, params, body normals, surface_runtime's keywords). The bake's candidates serve any pose of the meshes."""
    av, cand, ring, doc, head, binary, lift = baked
    mesh, faces = avatar.part("tights").mesh, avatar.body.mesh.faces
    m = named_pose(avatar.skeleton, "crouch").skinning_matrices(avatar.skeleton)
    body = avatar.body.posed(m).astype(np.float64)
    x = avatar.part("tights").posed(m).astype(np.float64)
    normals = vertex_normals(body, faces).astype(np.float64)
    bake = _load(head, av)
    kw = dict(numpy=True, chord=garment_chords(mesh), lift=lift, faces=_garment_faces(mesh), shortest=bake["shortest"])
    return bake, mesh, faces, body, x, params_for("tights", None), normals, (cand, ring), kw


@pytest.mark.skipif(not _has_surface_core(), reason="the core has no kisekae_surface.hlsl yet")
def test_unity_kernels_read_the_mask_and_run_without_contact(avatar, baked, tmp_path):
    """Plain skinning (no KisekaeBodyContact) and a tightness/softness mask: the kernels equal surface_runtime with
    those masks."""
    bake, mesh, faces, body, x, params, normals, (cand, ring), kw = _plain_crouch(avatar, baked)
    pos = unity_frame(tmp_path, body, x, np.eye(4), np.eye(4), bake, faces, mesh.faces, params, mask=(0.75, 0.5))[0]
    ref = surface_runtime(x, cand, ring, body, normals, faces, params, tightness=0.75, softness=0.5, **kw)[0]
    loose = surface_runtime(x, cand, ring, body, normals, faces, params, numpy=True, chord=kw["chord"])[0]
    assert np.abs(ref - loose).max() > 1e-4  # the masks matter here
    # float32 against float64, as above: the edge lift's and the stretch limit's choices where the last bits decide
    err = np.linalg.norm(pos[:, :3] - ref, axis=1)
    assert (err > 1e-5).sum() <= 0.002 * len(err) and err.max() < 5e-4, np.sort(err)[-5:]


@pytest.mark.skipif(not _has_surface_core(), reason="the core has no kisekae_surface.hlsl yet")
def test_unity_kernels_cap_the_finish(avatar, baked, tmp_path):
    """With _KisekaeFinishStep = 2 mm (KisekaeSurfacePush.finishStep) the kernels equal surface_runtime's
    finish_step: the lift rounds and unflips shortened to each vertex's budget, which KisekaeSurfacePushFirst resets."""
    bake, mesh, faces, body, x, params, normals, (cand, ring), kw = _plain_crouch(avatar, baked)
    ref = surface_runtime(x, cand, ring, body, normals, faces, params, finish_step=0.002, **kw)[0]
    loose = surface_runtime(x, cand, ring, body, normals, faces, params, **kw)[0]
    assert np.abs(ref - loose).max() > 1e-3  # the cap matters here
    pos = unity_frame(tmp_path, body, x, np.eye(4), np.eye(4), bake, faces, mesh.faces, params, finish_step=0.002)[0]
    err = np.linalg.norm(pos[:, :3] - ref, axis=1)
    assert (err > 1e-5).sum() <= 0.002 * len(err) and err.max() < 5e-4, np.sort(err)[-5:]


@pytest.mark.skipif(not _has_surface_core(), reason="the core has no kisekae_surface.hlsl yet")
def test_unity_kernels_carry_the_correction_from_frame_to_frame(avatar, baked, tmp_path):
    """Two frames of the carried push (the crouch, then the sit): the kernels start the second frame from 0.9 of the
    correction the first one stored, and equal surface_runtime started at kisekae.fit.carry.carry_start; the buffer
    then holds each frame's capped correction."""
    from kisekae.fit.carry import KEEP, carry_start

    av, cand, ring, doc, head, binary, lift = baked
    bake = _load(head, av)
    mesh, faces = av.part("tights").mesh, av.body.mesh.faces
    params = params_for("tights", None)
    chord = garment_chords(mesh)
    previous = np.zeros((mesh.n_vertices, 3))
    for pose in ("crouch", "sit"):
        m = named_pose(av.skeleton, pose).skinning_matrices(av.skeleton)
        body = av.body.posed(m).astype(np.float64)
        x = av.part("tights").posed(m).astype(np.float64)
        normals = vertex_normals(body, faces).astype(np.float64)
        ref, _ = surface_runtime(x, cand, ring, body, normals, faces, params, numpy=True, chord=chord,
                                 start=carry_start(x, previous, KEEP), lift=lift, faces=_garment_faces(mesh),
                                 shortest=bake["shortest"])
        if pose == "crouch":  # the floor moves the tights here (not a vacuous comparison)
            free = surface_runtime(x, cand, ring, body, normals, faces, params, numpy=True, chord=chord,
                                   start=carry_start(x, previous, KEEP), lift=lift, faces=_garment_faces(mesh))[0]
            assert np.abs(free - ref).max() > 1e-3
        (tmp_path / pose).mkdir()
        out = unity_frame(tmp_path / pose, body, x, np.eye(4), np.eye(4), bake, faces, mesh.faces, params,
                          carry=(previous, KEEP))
        # float32 against float64: a few vertices sit on a tie of two candidates or at the stretch limit's threshold,
        # where the last bits decide (the stateless frame shows the same); every other vertex within 1e-5 m
        err = np.linalg.norm(out[0][:, :3] - ref, axis=1)
        assert (err > 1e-5).sum() <= 0.002 * len(err) and err.max() < 5e-4, (pose, np.sort(err)[-5:])
        # the buffer holds exactly what the finish wrote: the capped displacement of this frame
        np.testing.assert_allclose(out[-1][:, :3], out[0][:, :3] - x.astype(np.float32), atol=1e-6)
        previous = out[-1][:, :3].astype(np.float64)
    stateless = surface_runtime(x, cand, ring, body, normals, faces, params, numpy=True, chord=chord)[0]
    assert np.abs(stateless - ref).max() > 1e-3  # the memory matters in the second frame


@pytest.mark.skipif(not _has_surface_core(), reason="the core has no kisekae_surface.hlsl yet")
def test_unity_kernels_push_the_skirt_out_of_the_tights(baked, tmp_path):
    """KisekaeSurfacePush.beneath: the skirt's frame with the layer stage (RecordLayer's dispatches, the tights'
    kernel output bound as the body, the skirt-over-tights bake) equals surface_runtime with
    kisekae.fit.layer_push.layer_push between its stretch limit and its edge lift, fed the same tights (stand, where
    the skinned skirt lies under the tights at the waist)."""
    from kisekae.fit.layer_push import bake_layer_candidates, layer_push
    from kisekae.fit.layers import LayerSurface, layer_stats

    av, tcand, tring, tdoc, thead, tbinary, tlift = baked
    tights, skirt, faces = av.part("tights").mesh, av.part("skirt").mesh, av.body.mesh.faces
    nb = av.body.mesh.n_vertices
    cand = bake_surface_candidates(av, "skirt", n_poses=40)
    ring = one_ring(skirt.n_vertices, skirt.edges, skirt.weld)
    samples = garment_edge_samples(skirt)
    table = vertex_samples(samples, skirt.weld)
    lift = (samples, bake_sample_candidates(av, "skirt", samples, n_poses=40), table)
    chord = garment_chords(skirt)
    bake = sb.load_surface_bake(sb.surface_bake(cand, ring, faces, "skirt", chord=chord, n_body_vertices=nb,
                                                weld=skirt.weld, lift=lift), skirt.n_vertices, nb)
    lcand = bake_layer_candidates(av, "skirt", "tights", n_poses=40)
    llift = (samples, bake_layer_candidates(av, "skirt", "tights", n_poses=40, points_of=samples.points), table)
    lbake = sb.load_surface_bake(sb.surface_bake(lcand, ring, tights.faces, "skirt", chord=chord,
                                                 n_body_vertices=tights.n_vertices, weld=skirt.weld, lift=llift),
                                 skirt.n_vertices, tights.n_vertices)
    m = named_pose(av.skeleton, "stand").skinning_matrices(av.skeleton)
    body = av.body.posed(m).astype(np.float64)
    normals = vertex_normals(body, faces).astype(np.float64)
    xt = av.part("tights").posed(m).astype(np.float64)
    xs = av.part("skirt").posed(m).astype(np.float64)
    (tmp_path / "tights").mkdir()
    (tmp_path / "skirt").mkdir()
    tpos, tnrm = unity_frame(tmp_path / "tights", body, xt, np.eye(4), np.eye(4), _load(thead, av), faces,
                             tights.faces, params_for("tights", None))[:2]
    inner = tpos[:, :3].astype(np.float64)
    params = params_for("skirt", None)
    layer = {"positions": inner, "normals": tnrm[:, :3], "triangles": tights.faces, "bake": lbake}
    pos = unity_frame(tmp_path / "skirt", body, xs, np.eye(4), np.eye(4), bake, faces, skirt.faces, params,
                      layer=layer)[0]

    def between(p):
        return layer_push(p, lcand, ring, inner, tights.faces, params, inner_weld=tights.weld, lift=llift,
                          numpy=True)[0]

    kw = dict(numpy=True, chord=chord, lift=lift, faces=_garment_faces(skirt))
    ref = surface_runtime(xs, cand, ring, body, normals, faces, params, between=between, **kw)[0]
    alone = surface_runtime(xs, cand, ring, body, normals, faces, params, **kw)[0]
    under = LayerSurface(inner, tights.faces)
    before, after = (layer_stats(p, skirt.edges, [under])["under_lower_layers"] for p in (alone, ref))
    assert before > 30 and after < before // 4, (before, after)  # the layer push matters here
    err = np.linalg.norm(pos[:, :3] - ref, axis=1)
    assert (err > 1e-5).sum() <= 0.01 * len(err) and err.max() < 5e-4, np.sort(err)[-5:]


@pytest.mark.skipif(not _has_surface_core(), reason="the core has no kisekae_surface.hlsl yet")
def test_unity_kernels_keep_a_suits_sheets_in_order(tmp_path):
    """KisekaeSurfacePush.selfLayers: the casual suit's frame in stand (RecordSelf's dispatches on a bake with self
    layers) equals surface_runtime with kisekae.fit.self_layers' stage between its stretch limit and its edge lift."""
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.fit.runtime import garment_self_layers
    from kisekae.io.mhclo import add_garments

    av = load_builtin_avatar()
    name = add_garments(av, [str(Path(__file__).resolve().parents[1] / "src" / "kisekae" / "data" / "samples"
                                 / "female_casualsuit01.mhclo")])[0]
    mesh, faces, nb = av.part(name).mesh, av.body.mesh.faces, av.body.mesh.n_vertices
    cand = bake_surface_candidates(av, name, n_poses=8)
    ring = one_ring(mesh.n_vertices, mesh.edges, mesh.weld)
    layers = garment_self_layers(av, name)
    chord = garment_chords(mesh)
    samples = garment_edge_samples(mesh)
    lift = (samples, bake_sample_candidates(av, name, samples, n_poses=8), vertex_samples(samples, mesh.weld))
    bake = sb.load_surface_bake(sb.surface_bake(cand, ring, faces, name, chord=chord, n_body_vertices=nb,
                                                weld=mesh.weld, lift=lift, self_layers=(layers, mesh.faces)),
                                mesh.n_vertices, nb)
    assert bake["self_side"].any(axis=1).sum() == len(layers.vertices)
    m = named_pose(av.skeleton, "stand").skinning_matrices(av.skeleton)
    body = av.body.posed(m).astype(np.float64)
    normals = vertex_normals(body, faces).astype(np.float64)
    x = av.part(name).posed(m).astype(np.float64)
    params = params_for(name, None)
    pos = unity_frame(tmp_path, body, x, np.eye(4), np.eye(4), bake, faces, mesh.faces, params)[0]
    kw = dict(numpy=True, chord=chord, lift=lift, faces=_garment_faces(mesh))
    ref = surface_runtime(x, cand, ring, body, normals, faces, params, self_layers=(layers, mesh.faces), **kw)[0]
    alone = surface_runtime(x, cand, ring, body, normals, faces, params, **kw)[0]
    assert np.abs(ref - alone).max() > 0.001  # the stage moves the hem here
    err = np.linalg.norm(pos[:, :3] - ref, axis=1)
    assert (err > 1e-5).sum() <= 0.01 * len(err) and err.max() < 5e-4, np.sort(err)[-5:]


@pytest.mark.skipif(not _has_surface_core(), reason="the core has no kisekae_surface.hlsl yet")
def test_unity_kernels_start_from_the_garment_correctives(avatar, baked, tmp_path):
    """KisekaeSurfacePush.garmentCorrectives: two carried frames (crouch, then sit) with the packaged tights
    correctives equal kisekae's runtime (kisekae.fit.runtime._surface_step): the first push starts from the corrected
    skinning plus 0.9 of last frame's correction beyond it, while the smoothing, stretch limit and cap measure from
    plain skinning; the carried buffer holds the correction beyond the corrected skinning."""
    from kisekae.avatar.correctives import load_correctives
    from kisekae.fit.carry import KEEP, carry_start
    from kisekae.fit.garment_correctives import corrected_skin, packaged_garment_path

    av, cand, ring, doc, head, binary, lift = baked
    c = load_correctives(str(packaged_garment_path("game_engine", "tights")))
    bake, mesh, faces = _load(head, av), avatar.part("tights").mesh, avatar.body.mesh.faces
    params = params_for("tights", None)
    previous = np.zeros((mesh.n_vertices, 3))  # beyond the corrected skinning
    for pose in ("crouch", "sit"):
        m = named_pose(avatar.skeleton, pose).skinning_matrices(avatar.skeleton)
        body = avatar.body.posed(m).astype(np.float64)
        x = avatar.part("tights").posed(m).astype(np.float64)
        xc = corrected_skin(avatar, "tights", c, m, x)
        assert np.linalg.norm(xc - x, axis=1).max() > 5e-3  # the correctives move the start here
        normals = vertex_normals(body, faces).astype(np.float64)
        ref, _ = surface_runtime(x, cand, ring, body, normals, faces, params, numpy=True, chord=garment_chords(mesh),
                                 start=carry_start(xc, previous, KEEP), lift=lift, faces=_garment_faces(mesh),
                                 shortest=bake["shortest"])
        (tmp_path / pose).mkdir()
        out = unity_frame(tmp_path / pose, body, x, np.eye(4), np.eye(4), bake, faces, mesh.faces, params,
                          carry=(previous, KEEP), correctives={"c": c, "features": c.features(avatar.skeleton, m),
                                                               "skin": avatar.part("tights").skin, "skin_matrices": m})
        err = np.linalg.norm(out[0][:, :3] - ref, axis=1)
        assert (err > 1e-5).sum() <= 0.002 * len(err) and err.max() < 5e-4, (pose, np.sort(err)[-5:])
        np.testing.assert_allclose(out[-1][:, :3], out[0][:, :3] - xc.astype(np.float32), atol=2e-6)
        previous = out[-1][:, :3].astype(np.float64)
    plain = surface_runtime(x, cand, ring, body, normals, faces, params, numpy=True, chord=garment_chords(mesh),
                            start=carry_start(x, previous, KEEP))[0]
    assert np.abs(plain - ref).max() > 1e-3  # the correctives matter


@pytest.mark.skipif(not _has_surface_core(), reason="the core has no kisekae_surface.hlsl yet")
def test_unity_kernels_follow_the_body_beyond_its_skinning(avatar, baked, tmp_path):
    """KisekaeSurfacePush.bodyFollow with bodyCorrectives on the default body (packaged correctives as blend shapes,
    then the joint planes), in a world frame turned and moved from kisekae's: the renderer's skinning holds the blend
    shapes, KisekaeBodyOffsets recovers what they add, and the push starts from the skinned garment plus the smoothed
    body follow, as kisekae's runtime (kisekae.fit.runtime._surface_step with body_follow=True)."""
    from kisekae.avatar.contact import GAP, apply_contact, joint_contact_of
    from kisekae.avatar.skinning import lbs
    from kisekae.fit.body_follow import body_follow
    from kisekae.fit.surface import smooth_push

    av, cand, ring, doc, head, binary, lift = baked
    # correctives, then the planes: kisekae check's default body up to its last step (Unity's glue has no part contact)
    body_av = apply_contact(avatar, GAP, part_contact=False)
    deform = body_av.body.deform
    bake, mesh, faces = _load(head, av), avatar.part("tights").mesh, avatar.body.mesh.faces
    m = named_pose(avatar.skeleton, "crouch").skinning_matrices(avatar.skeleton)
    T = np.eye(4)
    T[:3, :3] = [[np.cos(0.7), 0.0, np.sin(0.7)], [0.0, 1.0, 0.0], [-np.sin(0.7), 0.0, np.cos(0.7)]]
    T[:3, 3] = [0.3, -0.1, 2.0]
    world = _frame_of(T)
    skin = avatar.body.skin
    # what Unity's skinning gives with the corrective blend shapes: plain skinning of the rest mesh plus the offsets
    with_shapes = lbs(avatar.body.mesh.vertices + deform.rest_offsets(m), skin.indices, skin.weights, m)
    contact = _unity_contact(joint_contact_of(deform), avatar.skeleton.names, np.einsum("ij,bjk->bik", T, m))
    c = deform.correctives
    body_bake = {"c": c, "features": c.features(avatar.skeleton, m), "skin": skin,
                 "skin_matrices": np.einsum("ij,bjk->bik", T, m)}
    params = params_for("tights", None)
    x = avatar.part("tights").posed(m).astype(np.float64)
    pos, _, body_pos, body_nrm, _ = unity_frame(tmp_path, with_shapes, x, T, T, bake, faces, mesh.faces, params,
                                                contact, follow={"body": body_bake})
    body = body_av.body.posed(m).astype(np.float64)
    assert np.abs(body_pos[:, :3] - world(body)).max() < 2e-5
    normals = vertex_normals(body, faces).astype(np.float64)
    f = body_follow(*garment_follow(body_av, "tights"), body, body_av.body.skinned(m), normals)
    assert np.linalg.norm(f, axis=1).max() > 0.005  # the body grows out of the skinned tights here (9.5 mm)
    start = x + smooth_push(f, ring, bake["follow_passes"])
    ref, push = surface_runtime(x, cand, ring, body, normals, faces, params, numpy=True, chord=garment_chords(mesh),
                                start=start, lift=lift, faces=_garment_faces(mesh), shortest=bake["shortest"])
    err = np.linalg.norm(pos[:, :3] - world(ref), axis=1)
    assert (err > 1e-5).sum() <= 0.002 * len(err) and err.max() < 5e-4, np.sort(err)[-5:]
    # without KisekaeBodyOffsets (bodyCorrectives unset) the follow sees the planes only: another start
    (tmp_path / "planes").mkdir()
    plain = unity_frame(tmp_path / "planes", with_shapes, x, T, T, bake, faces, mesh.faces, params, contact,
                        follow={"body": None})[0]
    assert np.linalg.norm(plain[:, :3] - pos[:, :3], axis=1).max() > 1e-3

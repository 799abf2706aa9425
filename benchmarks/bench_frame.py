#!/usr/bin/env python3
"""One frame of the per-frame path on one core: 50,000 garment vertices on the built-in body.

The garment is the built-in tights and skirt, each triangle split into four (midpoint subdivision,
skin weights averaged at the new vertices, top 4 kept) until there are at least 50,000 vertices, cut to
the first 50,000 (faces whose corners all survive). Per frame, in the order an engine runs them, all in
Numba on one core except the tiny rig posing:

1. skin the body (13,380 vertices) and the garment (:func:`kisekae.avatar.skinning.lbs`);
2. pose the fitted capsule rig (95 capsules, NumPy);
3. capsule push-out (:meth:`kisekae.fit.pushout.CapsulePushPlan.run`, positions only);
4. posed body normals (:func:`kisekae.geom.normals.vertex_normals`), then the skin-bound clearance
   with the maxPush cap (:func:`kisekae.fit.bound.push_out_bound_numba`);
5. garment normals (:func:`kisekae.geom.normals.vertex_normals`).

The surface path (the push of ``kisekae check --runtime``), measured in the same run on the same
garment: skin the body, the body contact (:func:`kisekae.avatar.contact.contact_planes`), body normals,
skin the garment, the surface push (:func:`kisekae.fit.surface.surface_push`), ``SMOOTH_PASSES`` one-ring
passes (:func:`kisekae.fit.surface.smooth_push`), the push again, ``LIMIT_PASSES`` stretch-limit passes
(:func:`kisekae.fit.surface.stretch_limit`, each with the push of the vertices it moved) and the cap, garment
normals; then the carried frame: the same, started from the previous frame's correction
(:func:`kisekae.fit.carry.carry_start`; ``kisekae check --runtime --no-edge-lift``), and beside it the same frame
reading only 16 candidates a vertex; then the default frame of ``kisekae check --runtime``: the carried frame ended
by the edge lift and the unflip (:mod:`kisekae.fit.edge_lift`, :mod:`kisekae.fit.unflip`), every push within the
body's depth bound (:mod:`kisekae.fit.depth_bound`) and reading guarded body normals
(:mod:`kisekae.geom.guarded_normals`, timed alone as row B), capped at
:data:`~kisekae.fit.surface.FINISH_STEP` a vertex; the
candidates are baked once before timing (``--bake-poses`` range-of-motion poses); and the garment correctives that
the default frame starts from for garments that have them (:mod:`kisekae.fit.garment_correctives`: offsets from the
features, carried by the blended skinning rotation), on the packaged tights bake spread to the dense garment (each
dense vertex takes the entries of its nearest original tights vertex; the skirt's vertices have none, as packaged),
alone and ahead of the default frame, there with the stretch limit's floor of the cloth that clings to the body
(:func:`kisekae.fit.surface.shortest_lengths` of the dense garment's rest clearance, as the runtime sets it). In the
same run: plain Numba
skinning alone, today's capsule push-out as ``kisekae check --runtime`` calls it
(:func:`kisekae.fit.bound.push_out_runtime`: a capsule plan built per call, then the NumPy skin-bound
clearance and cap), and NumPy garment normals; the frame's positions are compared with
``push_out_runtime``'s. Each row is best-of-N wall and CPU time (:func:`_timing.measure`); on a busy
machine wall time grows while CPU time does not, so both are printed. The CPU's SIMD width
(``/proc/cpuinfo`` flags), the target Numba compiles for (LLVM host CPU name and features) and the vector
registers in the compiled push-out and skinning kernels are printed first, because AVX2 and AVX-512
machines differ by up to 3x.

Run: ``.venv/bin/python benchmarks/bench_frame.py [--vertices 50000] [--poses stand,crouch] [--avx2]``.
``NUMBA_NUM_THREADS=1`` is set unless given. ``--avx2`` compiles every kernel for an AVX2 CPU (Haswell:
``NUMBA_CPU_NAME=haswell``, set before Numba loads), so an AVX-512 machine shows what the instruction set alone costs
(not a real AVX2 machine's memory and clocks); the speed gates are stated for AVX2.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
if "--avx2" in sys.argv[1:]:  # before Numba is imported: it reads the target CPU once
    os.environ["NUMBA_CPU_NAME"] = "haswell"
    os.environ["NUMBA_CPU_FEATURES"] = ""  # the named CPU's own features, not the host's (AVX-512 here)

import re  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _timing import measure, table  # noqa: E402

from kisekae.avatar.builtin import load_builtin_avatar  # noqa: E402
from kisekae.geom.normals import vertex_normals, vertex_normals_numpy  # noqa: E402
from kisekae.avatar.poses import named_pose  # noqa: E402
from kisekae.avatar.skinning import lbs, top_k_weights  # noqa: E402
from kisekae.fit.bound import bind_to_skin, push_out_bound_numba, push_out_runtime  # noqa: E402
from kisekae.fit.fitting import fit_capsules  # noqa: E402
from kisekae.fit.pushout import CapsulePushPlan, PushParams  # noqa: E402
from kisekae.fit.surface import (FINISH_STEP, LIMIT_PASSES, SMOOTH_PASSES, SurfaceCandidates,  # noqa: E402
                                 bake_surface_candidates, one_ring, shortest_lengths, smooth_push, stretch_limit, surface_push,
                                 surface_runtime)
from kisekae.fit.carry import KEEP, carry_start  # noqa: E402
from kisekae.avatar.correctives import BodyCorrectives, add_skinned_offsets  # noqa: E402
from kisekae.fit.edge_lift import LIFT_PASSES, SAMPLE_SPACING, bake_sample_candidates, vertex_samples  # noqa: E402
from kisekae.fit.body_follow import body_follow, follow_weights  # noqa: E402
from kisekae.fit.depth_bound import body_depth_bound  # noqa: E402
from kisekae.fit.runtime import FOLLOW_SMOOTH, body_normals, garment_samples  # noqa: E402
from kisekae.fit.unflip import UNFLIP_PASSES, vertex_faces  # noqa: E402

GARMENTS = ("tights", "skirt")


# ------------------------------------------------------------------------------------ machine
def simd_report() -> list:
    """Lines on the CPU's vector width and on what Numba compiles for."""
    import llvmlite.binding as ll
    import numba

    flags = set()
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
            elif line.startswith("model name") and model == "?":
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    width = "AVX-512 (512-bit)" if "avx512f" in flags else "AVX2 (256-bit)" if "avx2" in flags else \
        "SSE/AVX (128/256-bit, no AVX2)" if flags else "unknown (no /proc/cpuinfo)"
    feats = ll.get_host_cpu_features()
    on = sorted(k for k, v in feats.items() if v and re.match(r"avx|fma|sse4", k))
    name = numba.config.CPU_NAME or ll.get_host_cpu_name()
    lines = [f"CPU: {model}; widest SIMD in /proc/cpuinfo flags: {width}",
             f"Numba {numba.__version__} targets CPU {name!r}"
             f"{' (NUMBA_CPU_NAME)' if numba.config.CPU_NAME else ' (host)'}; "
             f"LLVM host features on: {' '.join(on) or 'none'}"]
    return lines


def kernel_registers() -> str:
    """Vector registers in the machine code of the push-out and skinning kernels (zmm 512, ymm 256, xmm 128 bit).

    Kernels loaded from Numba's on-disk cache cannot show their assembly, so each is compiled again here,
    uncached, with its own options and the signatures it was called with (this takes a few seconds).
    """
    import numba

    from kisekae.avatar import skinning
    from kisekae.fit import pushout

    parts = []
    for label, fn in (("push-out", pushout._plan_kernel), ("skinning", skinning._lbs_kernel)):
        opts = {k: v for k, v in fn.targetoptions.items() if k not in ("cache", "nopython")}
        fresh = numba.njit(**opts)(fn.py_func)
        for sig in fn.signatures:
            fresh.compile(sig)
        asm = "".join(fresh.inspect_asm().values())
        uses = {r: len(re.findall(rf"%{r}\d+", asm)) for r in ("zmm", "ymm", "xmm")}
        parts.append(f"{label} kernel: " + ", ".join(f"{v} {r}" for r, v in uses.items()))
    return "; ".join(parts) + " operands (xmm also carries scalar floating point)"


# ------------------------------------------------------------------------------------ garment
def subdivide(vertices, faces, weights):
    """Split each triangle into four at its edge midpoints.

    Parameters
    ----------
    vertices : (N, 3) metres
    faces : (F, 3) int
    weights : (N, B) dense skin weights

    Returns
    -------
    vertices (N + E, 3), faces (4F, 3), weights (N + E, B): new vertices after the old ones, at the
    midpoint of each unique edge, with the mean of its two ends' weights.
    """
    f = np.asarray(faces, dtype=np.int64)
    e = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    uniq, inv = np.unique(e, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    n = len(vertices)
    mid = n + inv.reshape(3, -1).T  # (F, 3): midpoints of edges 01, 12, 20
    v = np.concatenate([vertices, 0.5 * (vertices[uniq[:, 0]] + vertices[uniq[:, 1]])])
    w = np.concatenate([weights, 0.5 * (weights[uniq[:, 0]] + weights[uniq[:, 1]])])
    a, b, c = f[:, 0], f[:, 1], f[:, 2]
    m01, m12, m20 = mid[:, 0], mid[:, 1], mid[:, 2]
    new = np.concatenate([np.stack([a, m01, m20], 1), np.stack([m01, b, m12], 1), np.stack([m20, m12, c], 1),
                          np.stack([m01, m12, m20], 1)])
    return v, new, w


def dense_garment(avatar, n_vertices: int):
    """The built-in garments subdivided to ``n_vertices`` rest vertices: (vertices, faces, Skin)."""
    nb = avatar.skeleton.n_bones
    vs, fs, ws, off = [], [], [], 0
    for g in GARMENTS:
        part = avatar.part(g)
        vs.append(part.mesh.vertices.astype(np.float64))
        fs.append(part.mesh.faces.astype(np.int64) + off)
        ws.append(part.skin.dense(nb).astype(np.float64))
        off += part.mesh.n_vertices
    v, f, w = np.concatenate(vs), np.concatenate(fs), np.concatenate(ws)
    while len(v) < n_vertices:
        v, f, w = subdivide(v, f, w)
    v, w = v[:n_vertices], w[:n_vertices]
    f = f[(f < n_vertices).all(axis=1)]
    return v.astype(np.float32), f.astype(np.int32), top_k_weights(w, 4)


def dense_correctives(avatar, gv):
    """The packaged tights correctives spread to the dense garment ``gv`` (M, 3): every dense vertex whose nearest
    original tights-or-skirt vertex is a tights vertex takes that vertex's entries (a cost model: the same entries per
    vertex as the packaged bake, over the dense garment)."""
    from dataclasses import replace

    from scipy.spatial import cKDTree

    from kisekae.avatar.correctives import load_correctives
    from kisekae.fit.garment_correctives import packaged_garment_path

    c = load_correctives(str(packaged_garment_path("game_engine", "tights")))
    originals = np.concatenate([avatar.part(g).mesh.vertices for g in GARMENTS])
    parent = cKDTree(originals).query(np.asarray(gv, np.float64))[1]
    n_tights = avatar.part("tights").mesh.n_vertices
    counts = np.where(parent < n_tights, np.diff(c.vertex_ptr)[np.minimum(parent, n_tights - 1)], 0)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    entries = np.concatenate([np.arange(c.vertex_ptr[p], c.vertex_ptr[p + 1]) for p, k in zip(parent, counts) if k]
                             or [np.zeros(0, np.int64)]).astype(np.int64)
    return replace(c, vertex_ptr=ptr, entry_joint=c.entry_joint[entries], coefficients=c.coefficients[entries],
                   mesh_hash="", settings={**c.settings, "garment": "dense"})


# ------------------------------------------------------------------------------------ frame
def surface_setup(avatar, gv, gf, gskin, bake_poses: int):
    """(contact avatar, candidates, ring) of the dense garment for the surface path, baked once."""
    from kisekae.avatar.avatar import SkinnedMesh
    from kisekae.avatar.mesh import Mesh

    contact = avatar.with_body_contact()
    contact.garments = {}
    contact.add_garment(SkinnedMesh(Mesh(gv, gf, name="dense"), gskin))
    cand = bake_surface_candidates(contact, "dense", n_poses=bake_poses)
    mesh = contact.part("dense").mesh
    samples = garment_samples(contact, "dense")  # spaced by the longest skinning makes each edge, as the runtime's
    lift = None if len(samples) == 0 else (
        samples, bake_sample_candidates(contact, "dense", samples, n_poses=bake_poses), vertex_samples(samples, mesh.weld))
    faces = (mesh.faces.astype(np.int64), vertex_faces(mesh.faces, mesh.n_vertices, mesh.weld))
    return contact, cand, one_ring(len(gv), mesh.edges, mesh.weld), lift, faces


def run(n_vertices: int = 50_000, poses=("stand", "crouch"), repeat: int = 7, bake_poses: int = 100):
    """Measure the frame (see the module docstring) in each pose.

    Returns
    -------
    rows : list of table rows (pose, stage, wall ms, CPU ms, note)
    counts : dict with ``body_vertices``, ``garment_vertices``, ``garment_faces`` and ``capsules``
    """
    av = load_builtin_avatar()
    sk, body = av.skeleton, av.body
    rig = fit_capsules(body.mesh.vertices, body.skin.indices, body.skin.weights, sk.rest, sk.names,
                       faces=body.mesh.faces)
    gv, gf, gskin = dense_garment(av, n_vertices)
    binding = bind_to_skin(gv, body.mesh.vertices, body.mesh.faces)
    shortest = shortest_lengths(binding.rest_offset)  # the stretch limit's floor, as kisekae.fit.runtime sets it
    params = PushParams()
    plan = CapsulePushPlan(gv, params)  # once per garment
    bfaces = body.mesh.faces
    rows = []
    bv0, bi, bw = body.mesh.vertices, body.skin.indices, body.skin.weights
    contact_av, cand, ring, lift, gfaces = surface_setup(av, gv, gf, gskin, bake_poses)
    depth = body_depth_bound(body.mesh.vertices, bfaces)  # the body's depth bound, once per body
    dense_c = dense_correctives(av, gv)
    deform = contact_av.body.deform
    for pose_name in poses:
        pose = named_pose(sk, pose_name)
        skin_m = pose.skinning_matrices(sk)
        world_m = pose.world_matrices(sk)
        bv = lbs(bv0, bi, bw, skin_m).astype(np.float64)
        x = lbs(gv, gskin.indices, gskin.weights, skin_m).astype(np.float64)
        caps = rig.posed(world_m)
        bn = vertex_normals(bv, bfaces)
        after_caps = plan.run(x, *caps, diagnostics=False)[0].copy()
        after = push_out_bound_numba(binding, after_caps, bv, bn, params, start=x)[0].copy()

        def frame():
            b = lbs(bv0, bi, bw, skin_m)
            g = lbs(gv, gskin.indices, gskin.weights, skin_m)
            c = rig.posed(world_m)
            p = plan.run(g, *c, diagnostics=False)[0]
            q = push_out_bound_numba(binding, p, b, vertex_normals(b, bfaces), params, start=g)[0]
            return q, vertex_normals(q, gf)

        stages = [
            ("1 skin body (Numba)", lambda: lbs(bv0, bi, bw, skin_m)),
            ("1 skin garment (Numba)", lambda: lbs(gv, gskin.indices, gskin.weights, skin_m)),
            ("2 pose capsule rig (NumPy)", lambda: rig.posed(world_m)),
            ("3 capsule push, plan.run (Numba)", lambda: plan.run(x, *caps, diagnostics=False)),
            ("4 body normals (Numba)", lambda: vertex_normals(bv, bfaces)),
            ("4 skin-bound clearance + cap (Numba)", lambda: push_out_bound_numba(binding, after_caps, bv, bn, params,
                                                                                  start=x)),
            ("5 garment normals (Numba)", lambda: vertex_normals(after, gf)),
        ]
        timed = [(name, *measure(fn, repeat=repeat)) for name, fn in stages]
        total = measure(frame, repeat=repeat)
        skin_only = measure(lambda: (lbs(bv0, bi, bw, skin_m), lbs(gv, gskin.indices, gskin.weights, skin_m)),
                            repeat=repeat)
        today = measure(lambda: push_out_runtime(binding, x, caps, bv, bfaces, params), repeat=repeat)
        numpy_normals = measure(lambda: vertex_normals_numpy(after, gf), repeat=repeat)
        ref, _ = push_out_runtime(binding, x, caps, bv, bfaces, params)
        q, nq = frame()
        diff = float(np.abs(q - ref).max())
        ndiff = float(np.abs(nq - vertex_normals_numpy(ref, gf)).max())
        moved = float(np.mean(np.linalg.norm(ref - x, axis=1) > 0))
        for name, w, c in timed:
            rows.append([pose_name, name, f"{w * 1e3:.3f}", f"{c * 1e3:.3f}", ""])
        rows.append([pose_name, "FRAME: stages 1-5 in one call", f"{total[0] * 1e3:.3f}", f"{total[1] * 1e3:.3f}",
                     f"vs push_out_runtime: positions {diff:.1e} m, normals {ndiff:.1e}; {100 * moved:.1f} % moved"])
        rows.append([pose_name, "baseline: plain Numba skinning (body + garment)", f"{skin_only[0] * 1e3:.3f}",
                     f"{skin_only[1] * 1e3:.3f}", ""])
        rows.append([pose_name, "baseline: today's push_out_runtime (stages 3-4)", f"{today[0] * 1e3:.3f}",
                     f"{today[1] * 1e3:.3f}", "capsule plan built per call, NumPy normals, bound and cap"])
        cb = deform(bv, skin_m)
        cn = vertex_normals(cb, bfaces).astype(np.float64)
        first = surface_push(x, cand, cb, cn, bfaces, params)[0]
        smoothed = x + smooth_push(first - x, ring)
        second = surface_push(smoothed, cand, cb, cn, bfaces, params)[0]

        def surface_frame():
            b = deform(lbs(bv0, bi, bw, skin_m), skin_m)
            g = lbs(gv, gskin.indices, gskin.weights, skin_m)
            q = surface_runtime(g, cand, ring, b, vertex_normals(b, bfaces).astype(np.float64), bfaces, params)[0]
            return q, vertex_normals(q, gf)

        surface_stages = [
            ("S body contact step (Numba)", lambda: deform(bv, skin_m)),
            ("S surface push, one (Numba)", lambda: surface_push(x, cand, cb, cn, bfaces, params)),
            (f"S smoothing, {SMOOTH_PASSES} one-ring passes (Numba)", lambda: smooth_push(first - x, ring)),
            ("S surface push again (Numba)", lambda: surface_push(smoothed, cand, cb, cn, bfaces, params)),
            ("S stretch limit, one pass (Numba)", lambda: stretch_limit(second, x, ring)),
            ("S stretch limit with the floor, one pass (Numba)", lambda: stretch_limit(second, x, ring,
                                                                                      shortest=shortest)),
        ]
        for name, fn in surface_stages:
            w, c = measure(fn, repeat=repeat)
            rows.append([pose_name, name, f"{w * 1e3:.3f}", f"{c * 1e3:.3f}", ""])
        sf = measure(surface_frame, repeat=repeat)
        rows.append([pose_name, "SURFACE FRAME: skin, contact, normals, push, smooth, push, limit, normals",
                     f"{sf[0] * 1e3:.3f}", f"{sf[1] * 1e3:.3f}",
                     f"K = {cand.triangles.shape[1]} candidates, {LIMIT_PASSES} limit passes (each: limit, push moved)"])
        # the carried push (the default of check --runtime): the same frame started from the previous frame's
        # correction, here the correction this frame gives (a vertex in steady contact)
        previous = surface_frame()[0] - x

        def guarded(b):
            """The body normals of the default path (kisekae.fit.runtime.body_normals: guarded against the skinned
            normals)."""
            return body_normals(av, b, skin_m, guard=True)

        def carried(candidates, guard=False, **stages):
            """The carried frame on ``candidates``, ``stages`` (edge lift, unflip) passed to surface_runtime; with
            ``guard`` the body normals are guarded (:mod:`kisekae.geom.guarded_normals`)."""
            def frame():
                b = deform(lbs(bv0, bi, bw, skin_m), skin_m)
                g = lbs(gv, gskin.indices, gskin.weights, skin_m)
                nb = guarded(b.astype(np.float64)) if guard else vertex_normals(b, bfaces).astype(np.float64)
                q = surface_runtime(g, candidates, ring, b, nb, bfaces,
                                    params, start=carry_start(g, previous, KEEP), **stages)[0]
                return q, vertex_normals(q, gf)
            return frame

        cf = measure(carried(cand), repeat=repeat)
        rows.append([pose_name, "CARRIED FRAME: the surface frame started from the last correction",
                     f"{cf[0] * 1e3:.3f}", f"{cf[1] * 1e3:.3f}", f"keep {KEEP} (kisekae.fit.carry.carry_start)"])
        # the default since 2026-12-04 (the depth bound and the normal guard since 2026-12-07)
        full_frame = carried(cand, guard=True, lift=lift, faces=gfaces, finish_step=FINISH_STEP, depth_bound=depth)
        gn = measure(lambda: guarded(cb), repeat=repeat)
        rows.append([pose_name, "B body normals, guarded: skinned normals + guard (Numba)", f"{gn[0] * 1e3:.3f}",
                     f"{gn[1] * 1e3:.3f}", "the default frame's body normals (stage 4 is the plain ones)"])
        # the same carried frame reading only the first 16 candidates of each vertex (the core's size before
        # 2026-12-04): what the doubled candidate count costs, on this machine, in this run
        cand16 = SurfaceCandidates(np.ascontiguousarray(cand.triangles[:, :16]), cand.n_body_faces)
        cf16 = measure(carried(cand16), repeat=repeat)
        rows.append([pose_name, "baseline: the carried frame with 16 candidates", f"{cf16[0] * 1e3:.3f}",
                     f"{cf16[1] * 1e3:.3f}", "the first 16 of each vertex's baked candidates"])

        ff = measure(full_frame, repeat=repeat)
        n_samples = 0 if lift is None else len(lift[0])
        rows.append([pose_name, "DEFAULT FRAME: the carried frame, then edge lift and unflip capped a frame",
                     f"{ff[0] * 1e3:.3f}", f"{ff[1] * 1e3:.3f}",
                     f"{n_samples} edge samples (edges over {SAMPLE_SPACING * 100:g} cm), {LIFT_PASSES} lift rounds, "
                     f"{UNFLIP_PASSES} unflips, finish step {FINISH_STEP * 1e3:g} mm"])
        gc = BodyCorrectives(dense_c, sk, gskin)

        def corrected(g):
            return add_skinned_offsets(g, gskin, skin_m, gc.rest_offsets(skin_m))

        # the carry beyond the corrected skinning, as kisekae.fit.runtime keeps it (steady contact, as ``previous``)
        previous_c = surface_frame()[0] - corrected(x)

        def with_correctives(floor=shortest):
            """The default frame started from the corrected skinning (what runtime_pose runs for the tights)."""
            b = deform(lbs(bv0, bi, bw, skin_m), skin_m)
            g = lbs(gv, gskin.indices, gskin.weights, skin_m).astype(np.float64)
            q = surface_runtime(g, cand, ring, b, guarded(b.astype(np.float64)), bfaces, params,
                                start=carry_start(corrected(g), previous_c, KEEP), lift=lift, faces=gfaces,
                                finish_step=FINISH_STEP, shortest=floor, depth_bound=depth)[0]
            return q, vertex_normals(q, gf)

        gcost = measure(lambda: corrected(x), repeat=repeat)
        rows.append([pose_name, "C garment correctives: offsets + skinned (Numba)", f"{gcost[0] * 1e3:.3f}",
                     f"{gcost[1] * 1e3:.3f}", f"{len(dense_c.entry_joint):,} entries over "
                     f"{int((np.diff(dense_c.vertex_ptr) > 0).sum()):,} vertices, {len(dense_c.joints)} joints"])
        shares = follow_weights(binding.rest_offset)
        corners, bary = binding.corners.astype(np.int64), binding.bary.astype(np.float64)

        def follow():
            """The body follow (kisekae.fit.body_follow): the body's plain skinning (the posed body and its normals
            are the frame's own), the gather, and its smoothing over the garment's one-ring."""
            plain_body = lbs(bv0, bi, bw, skin_m)
            return smooth_push(body_follow(corners, bary, shares, cb, plain_body, cn), ring, FOLLOW_SMOOTH)

        fcost = measure(follow, repeat=repeat)
        rows.append([pose_name, "F body follow: plain body skin + gather + smoothing (Numba)", f"{fcost[0] * 1e3:.3f}",
                     f"{fcost[1] * 1e3:.3f}", f"{int((shares > 0).sum()):,} following vertices, {FOLLOW_SMOOTH} passes; "
                     "added to the default frame's start (kisekae check --runtime)"])
        wc = measure(with_correctives, repeat=repeat)
        rows.append([pose_name, "DEFAULT FRAME + garment correctives (the tights' default)", f"{wc[0] * 1e3:.3f}",
                     f"{wc[1] * 1e3:.3f}", "the default frame started from the corrected skinning, with the floor "
                     f"({int((shortest > 0).sum()):,} clinging vertices)"])
        nofloor = measure(lambda: with_correctives(None), repeat=repeat)
        rows.append([pose_name, "baseline: the same without the floor", f"{nofloor[0] * 1e3:.3f}",
                     f"{nofloor[1] * 1e3:.3f}", "edges shrink freely (the default before 2026-12-06)"])
        nolimit = measure(lambda: surface_runtime(x, cand, ring, cb, cn, bfaces, params, limit_passes=0), repeat=repeat)
        rows.append([pose_name, "baseline: surface_runtime without the stretch limit", f"{nolimit[0] * 1e3:.3f}",
                     f"{nolimit[1] * 1e3:.3f}", "correction alone (no skinning, contact or normals)"])
        rows.append([pose_name, "baseline: NumPy garment normals", f"{numpy_normals[0] * 1e3:.3f}",
                     f"{numpy_normals[1] * 1e3:.3f}", "kisekae.geom.normals.vertex_normals_numpy"])
    return rows, {"body_vertices": len(bv0), "garment_vertices": len(gv), "garment_faces": len(gf),
                  "capsules": len(rig)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vertices", type=int, default=50_000, help="garment vertices (default 50000)")
    ap.add_argument("--poses", default="stand,crouch", help="comma-separated named poses")
    ap.add_argument("--repeat", type=int, default=7, help="best-of count")
    ap.add_argument("--bake-poses", type=int, default=100, help="range-of-motion poses of the surface candidates' bake")
    ap.add_argument("--avx2", action="store_true",
                    help="compile the kernels for an AVX2 CPU (NUMBA_CPU_NAME=haswell), to see the AVX2 cost on an "
                         "AVX-512 machine")
    args = ap.parse_args(argv)
    rows, n = run(args.vertices, [p for p in args.poses.split(",") if p], args.repeat, args.bake_poses)
    for line in simd_report():
        print(line)
    print("compiled kernels use " + kernel_registers())
    print(f"one frame, built-in body ({n['body_vertices']:,} vertices) + {n['garment_vertices']:,} garment vertices "
          f"({n['garment_faces']:,} triangles, tights + skirt subdivided), {n['capsules']} fitted capsules, one core "
          f"(NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS')}), best of {args.repeat}; "
          "issue 16 gate: <= 2 ms per frame on one AVX2 core")
    print(table(rows, ["pose", "stage", "wall ms", "cpu ms", "note"]))
    return rows


if __name__ == "__main__":
    main()

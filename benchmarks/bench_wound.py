"""Per-frame cost of the wound morph on the built-in avatar for 0, 5, 10 and 32 hits.

Each frame: morph parameter p -> morph positions and normals -> skin (Numba LBS of positions and
normals). Two ways to get p, measured in the same run:

* ``loop`` (baseline, the article's method): every frame, skin the hits to world space and loop over
  all hits for every vertex (cost grows with the hit count).
* ``flat``: each hit was accumulated once into a per-vertex mask when it landed; the frame only
  reads the mask (cost independent of the hit count).
* ``uv``: each hit was accumulated once into a UV-space mask (512x512, one channel per body part);
  the frame samples it bilinearly at every vertex's uv0 (cost independent of the hit count).

Also printed: the one-off costs of accumulating one hit into each mask, the UV mask's error against
the per-vertex mask at 256/512/1024 texels, and ray casting on the posed mesh: brute force (every
triangle) against the BVH (boxes refitted per pose, then traversal). Wall time and CPU time (process time) are both reported, because on a loaded machine
the two differ. Run: ``python benchmarks/bench_wound.py [--frames N]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def measure(fn, frames: int):
    fn()  # warm up (Numba compile / caches)
    walls, cpus = [], []
    for _ in range(frames):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return float(np.median(walls)) * 1e3, float(np.median(cpus)) * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--pose", default="crouch")
    args = ap.parse_args(argv)

    from kisekae.avatar import load_builtin_avatar
    from kisekae.avatar.poses import named_pose
    from kisekae.avatar.skinning import lbs_with_normals
    from kisekae.wound import WoundState, bake, hits_world, morph_numba, wound_p_numba
    from kisekae.geom.normals import vertex_normals
    from kisekae.wound.damage import damaged_builtin

    av = load_builtin_avatar()
    body = av.body
    m = body.mesh
    dmg = damaged_builtin(av)
    r = bake(m.vertices, m.faces, dmg.vertices, m.faces, parts=dmg.parts, encodings=["delta16"])
    tpos, tnrm = (x.astype(np.float32) for x in r.decoded("delta16"))
    s, sn = r.start_vertices, r.start_normals
    idx = np.ascontiguousarray(body.skin.indices, dtype=np.int32)
    wts = np.ascontiguousarray(body.skin.weights, dtype=np.float32)
    S = named_pose(av.skeleton, args.pose).skinning_matrices(av.skeleton)
    S32 = S.astype(np.float32)
    n = len(s)
    posed0 = np.empty_like(s)
    nrm0 = np.empty_like(s)
    lbs_with_normals(s, sn, idx, wts, S32, posed0, nrm0)

    rng = np.random.default_rng(0)
    bind = m.vertices.astype(np.float64)
    bn = vertex_normals(bind, m.faces)
    targets = rng.choice(n, 64, replace=False)
    print(f"built-in body: {n} vertices, {len(m.faces)} triangles, pose {args.pose!r}, median of {args.frames} frames")
    print(f"{'hits':>5} | {'loop wall ms':>12} {'loop cpu ms':>12} | {'flat wall ms':>12} {'flat cpu ms':>12} | "
          f"{'uv wall ms':>10} {'uv cpu ms':>10} | {'flat/loop':>9}")
    results = {}
    for count in (0, 5, 10, 32):
        st = WoundState(m.vertices, m.faces, idx, wts, av.skeleton.rest, dmg.parts.astype(np.int64),
                        part_reach=[1.0, 20.0, 1.0])
        st.enable_uv_mask(m.uvs["uv0"], uv_coords=m.uv_coords, uv_faces=m.uv_faces, size=512)
        for vi in targets:
            if len(st.hits) == count:
                break
            st.shoot(bind[vi] + 0.05 * bn[vi], -bn[vi], bind)
        assert len(st.hits) == count
        hparts = np.array([h.part for h in st.hits], dtype=np.int64)
        p = np.zeros(n, np.float32)
        mp, mn, op, on = (np.empty_like(s) for _ in range(4))
        posed64 = posed0.astype(np.float64)

        def frame_loop():
            hp = hits_world(st.hits, S) if st.hits else np.zeros((0, 3))
            wound_p_numba(posed64, st.parts, hp, hparts, st.hole_size, st.hole_intensity, st.part_reach,
                          st.part_gain, p)
            morph_numba(s, sn, tpos, tnrm, p, mp, mn)
            lbs_with_normals(mp, mn, idx, wts, S32, op, on)

        mask = st.p_flat()

        def frame_flat():
            morph_numba(s, sn, tpos, tnrm, mask, mp, mn)
            lbs_with_normals(mp, mn, idx, wts, S32, op, on)

        p_uv = np.empty(n, np.float32)

        def frame_uv():
            st.p_uv(p_uv)
            morph_numba(s, sn, tpos, tnrm, p_uv, mp, mn)
            lbs_with_normals(mp, mn, idx, wts, S32, op, on)

        lw, lc = measure(frame_loop, args.frames)
        fw, fc = measure(frame_flat, args.frames)
        uw, uc = measure(frame_uv, args.frames)
        results[count] = (lw, lc, fw, fc, uw, uc)
        print(f"{count:>5} | {lw:>12.3f} {lc:>12.3f} | {fw:>12.3f} {fc:>12.3f} | {uw:>10.3f} {uc:>10.3f} | "
              f"{fw / lw:>9.2f}")
        last = st
    g_loop = results[32][1] / results[0][1] - 1
    g_flat = results[32][3] / results[0][3] - 1
    g_uv = results[32][5] / results[0][5] - 1
    print(f"growth 0 -> 32 hits (CPU time): loop {g_loop * 100:+.1f} %, flat {g_flat * 100:+.1f} %, "
          f"uv {g_uv * 100:+.1f} %")

    print("UV mask against the per-vertex mask (32 hits; error on vertices with p > 0 in either):")
    print(f"{'side':>5} | {'build s':>8} | {'texel mm (median tap)':>21} | {'max |dp|':>8} {'mean |dp|':>9} | "
          f"{'accumulate ms':>13}")
    ref = last.p_flat()
    for side in (256, 512, 1024):
        t0 = time.perf_counter()
        um = last.enable_uv_mask(m.uvs["uv0"], uv_coords=m.uv_coords, uv_faces=m.uv_faces, size=side)
        build = time.perf_counter() - t0
        got = last.p_uv()
        hit0 = last.hits[0]
        err = np.abs(got - ref)[(got > 0) | (ref > 0)]
        aw_, ac_ = measure(lambda: um.accumulate(hit0.bind_position, hit0.part, 0.03, 50.0, last.part_reach,
                                                 last.part_gain), 10)
        print(f"{side:>5} | {build:>8.2f} | {np.median(um.tap_distance()) * 1e3:>21.2f} | {err.max():>8.3f} "
              f"{err.mean():>9.4f} | {ac_:>13.3f}")

    st = WoundState(m.vertices, m.faces, idx, wts, av.skeleton.rest, dmg.parts.astype(np.int64))
    hit = st.shoot(bind[targets[0]] + 0.05 * bn[targets[0]], -bn[targets[0]], bind)
    from kisekae.wound import accumulate_hit_numba
    mask = np.zeros(n)
    aw, ac = measure(lambda: accumulate_hit_numba(mask, st.bind_vertices, st.parts, hit.bind_position, hit.part,
                                                  0.03, 50.0, st.part_reach, st.part_gain), args.frames)
    posed = posed0.astype(np.float64)
    print(f"one-off per hit: accumulate into the per-vertex mask {aw:.3f} ms wall / {ac:.3f} ms CPU")

    from kisekae.wound import raycast, raycast_bvh, refit_boxes
    from kisekae.geom.raytri import ray_triangles_numba
    from kisekae.geom.raycast import ray_bvh_numba
    pn = vertex_normals(posed, m.faces)
    rays = [(posed[vi] + 0.3 * pn[vi], -pn[vi]) for vi in targets[:32]]
    f64 = m.faces.astype(np.int64)
    tree = st.tree
    boxes = refit_boxes(tree, posed, m.faces)
    order = tree.order.astype(np.int64)
    for o, d in rays:  # same answers
        a, b = raycast(o, d, posed, m.faces), raycast_bvh(o, d, posed, m.faces, tree, boxes)
        assert a[0] == b[0] and a[1] == b[1]
    bw, bc = measure(lambda: [ray_triangles_numba(o, d, posed, f64, 0.0) for o, d in rays], args.frames)
    qw, qc = measure(lambda: [ray_bvh_numba(o, d, posed, f64, tree.left, tree.right, order, tree.start, tree.count,
                                            boxes[0], boxes[1], 0.0, 1e-9) for o, d in rays], args.frames)
    fw_, fc_ = measure(lambda: refit_boxes(tree, posed, m.faces), args.frames)
    sw, sc = measure(lambda: st.shoot(*rays[1], posed, brute_force=True), 10)
    tw, tc = measure(lambda: st.shoot(*rays[1], posed), 10)
    print(f"ray casting on the posed body ({len(m.faces)} triangles), {len(rays)} rays, kernels only:")
    print(f"  brute force (baseline) {bw:.3f} ms wall / {bc:.3f} ms CPU  ({bc / len(rays) * 1e3:.1f} us per ray)")
    print(f"  BVH traversal          {qw:.3f} ms wall / {qc:.3f} ms CPU  ({qc / len(rays) * 1e3:.1f} us per ray, "
          f"{bc / max(qc, 1e-9):.0f}x)")
    print(f"  BVH boxes refit, once per pose {fw_:.3f} ms wall / {fc_:.3f} ms CPU")
    print(f"WoundState.shoot (one ray, with input checks and storing the hit): brute force {sw:.3f} ms wall / "
          f"{sc:.3f} ms CPU; BVH incl. refit {tw:.3f} ms wall / {tc:.3f} ms CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

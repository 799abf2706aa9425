"""Per-frame cost of the wound morph on the built-in avatar for 0, 5, 10 and 32 hits.

Each frame: morph parameter p -> morph positions and normals -> skin (Numba LBS of positions and
normals). Two ways to get p, measured in the same run:

* ``loop`` (baseline, the article's method): every frame, skin the hits to world space and loop over
  all hits for every vertex (cost grows with the hit count).
* ``flat``: each hit was accumulated once into a per-vertex mask when it landed; the frame only
  reads the mask (cost independent of the hit count).

Also printed: the one-off cost of accumulating one hit into the mask, and of a ray cast on the
posed mesh. Wall time and CPU time (process time) are both reported, because on a loaded machine
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
    from kisekae.wound import WoundState, bake, hits_world, lbs_numba, morph_numba, wound_p_numba
    from kisekae.wound._geom import vertex_normals
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
    lbs_numba(s, sn, idx, wts, S32, posed0, nrm0)

    rng = np.random.default_rng(0)
    bind = m.vertices.astype(np.float64)
    bn = vertex_normals(bind, m.faces)
    targets = rng.choice(n, 64, replace=False)
    print(f"built-in body: {n} vertices, {len(m.faces)} triangles, pose {args.pose!r}, median of {args.frames} frames")
    print(f"{'hits':>5} | {'loop wall ms':>12} {'loop cpu ms':>12} | {'flat wall ms':>12} {'flat cpu ms':>12} | "
          f"{'flat/loop':>9}")
    results = {}
    for count in (0, 5, 10, 32):
        st = WoundState(m.vertices, m.faces, idx, wts, av.skeleton.rest, dmg.parts.astype(np.int64),
                        part_reach=[1.0, 20.0, 1.0])
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
            lbs_numba(mp, mn, idx, wts, S32, op, on)

        mask = st.p_flat()

        def frame_flat():
            morph_numba(s, sn, tpos, tnrm, mask, mp, mn)
            lbs_numba(mp, mn, idx, wts, S32, op, on)

        lw, lc = measure(frame_loop, args.frames)
        fw, fc = measure(frame_flat, args.frames)
        results[count] = (lw, lc, fw, fc)
        print(f"{count:>5} | {lw:>12.3f} {lc:>12.3f} | {fw:>12.3f} {fc:>12.3f} | {fw / lw:>9.2f}")
    g_loop = results[32][1] / results[0][1] - 1
    g_flat = results[32][3] / results[0][3] - 1
    print(f"growth 0 -> 32 hits (CPU time): loop {g_loop * 100:+.1f} %, flat {g_flat * 100:+.1f} %")

    st = WoundState(m.vertices, m.faces, idx, wts, av.skeleton.rest, dmg.parts.astype(np.int64))
    hit = st.shoot(bind[targets[0]] + 0.05 * bn[targets[0]], -bn[targets[0]], bind)
    from kisekae.wound import accumulate_hit_numba
    mask = np.zeros(n)
    aw, ac = measure(lambda: accumulate_hit_numba(mask, st.bind_vertices, st.parts, hit.bind_position, hit.part,
                                                  0.03, 50.0, st.part_reach, st.part_gain), args.frames)
    posed = posed0.astype(np.float64)
    rw, rc = measure(lambda: st.shoot(bind[targets[1]] + 0.05 * bn[targets[1]], -bn[targets[1]], posed), 10)
    print(f"one-off per hit: accumulate into mask {aw:.3f} ms wall / {ac:.3f} ms CPU; "
          f"ray cast + store in bone space {rw:.3f} ms wall / {rc:.3f} ms CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

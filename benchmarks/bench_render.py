"""Render speed on the built-in avatar (body + tights + skirt, crouch pose): frames and poke-through.

Run: ``.venv/bin/python benchmarks/bench_render.py [--repeat N]``. Prints one table with wall and CPU
time per operation (median of N runs, and the best run). The baseline, measured in the same run, is
the original path: a renderer built from scratch for the frame (programs, framebuffers and GL
buffers) with 4x MSAA and every effect compiled in. The target is a 1024x1024 frame of the built-in
avatar in <= 50 ms on llvmpipe, on the *default path* the demo uses (:func:`default_renderer`:
no MSAA on a software rasterizer, 4x on a GPU; fragment variants per effect set).
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

    import numpy as np

    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import named_pose
    from kisekae.fit.fix import fix_pose
    from kisekae.fit.pressure import avatar_pressure
    from kisekae.render import Renderer, gl_info, named_camera, shared_context
    from kisekae.render import shading as S
    from kisekae.render.poke import poke_through
    from kisekae.render.renderer import default_renderer, default_samples
    from kisekae.render.scene import avatar_items
    from kisekae.tension import tension_map

    av = load_builtin_avatar()
    pose = named_pose(av.skeleton, "crouch")
    body, garments = avatar_items(av, pose)
    items = [body, *garments.values()]
    tris = sum(len(i.faces) for i in items)
    # the demo's look: body pressure (tight look) from the fixed garments, tension ratio + wrinkles on the tights
    fixed = {k: v.positions for k, v in fix_pose(av, pose, list(av.garments)).items()}
    press = avatar_pressure(av, pose, fixed, {"tights": 0.5})
    tights = av.garments["tights"].mesh
    ratio = np.asarray(tension_map(tights.vertices, fixed["tights"], tights.quads).ratio)
    fbody, fgs = avatar_items(av, pose, positions=fixed, attributes={"body": {"pressure": press},
                                                                     "tights": {"ratio": ratio}})
    effects = [fbody, *fgs.values()]
    cam1 = named_camera("front", body.positions, 1.0)
    cam16 = named_camera("front", body.positions, 16 / 9)
    r = default_renderer()
    r4 = Renderer(samples=4)
    info = gl_info()

    class AllFeatures(S.CoreShading):
        """The single program with every effect compiled in (what the renderer ran before variants)."""

        def program(self, features):
            return super().program(S.ALL_FEATURES)

    def naive():
        rr = Renderer(shared_context(), samples=4, shading=AllFeatures())
        rr.draw(items, cam1, (1024, 1024))
        rr.release()

    label = f"default path (demo): MSAA x{r.samples}" if r.samples else "default path (demo): no MSAA"
    rows = [
        ("baseline: new renderer per frame, MSAA x4, all effects", naive),
        (f"frame 1024^2, {label}", lambda: r.draw(items, cam1, (1024, 1024))),
        (f"frame 1024^2, {label}, effects on", lambda: r.draw(effects, cam1, (1024, 1024))),
        ("frame 1024^2, MSAA x4", lambda: r4.draw(items, cam1, (1024, 1024))),
        ("scene build (skin 3 meshes + normals)", lambda: avatar_items(av, pose)),
        (f"frame 720p, {label}", lambda: r.draw(items, cam16, "720p")),
        (f"frame 2160p, {label}", lambda: r.draw(items, cam16, "2160p")),
        ("poke-through skirt, 1 view 720p", lambda: poke_through(body, [garments["skirt"]], cam16, "720p", renderer=r)),
        ("poke-through skirt, 1 view 2160p",
         lambda: poke_through(body, [garments["skirt"]], cam16, "2160p", renderer=r)),
    ]
    print(f"renderer: {info['renderer']} ({info['version']}), max MSAA {info['max_samples']}, "
          f"default samples {default_samples()}")
    print(f"scene: built-in avatar, crouch, {tris} triangles; median of {args.repeat} runs\n")
    print("wall = median wall time, best = fastest run (least disturbed by other processes), CPU = process CPU "
          "time (llvmpipe's raster threads count here too)\n")
    print(f"{'operation':60s} {'wall ms':>9s} {'best ms':>9s} {'CPU ms':>9s} {'vs base':>8s}")
    base = None
    results = {}
    for name, fn in rows:
        wall, cpu, best = measure(fn, args.repeat)
        results[name] = (wall, best)
        base = base or wall
        print(f"{name:60s} {wall:9.1f} {best:9.1f} {cpu:9.1f} {base / wall:7.1f}x")
    for name in (rows[1][0], rows[2][0]):
        wall, best = results[name]
        verdict = "PASS" if wall <= 50 else ("PASS (best run only)" if best <= 50 else "FAIL")
        print(f"target: {name.replace('frame ', '')} <= 50 ms -> {verdict} (median {wall:.1f} ms, best {best:.1f} ms)")


if __name__ == "__main__":
    main()

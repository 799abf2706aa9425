#!/usr/bin/env python3
"""The per-frame path through motions: one second at 30 fps between two poses, per garment, per variant.

Issue 16 asks for ``pop_mm`` <= 5 at 30 fps (the largest frame-to-frame change of the correction) besides clipping,
and motions held back from development will be measured that way. The 68 cells of ``bench_runtime_cells.py`` are
single poses, each warmed up from rest; this runs *transitions*: ``--inbetweens`` frames slerped from pose A to pose B
(:func:`kisekae.render.animation.inbetween`), the correction carried from frame to frame as an engine carries it
(:class:`kisekae.fit.carry.CarryState`; the first pose warms up from rest), on the body the command line poses
(:func:`kisekae.avatar.contact.apply_contact`). Per transition and garment: the largest pop and its frame, and the
largest count over the frames of vertices inside the body, edges through it and flipped faces
(:func:`kisekae.qa.check.check_pose`, as ``kisekae check --runtime``). Then per variant the totals over every
transition: the largest pop, how many (transition, garment) runs pop over 5 mm, and the sums of those maxima.

Variants (``--variants``; by default ``default`` and, as the baseline in the same run, ``no-normal-guard``): ``default``
(``runtime_pose`` as it ships), ``no-depth-bound``, ``no-normal-guard`` (``normal_guard=False``), ``no-lift``
(``edge_lift=False``), ``no-follow`` (``body_follow=False``), ``no-correctives`` (``correctives="off"``),
``no-part-contact`` (the body without ``Avatar.with_part_contact()``, as ``--no-part-contact``).

Run: ``.venv/bin/python benchmarks/bench_motion_pops.py [--transitions stand:crouch,lunge:kick_back]
[--garments tights,skirt] [--inbetweens 30] [--variants default,no-normal-guard] [--json FILE]``. A pose is a named
pose, a name of ``benchmarks/poses`` or ``benchmarks/poses_more``, or a pose file.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import json_out, table, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "src" / "kisekae" / "data" / "samples"
GARMENTS = ("tights", "skirt", str(SAMPLES / "female_casualsuit01.mhclo"), str(SAMPLES / "male_worksuit01.mhclo"))
#: Pose pairs of the default run: named poses, the held-out poses of benchmarks/poses and benchmarks/poses_more.
TRANSITIONS = ("stand:knee_bend", "stand:sit", "stand:lunge", "stand:crouch", "lunge:kick_back", "sit:stand",
               "crouch:knee_up", "run_stride:lunge", "stand:high_kick", "side_split:deep_squat", "kneel:sit",
               "arms_up:bow", "twist:squat_twist", "sit_wide:lunge_deep", "leg_raise:wide_squat")
VARIANTS = {"default": {}, "no-depth-bound": {"depth_bound": False}, "no-normal-guard": {"normal_guard": False},
            "no-lift": {"edge_lift": False}, "no-follow": {"body_follow": False}, "no-correctives": {"correctives": "off"},
            "no-part-contact": {}}
#: Variants that pose another body: the body without the part contact.
BODY_VARIANTS = {"no-part-contact"}
POP_GATE = 5.0


def load_pose(skeleton, name: str):
    """A named pose, a pose of ``benchmarks/poses`` or ``benchmarks/poses_more`` by name, or a pose file."""
    from kisekae.avatar.poses import NAMED_POSES, load_pose_file, named_pose

    if name in NAMED_POSES:
        return named_pose(skeleton, name)
    for folder in ("poses", "poses_more"):
        path = ROOT / "benchmarks" / folder / f"{name}.json"
        if path.exists():
            return load_pose_file(skeleton, path)
    return load_pose_file(skeleton, name)


def avatar_with(garments, part_contact: bool = True):
    """The built-in avatar posed as the command line poses it (``part_contact=False``: as ``--no-part-contact``), with
    the garments (names or .mhclo files); returns ``(avatar, garment names)``."""
    from kisekae.avatar import load_builtin_avatar
    from kisekae.avatar.contact import GAP, apply_contact
    from kisekae.io.mhclo import add_garments

    av = apply_contact(load_builtin_avatar(), GAP, part_contact=part_contact)
    return av, add_garments(av, garments)


def run_transition(av, garments, a, b, steps: int, **kwargs) -> dict:
    """One transition: name -> ``{"pop_mm", "pop_frame", "inside", "crossings", "flipped"}`` (maxima over frames)."""
    from kisekae.fit.carry import CarryState
    from kisekae.fit.runtime import pop_mm, runtime_pose
    from kisekae.qa.check import check_pose
    from kisekae.render.animation import inbetween

    state, previous = CarryState(), {}
    out = {g: {"pop_mm": 0.0, "pop_frame": 0, "inside": 0, "crossings": 0, "flipped": 0} for g in garments}
    for k, pose in enumerate(inbetween([load_pose(av.skeleton, a), load_pose(av.skeleton, b)], steps)):
        m = pose.skinning_matrices(av.skeleton)
        result = runtime_pose(av, pose, garments, state=state, **kwargs)
        positions = {g: result[g][0] for g in garments}
        for rec in check_pose(av, pose, garments, posed_garments=positions):
            o = out[rec["garment"]]
            o["inside"] = max(o["inside"], rec["inside_count"])
            o["crossings"] = max(o["crossings"], rec["edge_crossings"])
            o["flipped"] = max(o["flipped"], rec.get("flipped_faces", 0))
        for g in garments:
            correction = positions[g].astype(np.float64) - av.part(g).posed(m)
            if g in previous:
                pop = pop_mm(previous[g], correction)
                if pop > out[g]["pop_mm"]:
                    out[g]["pop_mm"], out[g]["pop_frame"] = pop, k
            previous[g] = correction
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transitions", default=",".join(TRANSITIONS), help="comma-separated A:B pose pairs")
    ap.add_argument("--garments", default=",".join(GARMENTS), help="comma-separated garment names or .mhclo files")
    ap.add_argument("--inbetweens", type=int, default=30, help="frames from A to B (30: one second at 30 fps)")
    ap.add_argument("--variants", default="default,no-normal-guard",
                    help=f"comma-separated, of {', '.join(VARIANTS)} (default: the path as it ships and, as the "
                         "baseline in the same run, the path before the normal guard)")
    ap.add_argument("--json", metavar="FILE", help="write every run's maxima (not overwritten)")
    args = ap.parse_args(argv)
    json_out(args.json, "bench_motion_pops")
    unknown = [v for v in args.variants.split(",") if v not in VARIANTS]
    if unknown or args.inbetweens < 1:
        raise SystemExit(f"bench_motion_pops: unknown variants {unknown} or --inbetweens < 1")
    pairs = [p.split(":") for p in args.transitions.split(",")]
    if any(len(p) != 2 for p in pairs):
        raise SystemExit("bench_motion_pops: transitions are A:B pairs")
    bodies = {False: avatar_with(args.garments.split(","))}  # key: the variant poses its own body
    rows, totals, results = [], [], {}
    for variant in args.variants.split(","):
        t0, runs = time.perf_counter(), {}
        own = variant in BODY_VARIANTS
        if own not in bodies:
            bodies[own] = avatar_with(args.garments.split(","), part_contact=False)
        av, garments = bodies[own]
        for a, b in pairs:
            print(f"  {variant}: {a} -> {b} ...", file=sys.stderr, flush=True)
            runs[f"{a}:{b}"] = got = run_transition(av, garments, a, b, args.inbetweens, **VARIANTS[variant])
            rows += [[variant, f"{a} -> {b}", Path(g).stem, f"{r['pop_mm']:.1f}", r["pop_frame"], r["inside"],
                      r["crossings"], r["flipped"]] for g, r in got.items()]
        every = [r for got in runs.values() for r in got.values()]
        totals.append([variant, len(every), f"{max(r['pop_mm'] for r in every):.1f}",
                       sum(r["pop_mm"] > POP_GATE for r in every), sum(r["inside"] for r in every),
                       sum(r["crossings"] for r in every), sum(r["flipped"] for r in every),
                       f"{time.perf_counter() - t0:.1f}"])
        results[variant] = runs
    print(table(rows, ["variant", "transition", "garment", "largest pop mm", "at frame", "inside", "crossings",
                       "flipped"]))
    print()
    print(table(totals, ["variant", "runs", "largest pop mm", f"runs over {POP_GATE:g} mm", "inside (sum of maxima)",
                         "crossings", "flipped", "wall s"]))
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Layers in the per-frame path: an outer garment over an inner one, each pose with and without the layer push.

For every pose (the nine named poses and the eight held-out ones of ``benchmarks/poses`` by default) and every
(inner, outer) pair (default: the built-in tights under the skirt and under each sample ``.mhclo`` suit), the
per-frame path of ``kisekae check --runtime`` (carried, warmed up from rest, the default edge lift and cap) runs on
both garments twice: each garment alone against the body (``layers=False``, the default) and as a stack
(``layers=True``: :func:`kisekae.fit.layer_push.layer_push` after both corrections, then the body push of what it
moved). Printed per row: the outer garment's vertices under the inner one and its edges through it
(:func:`kisekae.fit.layers.layer_stats`), its vertices inside the body and edges through the body, flipped faces,
strain p99 and max against plain skinning, and the milliseconds of the outer garment's frame (its last step); then
the totals per variant. Quality first: the layer push must not put cloth into the body or crumple it.

Run: ``.venv/bin/python benchmarks/bench_layers.py [--poses stand,crouch] [--pairs tights:skirt] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import json_out, table, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NAMED = ("stand", "leg_raise", "crouch", "knee_bend", "sit", "lunge", "arms_up", "arms_forward", "twist")
HELD_OUT = ("bow", "deep_squat", "high_kick", "kneel", "reach", "side_bend", "side_split", "wide_squat")
SAMPLES = ROOT / "src" / "kisekae" / "data" / "samples"
PAIRS = ("tights:skirt", f"tights:{SAMPLES / 'female_casualsuit01.mhclo'}", f"tights:{SAMPLES / 'male_worksuit01.mhclo'}")


def load_pose(avatar, name: str):
    """A named pose, a ``benchmarks/poses`` name or a pose file."""
    from kisekae.avatar.poses import load_pose_file, named_pose

    if name in NAMED:
        return named_pose(avatar.skeleton, name)
    path = ROOT / "benchmarks" / "poses" / f"{name}.json"
    return load_pose_file(avatar.skeleton, path if path.exists() else Path(name))


def measure(avatar, pose, inner: str, outer: str, layers: bool) -> dict:
    """One (pose, pair, variant): the outer garment's layer, body and shape numbers."""
    from kisekae.fit.layers import LayerSurface, layer_stats
    from kisekae.fit.runtime import runtime_pose
    from kisekae.qa.check import check_pose

    res = runtime_pose(avatar, pose, [inner, outer], layers=layers)
    lower = np.asarray(res[inner][0], dtype=np.float64)
    upper = np.asarray(res[outer][0], dtype=np.float64)
    stats = layer_stats(upper, avatar.part(outer).mesh.edges,
                        [LayerSurface(lower, avatar.part(inner).mesh.faces, name=inner)])
    rec = check_pose(avatar, pose, [outer], posed_garments={outer: upper})[0]
    return {**stats, **{k: rec[k] for k in ("inside_count", "edge_crossings", "flipped_faces", "strain_p99",
                                            "strain_max")}, "time_ms": res[outer][1]["time_ms"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--poses", default=",".join(NAMED + HELD_OUT), help="comma-separated poses")
    ap.add_argument("--pairs", default=",".join(PAIRS), help="comma-separated inner:outer garment pairs")
    ap.add_argument("--json", metavar="FILE", help="write every row (not overwritten)")
    args = ap.parse_args(argv)
    json_out(args.json, "bench_layers")
    from kisekae.avatar import load_builtin_avatar
    from kisekae.avatar.contact import apply_contact
    from kisekae.io.mhclo import add_garments

    avatar = apply_contact(load_builtin_avatar(), 0.004, correctives="auto")
    pairs = [tuple(add_garments(avatar, pair.split(":", 1))) for pair in args.pairs.split(",")]
    rows, out, totals = [], [], {}
    for pname in args.poses.split(","):
        pose = load_pose(avatar, pname)
        for inner, outer in pairs:
            for layers in (False, True):
                variant = "layers" if layers else "alone"
                print(f"  {pname} {inner} under {outer}: {variant} ...", file=sys.stderr, flush=True)
                r = measure(avatar, pose, inner, outer, layers)
                out.append({"pose": pname, "inner": inner, "outer": outer, "variant": variant, **r})
                t = totals.setdefault(variant, {"rows": 0, "under": 0, "layer_x": 0, "inside": 0, "body_x": 0,
                                                "flipped": 0, "strain_max": 0.0, "p99": 0.0})
                t["rows"] += 1
                t["under"] += r["under_lower_layers"]
                t["layer_x"] += r["layer_crossings"]
                t["inside"] += r["inside_count"]
                t["body_x"] += r["edge_crossings"]
                t["flipped"] += r["flipped_faces"]
                t["strain_max"] = max(t["strain_max"], r["strain_max"])
                t["p99"] += r["strain_p99"]
                rows.append([pname, inner, Path(outer).stem, variant, r["under_lower_layers"], r["layer_crossings"],
                             r["inside_count"], r["edge_crossings"], r["flipped_faces"], f"{r['strain_p99']:.3f}",
                             f"{r['strain_max']:.2f}", f"{r['time_ms']:.1f}"])
    print(table(rows, ["pose", "inner", "outer", "variant", "under inner", "through inner", "inside body",
                       "through body", "flipped", "strain p99", "strain max", "outer ms"]))
    print()
    print(table([[v, t["rows"], t["under"], t["layer_x"], t["inside"], t["body_x"], t["flipped"],
                  f"{t['p99'] / max(t['rows'], 1):.3f}", f"{t['strain_max']:.2f}"] for v, t in totals.items()],
                ["variant", "rows", "under inner", "through inner", "inside body", "through body", "flipped",
                 "strain p99 mean", "strain max"]))
    write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Measure MakeHuman body shapes: rest-pose fit against the default shape, then check and fix in a pose.

For each shape (the 20 development shapes by default, or ``--body TEXT`` repeated, e.g. for shapes
held back from development) the built-in avatar gets the shape, the two CC0 ``.mhclo`` garments are
refitted onto it, and the script measures

* the bone heads outside the body (rest pose, winding number; ``Root`` sits on the floor by design);
* per garment, the p95 distance to the body and the fraction inside, against the default shape
  (``kisekae.qa.shape_fit``: within 1 cm and at most 1 percentage point more inside);
* ``kisekae check`` before and after ``kisekae.fit.fix`` in ``--pose`` (default crouch).

It prints Markdown tables (the ones in docs/avatar.md) and, with ``--json``, writes every number.

    python scripts/measure_body_shapes.py [--body "gender=0,weight=1" ...] [--pose crouch] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kisekae.avatar import load_builtin_avatar
from kisekae.avatar.poses import named_pose
from kisekae.avatar.shape import BodyShape, parse_body
from kisekae.data import SAMPLE_GARMENTS, sample_path
from kisekae.errors import KisekaeError
from kisekae.fit.fix import fix_pose
from kisekae.io.mhclo import load_mhclo
from kisekae.qa.check import check_pose
from kisekae.qa.shape_fit import compare_fit, rest_fit

#: 20 development shapes spanning the macro space: every single-parameter corner, mixes, regional targets.
SHAPES = [
    "default", "weight=0", "weight=1", "muscle=0", "muscle=1", "age=0.1875", "age=1", "gender=0", "gender=1",
    "gender=0,weight=1", "gender=1,weight=0", "gender=1,muscle=1,weight=0.7",
    "gender=0,muscle=0,weight=0.8,belly=0.5", "gender=0.1,age=1,weight=0.7", "gender=0.7,height=1,proportions=1",
    "gender=0,breast_size=1,buttocks=0.8,upperleg_fat=0.6", "height=0,proportions=0", "gender=1,age=0.3,weight=0.3",
    "gender=0,breast_size=0,breast_firmness=1,upperarm_fat=1", "gender=1,muscle=0,weight=1,belly=1",
]
#: Beyond the 20: MakeHuman's one-year-old and a combined extreme.
EXTREMES = ["age=0", "gender=0,age=1,weight=1,muscle=0"]


def shaped(text: str):
    av = load_builtin_avatar(shape=BodyShape() if text == "default" else parse_body(text))
    for g in SAMPLE_GARMENTS:
        av.add_garment(load_mhclo(sample_path(g + ".mhclo"), av))
    return av


def measure(text: str, pose_name: str, reference: dict | None) -> dict:
    av = shaped(text)
    rest = rest_fit(av)
    garments = list(av.garments)
    pose = named_pose(av.skeleton, pose_name)
    t = time.perf_counter()
    before = check_pose(av, pose, garments)
    fixed = fix_pose(av, pose, garments)
    after = check_pose(av, pose, garments, posed_garments={k: v.positions for k, v in fixed.items()})
    rec = {"shape": text, "rest": rest, "fix_s": time.perf_counter() - t,
           "before": {r["garment"]: {k: r[k] for k in ("inside_count", "inside_fraction", "edge_crossings")}
                      for r in before},
           "after": {r["garment"]: {k: r[k] for k in ("inside_count", "inside_fraction", "edge_crossings")}
                     for r in after}}
    if reference is not None:
        rec["against_default"] = compare_fit(rest, reference)
    return rec


def tables(records: list, pose: str) -> str:
    garments = list(records[0]["rest"]["garments"])
    short = {"tights": "tights", "skirt": "skirt", "female_casualsuit01": "casualsuit", "male_worksuit01": "worksuit"}
    out = ["| shape | height m | heads outside | " + " | ".join(
        f"{short.get(g, g)} p95 mm (Δ) / inside % (Δ pp)" for g in garments) + " | within limits |",
        "|---|---|---|" + "---|" * len(garments) + "---|"]
    for r in records:
        cells = []
        for g in garments:
            s = r["rest"]["garments"][g]
            d = r.get("against_default", {}).get(g)
            delta = f" ({d['p95_change_m'] * 1e3:+.1f})" if d else ""
            di = f" ({d['inside_change'] * 100:+.2f})" if d else ""
            cells.append(f"{s['p95_distance_m'] * 1e3:.1f}{delta} / {s['inside_fraction'] * 100:.2f}{di}")
        outside = [n for n in r["rest"]["heads_outside"] if n != "Root"]
        ok = all(d["ok"] for d in r.get("against_default", {}).values())
        out.append(f"| `{r['shape']}` | {r['rest']['height_m']:.3f} | {', '.join(outside) or 'none'} | "
                   + " | ".join(cells) + f" | {'yes' if ok else 'no'} |")
    out += ["", f"| shape ({pose}) | " + " | ".join(
        f"{short.get(g, g)} inside before → after, crossings before → after" for g in garments) + " | check+fix s |",
        "|---|" + "---|" * len(garments) + "---|"]
    for r in records:
        cells = [f"{r['before'][g]['inside_count']} → {r['after'][g]['inside_count']}, "
                 f"{r['before'][g]['edge_crossings']} → {r['after'][g]['edge_crossings']}" for g in garments]
        out.append(f"| `{r['shape']}` | " + " | ".join(cells) + f" | {r['fix_s']:.1f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--body", action="append", metavar="TEXT", help="a shape to measure (repeatable); default: "
                    "the 20 development shapes and two extremes")
    ap.add_argument("--pose", default="crouch", help="named pose for the check and the fix (default crouch)")
    ap.add_argument("--json", type=Path, help="write every number to this JSON file")
    ap.add_argument("--force", action="store_true", help="overwrite an existing --json file")
    args = ap.parse_args(argv)
    try:
        if args.json and args.json.exists() and not args.force:
            raise KisekaeError("file exists; pass --force to overwrite it", args.json)
        shapes = args.body or SHAPES + EXTREMES
        for text in shapes:
            if text != "default":
                parse_body(text)
        reference = rest_fit(shaped("default"))
        records = []
        for text in shapes:
            records.append(measure(text, args.pose, reference))
            print(f"measured {text}", file=sys.stderr)
    except KisekaeError as exc:
        print(f"measure_body_shapes: error: {exc}", file=sys.stderr)
        return 2
    print(tables(records, args.pose))
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

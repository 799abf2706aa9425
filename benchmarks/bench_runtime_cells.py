#!/usr/bin/env python3
"""The per-frame path over many cells: vertices inside, edges through the body and the garment's shape, per variant.

A *cell* is one (pose, garment). By default: the nine named poses and the eight held-out poses of
``benchmarks/poses``, times the built-in tights and skirt and the two sample ``.mhclo`` suits (68 cells), each pose
warmed up from rest as ``kisekae check --runtime`` does. Each *variant* is a set of ``kisekae check`` flags:

- ``default``: ``kisekae check --runtime`` as it ships (the edge lift and unflip, capped at ``FINISH_STEP`` a frame);
- ``no-lift``: ``--no-edge-lift`` (the path before 2026-12-04);
- ``uncapped``: ``--finish-step none``;
- ``no-correctives``: ``--garment-correctives off`` (plain skinning as the start; the path before 2026-12-05);
- ``no-floor``: ``--compression-limit 0`` (clinging cloth shrinks freely; the path before 2026-12-06);
- ``step=M``: ``--finish-step M`` (metres), e.g. ``step=0.002``;
- ``floor=C``: ``--compression-limit C``, e.g. ``floor=0.1``;
- ``follow`` / ``no-follow``: ``--body-follow`` / ``--no-body-follow`` (the garment starts from what the body does
  beyond skinning);
- ``depth-bound`` / ``no-depth-bound``: ``--depth-bound`` / ``--no-depth-bound`` (the push trusts no candidate beyond
  the body's depth bound, :mod:`kisekae.fit.depth_bound`);
- ``no-part-contact``: ``--no-part-contact`` (the body without the contact between parts that share no joint,
  :mod:`kisekae.avatar.part_contact`: the body before 2026-12-07);
- ``no-normal-guard``: ``--no-normal-guard`` (the body normals sum every triangle, also those the pose turned inside
  out: the path before 2026-12-07, :mod:`kisekae.geom.guarded_normals`);
- ``no-self-layers``: ``--no-self-layers`` (a garment's outer sheets left to the body push alone, :mod:`kisekae.fit.self_layers`:
  the path before 2026-12-08);
- ``body=FILE``: ``--correctives FILE`` (another bake of the body's correctives), ``garment=FILE``:
  ``--garment-correctives FILE``;
- variants joined by ``+`` take all their flags, e.g. ``follow+body=kv.npz``.

Printed per variant: cells, the totals of vertices inside, edges through the body, flipped faces, folded pairs and
self-crossings, the largest strain and the mean strain p99, and the wall time of the whole check; with ``--cells``
also one row per cell and variant. These are the numbers docs/fit.md quotes ("The cap, measured"); the test suite
checks the pieces, this shows the whole. Quality, not speed: the wall time includes the checks' own measurements.

Run: ``.venv/bin/python benchmarks/bench_runtime_cells.py [--variants default,no-lift] [--poses crouch,sit]
[--garments tights,skirt] [--cells] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import json_out, table, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NAMED = ("stand", "leg_raise", "crouch", "knee_bend", "sit", "lunge", "arms_up", "arms_forward", "twist")
SAMPLES = ROOT / "src" / "kisekae" / "data" / "samples"
GARMENTS = ("tights", "skirt", str(SAMPLES / "female_casualsuit01.mhclo"), str(SAMPLES / "male_worksuit01.mhclo"))
FIXED = {"default": [], "no-lift": ["--no-edge-lift"], "uncapped": ["--finish-step", "none"],
         "no-correctives": ["--garment-correctives", "off"], "no-floor": ["--compression-limit", "0"],
         "follow": ["--body-follow"], "no-follow": ["--no-body-follow"],
         "depth-bound": ["--depth-bound"], "no-depth-bound": ["--no-depth-bound"],
         "no-normal-guard": ["--no-normal-guard"], "no-part-contact": ["--no-part-contact"],
         "no-self-layers": ["--no-self-layers"]}


#: Variants of the form ``KEY=VALUE`` and the flag each gives.
VALUED = {"step": "--finish-step", "floor": "--compression-limit", "body": "--correctives",
          "garment": "--garment-correctives"}


def variant_flags(name: str) -> list:
    """``kisekae check`` flags of a variant name (module docstring); ``+`` joins variants."""
    if "+" in name:
        return [f for part in name.split("+") for f in variant_flags(part)]
    if name in FIXED:
        return FIXED[name]
    key, eq, value = name.partition("=")
    if eq and key in VALUED:
        return [VALUED[key], value]
    raise SystemExit(f"bench_runtime_cells: unknown variant {name!r} (default, no-lift, uncapped, no-correctives, "
                     "no-floor, follow, no-follow, depth-bound, no-depth-bound, no-normal-guard, no-part-contact, no-self-layers, step=M, floor=C, body=FILE, garment=FILE, joined by +)")


def pose_flags(poses) -> list:
    """``--pose``/``--pose-file`` flags: a name of a named pose, else a file of ``benchmarks/poses`` or a path."""
    out = []
    for p in poses:
        held_out = ROOT / "benchmarks" / "poses" / f"{p}.json"
        if p in NAMED:
            out += ["--pose", p]
        elif held_out.exists():
            out += ["--pose-file", str(held_out)]
        else:
            out += ["--pose-file", p]
    return out


def run_variant(flags, poses, garments) -> tuple:
    """(runtime records, wall seconds) of one ``kisekae check --runtime`` over the cells."""
    from kisekae.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "check.json"
        args = ["check", "--runtime", *pose_flags(poses), *[a for g in garments for a in ("--garment", g)],
                *flags, "--json", str(out)]
        said = io.StringIO()
        t = time.perf_counter()
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):  # the check's own table and notes
            code = main(args)
        wall = time.perf_counter() - t
        if code != 0:
            raise SystemExit(f"bench_runtime_cells: kisekae {' '.join(args)} failed ({code}):\n{said.getvalue()}")
        data = json.loads(out.read_text())
    recs = data["records"] if isinstance(data, dict) else data
    return [r for r in recs if r.get("stage") == "runtime"], wall


def summary(records) -> dict:
    """Totals of one variant's runtime records."""
    return {"cells": len(records), "inside": sum(r["inside_count"] for r in records),
            "crossings": sum(r["edge_crossings"] for r in records),
            "flipped": sum(r.get("flipped_faces", 0) for r in records),
            "folded": sum(r.get("folded_pairs", 0) for r in records),
            "self_crossings": sum(r.get("self_crossings", 0) for r in records),
            "strain_max": max((r.get("strain_max", 0.0) for r in records), default=0.0),
            "strain_p99_mean": sum(r.get("strain_p99", 0.0) for r in records) / max(len(records), 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="default,no-lift,uncapped", help="comma-separated variants")
    ap.add_argument("--poses", default=",".join(NAMED) + ",bow,deep_squat,high_kick,kneel,reach,side_bend,side_split,"
                    "wide_squat", help="comma-separated named poses, benchmarks/poses names or pose files")
    ap.add_argument("--garments", default=",".join(GARMENTS), help="comma-separated garment names or .mhclo files")
    ap.add_argument("--cells", action="store_true", help="also print one row per cell and variant")
    ap.add_argument("--json", metavar="FILE", help="write the totals and records of every variant (not overwritten)")
    args = ap.parse_args(argv)
    json_out(args.json, "bench_runtime_cells")
    poses, garments = args.poses.split(","), args.garments.split(",")
    results, rows, cell_rows = {}, [], []
    for name in args.variants.split(","):
        flags = variant_flags(name)
        print(f"  {name}: kisekae check --runtime {' '.join(flags)} over {len(poses)} poses x {len(garments)} "
              "garments ...", file=sys.stderr, flush=True)
        records, wall = run_variant(flags, poses, garments)
        s = summary(records)
        results[name] = {"flags": flags, "wall_s": wall, **s, "records": records}
        rows.append([name, s["cells"], s["inside"], s["crossings"], s["flipped"], s["folded"], s["self_crossings"],
                     f"{s['strain_max']:.2f}", f"{s['strain_p99_mean']:.4f}", f"{wall:.1f}"])
        cell_rows += [[name, r["pose"], Path(r["garment"]).stem, r["inside_count"], r["edge_crossings"],
                       r.get("flipped_faces", 0), f"{r.get('strain_max', 0.0):.2f}"] for r in records]
    print(table(rows, ["variant", "cells", "inside", "crossings", "flipped", "folded", "self-x", "strain max",
                       "strain p99 mean", "wall s"]))
    if args.cells:
        print()
        print(table(cell_rows, ["variant", "pose", "garment", "inside", "crossings", "flipped", "strain max"]))
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The body against itself over many poses: plain skinning, the previous joint planes and the default body.

Quality, not speed. For each pose, the ``kisekae check --self-contact`` numbers (body vertices buried in another
part, body edges through body triangles, the volume change) of three bodies in the same run:

- ``plain``: linear blend skinning;
- ``child planes``: the default body (packaged correctives, then the joint planes) with every joint's rest plane
  across its child bone (``rest_bend_limit=0``: the planes before 2026-12-07);
- ``default``: the body of the command line (a joint bent at rest takes the bisector of the rest bend,
  :func:`kisekae.avatar.contact.rest_normal`).

and the default body's largest move from plain skinning. Poses: the named poses, ``benchmarks/poses`` (held out) and
``benchmarks/poses_more`` on the ``game_engine`` rig; the packaged clip's frames and the deep poses on ``cmu_mb``.
docs/contact.md ("Joints bent at rest") quotes this table.

Run: ``.venv/bin/python benchmarks/bench_body_poses.py [--rig game_engine] [--poses crouch,sit] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
POSE_DIRS = (ROOT / "benchmarks" / "poses", ROOT / "benchmarks" / "poses_more")
CLIP = ROOT / "src" / "kisekae" / "data" / "samples" / "cmu_35_01_excerpt.bvh"
#: The poses measured on ``cmu_mb`` besides the clip's frames.
CMU_POSES = ("crouch", "sit", "deep_squat", "run_stride")


def all_poses(skeleton, rig: str, only=None) -> list:
    """``[(name, Pose)]`` of the benchmark on ``rig`` (module docstring), or those named in ``only``."""
    from kisekae.avatar.poses import NAMED_POSES, load_pose_file, named_pose
    from kisekae.io.bvh import load_bvh

    files = {p.stem: p for d in POSE_DIRS for p in sorted(d.glob("*.json"))}
    names = list(NAMED_POSES) + list(files)
    out = []
    if rig == "cmu_mb" and only is None:
        out += [(f"clip frame {i}", p) for i, p in enumerate(load_bvh(CLIP, skeleton).poses)]
        names = [n for n in names if n in CMU_POSES]
    for n in names if only is None else only:
        out.append((n, load_pose_file(skeleton, files[n]) if n in files else named_pose(skeleton, n)))
    return out


def bodies(rig: str) -> dict:
    """``{"plain", "child planes", "default"}`` avatars on ``rig``."""
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.contact import GAP, apply_contact

    plain = load_builtin_avatar(rig)
    return {"plain": plain, "child planes": apply_contact(plain, GAP, rest_bend_limit=0.0),
            "default": apply_contact(plain, GAP)}


def run(rigs=("game_engine", "cmu_mb"), only=None) -> list:
    """One record per (rig, pose): each body's buried / crossings / volume change, and the default body's largest move
    from plain skinning (m)."""
    from kisekae.qa.check import body_self_contact

    records = []
    for rig in rigs:
        avatars = bodies(rig)
        measure = body_self_contact(avatars["plain"])
        sk = avatars["plain"].skeleton
        for name, pose in all_poses(sk, rig, only):
            m = pose.skinning_matrices(sk)
            rec = {"rig": rig, "pose": name}
            for label, av in avatars.items():
                x = av.body.posed(m)
                got = measure.measure(x)
                rec[label] = {k: got[k] for k in ("body_buried", "body_self_crossings", "body_volume_change")}
            moved = avatars["default"].body.posed(m) - avatars["plain"].body.posed(m)
            rec["default_max_move_m"] = float(np.linalg.norm(moved, axis=1).max())
            records.append(rec)
    return records


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rig", choices=("game_engine", "cmu_mb"), action="append", help="rig (repeatable; default both)")
    ap.add_argument("--poses", help="comma-separated pose names (named, or a file stem of benchmarks/poses*)")
    ap.add_argument("--json", type=Path, help="also write the records to this file (not overwritten)")
    args = ap.parse_args(argv)
    if args.json and args.json.exists():
        raise SystemExit(f"bench_body_poses: {args.json} exists; not overwritten")
    records = run(tuple(args.rig or ("game_engine", "cmu_mb")), args.poses.split(",") if args.poses else None)

    def cell(r, label):
        b = r[label]
        return f"{b['body_buried']} / {b['body_self_crossings']}"

    rows = [[r["rig"], r["pose"], cell(r, "plain"), cell(r, "child planes"), cell(r, "default"),
             f"{100 * r['default']['body_volume_change']:+.2f}", f"{1e3 * r['default_max_move_m']:.0f}"]
            for r in records]
    total = {k: np.sum([[r[k]["body_buried"], r[k]["body_self_crossings"]] for r in records], axis=0)
             for k in ("plain", "child planes", "default")}
    rows.append(["all", f"{len(records)} poses", *(f"{a} / {b}" for a, b in total.values()), "", ""])
    print(table(rows, ["rig", "pose", "plain: buried / crossings", "child planes", "default", "volume %",
                       "max move mm"]))
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

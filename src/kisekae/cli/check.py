"""``kisekae check``: how much of each garment is inside the posed body."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .common import add_avatar_args, load_avatar, load_poses


def register(sub):
    p = sub.add_parser("check", help="measure garment vertices inside the body, depth and edge crossings",
                       description="For each (pose, garment): count and fraction of garment vertices inside the "
                                   "posed body (generalized winding number), their max and p95 depth, and garment "
                                   "edges crossing body triangles.")
    p.add_argument("--avatar", metavar="FILE", help="avatar file (.glb/.gltf/.vrm) instead of the built-in one")
    add_avatar_args(p)
    p.add_argument("--json", metavar="FILE", help="write one record per (pose, garment) as a JSON list")
    p.add_argument("--force", action="store_true", help="overwrite an existing --json file")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from ..errors import KisekaeError
    from ..qa.check import check_pose, format_table, json_record

    if args.json and Path(args.json).exists() and not args.force:
        raise KisekaeError("file exists; pass --force to overwrite it", args.json)
    avatar, garments = load_avatar(args)
    poses = load_poses(args, avatar)
    records = []
    for pose in poses:
        records.extend(check_pose(avatar, pose, garments))
    print(format_table(records))
    if args.json:
        Path(args.json).write_text(json.dumps([json_record(r) for r in records], indent=1))
        print(f"wrote {args.json}", file=sys.stderr)
    return 0

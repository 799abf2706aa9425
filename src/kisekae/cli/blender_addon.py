"""``kisekae blender-addon``: build the Blender extension zip."""

from __future__ import annotations

import sys

from .common import add_force_arg


def register(sub):
    from ..blender.build import PLATFORMS

    p = sub.add_parser("blender-addon", help="build the Blender extension (Blender 4.2+) as an installable zip",
                       description="Build OUT/kisekae-VERSION.zip: the kisekae extension for Blender 4.2 and later "
                                   "(tension maps, fix clipping, check), with kisekae and its Numba, llvmlite and "
                                   "SciPy wheels bundled. Install it in Blender with Get Extensions > Install from "
                                   "Disk.")
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="folder to write the zip into")
    p.add_argument("--platform", action="append", choices=sorted(PLATFORMS),
                   help="Blender platform to bundle wheels for (repeatable; default: this machine's)")
    p.add_argument("--wheels-from", metavar="DIR",
                   help="take the Numba, llvmlite and SciPy wheels from this folder instead of the package index")
    add_force_arg(p, "an existing extension zip")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from ..blender.build import build_extension

    path = build_extension(args.out, platforms=args.platform, force=args.force, wheels_from=args.wheels_from)
    print(f"wrote {path}", file=sys.stderr)
    return 0

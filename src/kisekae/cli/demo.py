"""``kisekae demo``: everything on the built-in avatar, written to demo-out/index.html."""

from __future__ import annotations

import time

from .common import add_body_arg, add_contact_args, add_force_arg, body_shape, check_outputs, contact_gap


def register(sub):
    p = sub.add_parser("demo", help="run everything on the built-in avatar and write an HTML report")
    p.add_argument("--out", default="demo-out", help="output folder (default: demo-out)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    add_body_arg(p)
    add_contact_args(p)
    add_force_arg(p, "files in a non-empty --out folder")
    p.set_defaults(func=run)
    return p


def add_render_sections() -> None:
    """Append the renderer's sections (pictures, poke-through pixels, tension, animation) to the demo once."""
    from ..app import demo
    from ..app.report import SECTIONS as RENDER_SECTIONS

    have = {fn for _, fn in demo.SECTIONS}
    demo.SECTIONS.extend(item for item in RENDER_SECTIONS if item[1] not in have)


def run(args) -> int:
    from ..app.demo import run_demo

    # The report's files depend on its sections, so the demo claims its whole folder: new or empty.
    check_outputs(whole_folders=[args.out], force=args.force)
    shape, gap = body_shape(args), contact_gap(args)
    add_render_sections()
    t = time.perf_counter()
    index = run_demo(args.out, progress=not args.no_progress, shape=shape, contact=gap,
                     part_contact=getattr(args, "part_contact", True))
    print(f"wrote {index} in {time.perf_counter() - t:.1f} s")
    return 0

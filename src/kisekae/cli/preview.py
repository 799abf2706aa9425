"""``kisekae preview``: a window with sliders (push-out, tension, hits) over the rendered avatar."""

from __future__ import annotations

from pathlib import Path


def register(sub):
    from ..app.preview import SLIDERS
    from .common import add_contact_args, add_force_arg

    names = ", ".join(s.name for s in SLIDERS)
    p = sub.add_parser("preview", help="interactive preview window with parameter sliders (needs a display)",
                       description="Open a window showing the built-in avatar with its garments fixed by the push-out, "
                                   "the skin's tight look, the tension map through the wrinkle blend and wound hits, "
                                   f"with a slider per parameter ({names}). Without a display, --snapshot renders "
                                   "one frame to a PNG instead.")
    p.add_argument("--pose", default="crouch", help="named pose (default: crouch)")
    p.add_argument("--view", default="three_quarter", help="camera view (default: three_quarter)")
    p.add_argument("--preset", default="realistic", choices=["realistic", "anime"], help="look preset")
    p.add_argument("--size", default="960x720", help="frame size WxH (default: 960x720)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help=f"initial slider value in display units (repeatable); sliders: {names}")
    p.add_argument("--snapshot", metavar="PNG", help="render one frame to this file and exit (no window)")
    p.add_argument("--no-cull", dest="cull", action="store_false",
                   help="draw the whole body under the garments (default: leave out the skin they cover, as the "
                        "engine glue does with NAME.covered.json from kisekae fit)")
    add_contact_args(p)
    add_force_arg(p, "an existing --snapshot file")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import sys

    from ..errors import KisekaeError
    from ..app.preview import PreviewModel, display_available, run_window
    from ..avatar.builtin import load_builtin_avatar
    from .common import check_outputs, with_contact

    if args.snapshot:
        from PIL import Image

        if Image.registered_extensions().get(Path(args.snapshot).suffix.lower()) not in Image.SAVE:
            raise KisekaeError("unknown picture type; name the file .png (or .jpg, .bmp, .tif)", args.snapshot)
        check_outputs([args.snapshot], force=args.force)
    else:
        ok, why = display_available()
        if not ok:
            raise KisekaeError(f"{why}: the preview window needs a desktop session; render a still with "
                               "`kisekae preview --snapshot out.png` or run `kisekae demo`", "preview")
    model = PreviewModel(with_contact(load_builtin_avatar(), args), pose=args.pose, view=args.view, size=args.size,
                         preset=args.preset, cull=args.cull)
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep:
            raise KisekaeError(f"expected NAME=VALUE, got {item!r}", "--set")
        try:
            model.set(name.strip(), float(value))
        except ValueError:
            raise KisekaeError(f"not a number: {value!r}", f"--set {name}") from None
    if args.snapshot:
        Image.fromarray(model.frame()).save(args.snapshot)
        print(f"wrote {args.snapshot} ({model.status()})", file=sys.stderr)
        return 0
    run_window(model)
    return 0

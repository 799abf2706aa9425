"""``kisekae demo``: run everything on the built-in avatar and write ``demo-out/index.html``.

The page is assembled from *sections*: functions ``section(ctx) -> str`` (an HTML fragment)
registered in :data:`SECTIONS`. ``ctx`` is a dict with ``out`` (the output folder, a Path),
``avatar`` (game_engine rig), ``timings`` (name -> seconds, shown at the end) and anything a
section stores for later ones. Each section is timed and shown with a progress bar.
"""

from __future__ import annotations

import html
import time
from pathlib import Path

from tqdm import tqdm


def section_check(ctx) -> str:
    """The penetration table over the verification poses and the BVH excerpt frames."""
    from .avatar.poses import VERIFICATION_POSES, named_pose
    from .qa.check import check_pose, format_table

    avatar = ctx["avatar"]
    records = []
    for name in VERIFICATION_POSES:
        records.extend(check_pose(avatar, named_pose(avatar.skeleton, name), ["tights", "skirt"]))
    ctx["check_records"] = records
    return "<h2>Penetration before fixing</h2><pre>" + html.escape(format_table(records)) + "</pre>"


#: (title, function) pairs run in order.
SECTIONS = [("penetration check", section_check)]


def run_demo(out="demo-out", *, progress: bool = True, shape=None) -> Path:
    """Run every section and write ``out/index.html``; ``shape`` (a BodyShape) shapes the built-in avatar."""
    from . import __version__
    from .avatar.builtin import ATTRIBUTION, load_builtin_avatar

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ctx = {"out": out, "avatar": load_builtin_avatar(shape=shape), "timings": {}, "progress": progress}
    parts = []
    bar = tqdm(SECTIONS, desc="kisekae demo", unit="step", disable=not progress)
    for title, fn in bar:
        bar.set_postfix_str(title)
        t = time.perf_counter()
        parts.append(fn(ctx))
        ctx["timings"][title] = time.perf_counter() - t
    body = f" (body shape {html.escape(shape.label())})" if shape is not None else ""
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{v:.2f} s</td></tr>" for k, v in ctx["timings"].items())
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>kisekae demo</title>"
        "<style>body{font-family:sans-serif;max-width:1200px;margin:auto}img{max-width:100%}"
        "pre{background:#f4f4f4;padding:8px;overflow-x:auto}td{padding:2px 8px}</style></head><body>"
        f"<h1>kisekae {__version__} demo</h1><p>Built-in avatar{body}: {html.escape(ATTRIBUTION)}</p>"
        + "".join(parts)
        + f"<h2>Timings</h2><table>{rows}</table></body></html>"
    )
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index

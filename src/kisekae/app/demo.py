"""``kisekae demo``: run everything on the built-in avatar and write ``demo-out/index.html``.

The page is assembled from *sections*: functions ``section(ctx) -> str`` (an HTML fragment)
registered in :data:`SECTIONS`. ``ctx`` is a dict with ``out`` (the output folder, a Path),
``avatar`` (game_engine rig, on the joint-plane contact body unless the demo runs with plain skinning),
``contact`` (the contact gap in metres, None for plain skinning: sections that load avatars of their own
pose them the same way, :func:`kisekae.avatar.contact.apply_contact`), ``timings`` (name -> wall seconds) and ``cpu_timings`` (name -> CPU
seconds of this process, all its threads), both shown at the end, and anything a section stores
for later ones. Each section is timed and shown with a progress bar. A section whose first call
pays a one-time cost (Numba compiling or loading its kernels) does it first, untimed by its own
numbers, and stores ``ctx["warmup"] = (wall s, CPU s)``, or ``(wall s, CPU s, what)`` for a cost of
another kind (a bake); the timings table then shows it as a row of its own, labelled, apart from the
section's time.
"""

from __future__ import annotations

import html
import time
from pathlib import Path

from tqdm import tqdm

from ..render.htmlpage import html_page, scroll_box


def section_check(ctx) -> str:
    """The penetration table over the verification poses and the BVH excerpt frames."""
    from ..avatar.poses import VERIFICATION_POSES, named_pose
    from ..qa.check import check_pose, format_table

    avatar = ctx["avatar"]
    garments = ["tights", "skirt"]
    # warm-up: the first check compiles (or loads from Numba's cache) the kernels, seconds against
    # milliseconds for every later check; it is not one of the timed checks below
    t, c = time.perf_counter(), time.process_time()
    check_pose(avatar, named_pose(avatar.skeleton, VERIFICATION_POSES[0]), garments)
    ctx["warmup"] = (time.perf_counter() - t, time.process_time() - c)
    records = []
    for name in VERIFICATION_POSES:
        records.extend(check_pose(avatar, named_pose(avatar.skeleton, name), garments))
    ctx["check_records"] = records
    return ("<h2>Penetration before fixing</h2><p>Times (ms) are per check after a first, untimed warm-up check "
            f"({ctx['warmup'][0]:.2f} s: Numba compiling or loading its kernels, once per process).</p><pre>"
            + html.escape(format_table(records)) + "</pre>")


#: (title, function) pairs run in order.
SECTIONS = [("penetration check", section_check)]


def timings_table(rows) -> str:
    """HTML table of timings with a header and a total row.

    Parameters
    ----------
    rows : sequence of (str, float, float)
        ``(step, wall seconds, CPU seconds)``.

    Returns
    -------
    str
        A ``<table>`` inside a box that scrolls sideways on a narrow screen.
    """
    body = "".join(f"<tr><td>{html.escape(name)}</td><td class='num'>{wall:.2f}</td><td class='num'>{cpu:.2f}</td>"
                   "</tr>" for name, wall, cpu in rows)
    total_wall, total_cpu = sum(r[1] for r in rows), sum(r[2] for r in rows)
    return scroll_box(
        "<table><thead><tr><th>step</th><th class='num'>wall s</th><th class='num'>CPU s</th></tr></thead>"
        f"<tbody>{body}</tbody><tfoot><tr><th>total</th><td class='num'>{total_wall:.2f}</td>"
        f"<td class='num'>{total_cpu:.2f}</td></tr></tfoot></table>")


def run_demo(out="demo-out", *, progress: bool = True, shape=None, contact=True, part_contact: bool = True) -> Path:
    """Run every section of :data:`SECTIONS` and write ``out/index.html``.

    Parameters
    ----------
    out : str or Path
        Output folder (created when missing); pictures go to ``out/img``.
    progress : bool
        Show progress bars on stderr.
    shape : kisekae.avatar.BodyShape, optional
        Shapes the built-in avatar.
    contact : bool, float or None
        The body every section poses (:func:`kisekae.avatar.contact.contact_gap`): True (default) the joint-plane
        contact body with the default gap, a number that gap in metres, False or None plain linear blend skinning
        (``kisekae demo --no-contact``).
    part_contact : bool
        With the contact body, its last step, the contact between parts that share no joint
        (:mod:`kisekae.avatar.part_contact`; ``kisekae demo --no-part-contact`` turns it off).

    Returns
    -------
    Path
        The page.
    """
    from .. import __version__
    from ..avatar.builtin import ATTRIBUTION, load_builtin_avatar
    from ..avatar.contact import apply_contact, contact_gap

    contact = contact_gap(contact, "contact")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ctx = {"out": out, "avatar": apply_contact(load_builtin_avatar(shape=shape), contact, part_contact=part_contact),
           "contact": contact, "part_contact": bool(part_contact), "timings": {}, "cpu_timings": {},
           "progress": progress}
    parts, rows = [], []
    bar = tqdm(SECTIONS, desc="kisekae demo", unit="step", disable=not progress)
    for title, fn in bar:
        bar.set_postfix_str(title)
        ctx.pop("warmup", None)
        t, c = time.perf_counter(), time.process_time()
        parts.append(fn(ctx))
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        warm = ctx.pop("warmup", None)
        if warm is not None:
            what = warm[2] if len(warm) > 2 else "Numba compiling or loading its kernels"
            name = f"{title}: one-time warm-up ({what})"
            rows.append((name, warm[0], warm[1]))
            wall, cpu = wall - warm[0], cpu - warm[1]
        rows.append((title, wall, cpu))
    for name, wall, cpu in rows:
        ctx["timings"][name], ctx["cpu_timings"][name] = wall, cpu
    body = f" (body shape {html.escape(shape.label())})" if shape is not None else ""
    parts_step = (" and the contact between parts that share no joint" if ctx["part_contact"]
                  else " (without the contact between parts, <code>--no-part-contact</code>)")
    posed = ("Bodies are posed as the command line poses them: pose-space correctives, linear blend skinning, the "
             f"joint-plane contact (gap {1000 * contact:g} mm){parts_step} (docs/contact.md; <code>--no-contact</code>: "
             "plain linear blend skinning)." if contact is not None
             else "Bodies are posed with plain linear blend skinning (<code>--no-contact</code>).")
    page = html_page(
        "kisekae demo",
        f"<h1>kisekae {__version__} demo</h1><p>Built-in avatar{body}: {html.escape(ATTRIBUTION)}</p><p>{posed}</p>"
        + "".join(parts)
        + "<h2>Timings</h2><p>Wall and CPU seconds per step (CPU: this process, all its threads).</p>"
        + timings_table(rows))
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index

"""Demo report section: one outfit on five MakeHuman body shapes in the crouch, before and after the fix.

Follows :mod:`kisekae.app.demo`'s section contract (``section_body_shapes(ctx) -> str``). The shapes are
fixed (:data:`DEMO_BODIES`, or ``ctx["body_shapes"]``), whatever ``--body`` the demo runs with, so
the page always shows the same spread; the outfit is the built-in ``tights`` bodysuit, which follows each shape by construction.
"""

from __future__ import annotations

import html

from ..render.camera import VIEWS, named_camera
from ..render.poke import mark_pixels, poke_through
from ..render.renderer import default_renderer
from ..render.htmlpage import scroll_box
from ..render.scene import avatar_items, avatar_landmarks
from ..render.sheets import comparison_sheet

#: The five bodies of the section, in parse_body syntax.
DEMO_BODIES = ("gender=0,weight=1", "gender=1,weight=0", "gender=1,muscle=1,weight=0.7", "age=0.1875",
               "gender=0.1,age=1,weight=0.7")
DEMO_OUTFIT = "tights"
DEMO_POSE = "crouch"
CELL = (480, 270)


def body_shape_rows(bodies=DEMO_BODIES, outfit: str = DEMO_OUTFIT, pose_name: str = DEMO_POSE, size=CELL,
                    renderer=None, contact: float | None = None, part_contact: bool = True) -> list:
    """Check, fix and draw ``outfit`` on each body shape in ``pose_name``.

    ``contact`` is the gap of the joint-plane contact body in metres (:func:`kisekae.avatar.contact.apply_contact`;
    ``part_contact`` its last step),
    None (default) for plain linear blend skinning.

    Returns
    -------
    list of dict per body: ``shape`` (text), ``height_m``, ``before`` and ``after`` check records
    (:func:`kisekae.qa.check.check_pose`, arrays dropped), ``view``, ``pixels_before``,
    ``pixels_after`` (poke-through pixels at ``size``) and ``images`` (before, after: (H, W, 3) uint8).
    """
    from ..avatar.builtin import load_builtin_avatar
    from ..avatar.contact import apply_contact
    from ..avatar.poses import named_pose
    from ..avatar.shape import parse_body
    from ..fit.fix import fix_pose
    from ..qa.check import check_pose, json_record

    r = renderer or default_renderer()
    rows = []
    for text in bodies:
        av = apply_contact(load_builtin_avatar(shape=parse_body(text)), contact, part_contact=part_contact)
        pose = named_pose(av.skeleton, pose_name)
        before = check_pose(av, pose, [outfit])[0]
        fixed = {k: v.positions for k, v in fix_pose(av, pose, [outfit]).items()}
        after = check_pose(av, pose, [outfit], posed_garments=fixed)[0]
        lm = avatar_landmarks(av, pose)
        b_body, b_items = avatar_items(av, pose, garments=[outfit])
        a_body, a_items = avatar_items(av, pose, garments=[outfit], positions=fixed)
        cams = {v: named_camera(v, b_body.positions, size[0] / size[1], landmarks=lm) for v in VIEWS}
        counts = {v: poke_through(b_body, [b_items[outfit]], c, (size[0] // 2, size[1] // 2), renderer=r).count
                  for v, c in cams.items()}
        view = max(VIEWS, key=lambda v: (counts[v], v == "three_quarter"))
        images, pixels = [], []
        for body, items in ((b_body, b_items), (a_body, a_items)):
            res = poke_through(body, [items[outfit]], cams[view], size, renderer=r)
            images.append(mark_pixels(r.draw([body, items[outfit]], cams[view], size).rgb, res.mask, grow=1))
            pixels.append(res.count)
        lo, hi = av.body.mesh.bounds()
        rows.append({"shape": text, "height_m": float(hi[1] - lo[1]), "before": json_record(before),
                     "after": json_record(after), "view": view, "pixels_before": pixels[0],
                     "pixels_after": pixels[1], "images": images})
    return rows


def section_body_shapes(ctx) -> str:
    """One outfit on five body shapes in the crouch, before and after the fix."""
    from .report import SHEET_FONT_PX, _img

    rows = body_shape_rows(ctx.get("body_shapes", DEMO_BODIES), contact=ctx.get("contact"),
                           part_contact=ctx.get("part_contact", True))
    ctx["body_shape_rows"] = [{k: v for k, v in row.items() if k != "images"} for row in rows]
    cells = [row["images"] for row in rows]
    captions = [[f"{row['before']['inside_count']} inside, {row['pixels_before']} px",
                 f"{row['after']['inside_count']} inside, {row['pixels_after']} px"] for row in rows]
    sheet = comparison_sheet(cells, row_labels=[row["shape"].replace(",", "\n") for row in rows],
                             col_labels=["before the fix", "after the fix"], cell_width=CELL[0], captions=captions,
                             font_size=SHEET_FONT_PX, title=f"{DEMO_OUTFIT} on five MakeHuman body shapes, {DEMO_POSE}")
    alt = (f"Grid of renders of the {DEMO_OUTFIT} on {len(rows)} MakeHuman body shapes in the {DEMO_POSE}, before "
           "and after the fix, each in its worst view with poke-through pixels in magenta: "
           + "; ".join(f"{row['shape']}: {row['before']['inside_count']} vertices inside and {row['pixels_before']} "
                       f"px before, {row['after']['inside_count']} and {row['pixels_after']} px after "
                       f"({row['view']} view)" for row in rows) + ".")
    table = "".join(
        f"<tr><td><code>{html.escape(row['shape'])}</code></td><td>{row['height_m']:.2f} m</td>"
        f"<td>{row['before']['inside_count']} → {row['after']['inside_count']}</td>"
        f"<td>{row['before']['edge_crossings']} → {row['after']['edge_crossings']}</td>"
        f"<td>{row['after']['flipped_faces']}</td><td>{row['after']['strain_p99']:.2f} / {row['after']['strain_max']:.2f}</td>"
        f"<td>{row['pixels_before']} → {row['pixels_after']} ({html.escape(row['view'])})</td></tr>" for row in rows)
    return ("<h2>One outfit on five body shapes</h2><p>The built-in tights on five MakeHuman body shapes "
            "(<code>kisekae.avatar.shape</code>; skeleton refitted by the rig's joint strategies) in the crouch, "
            "before and after <code>kisekae.fit.fix.fix_pose</code>. Each row uses the view with the most "
            "poke-through pixels before fixing; those pixels are marked in magenta. The fix keeps the result with the "
            "fewest visible defects (vertices inside, edges through the body, flipped faces, spikes), so where the "
            "body overlaps itself it may leave vertices inside rather than crumple the cloth.</p>"
            + scroll_box("<table><thead><tr><th>body</th><th>height</th><th>vertices inside</th><th>edges through "
                         "the body</th><th>flipped faces after</th><th>strain p99 / max after</th>"
                         f"<th>poke-through pixels</th></tr></thead><tbody>{table}</tbody></table>")
            + _img(ctx["out"], "body_shapes_crouch.png", sheet, alt))

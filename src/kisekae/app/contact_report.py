"""Demo report section: the body against itself, plain skinning beside the joint-plane contact.

Follows :mod:`kisekae.app.demo`'s section contract (``section_body_contact(ctx) -> str``). For the crouch and
the sit, close-ups of the knees, hips (the groin) and the left armpit show the body vertices buried inside another
body part (the
``body_buried`` measure of ``kisekae check --self-contact``) as a heat map, under plain linear blend skinning
and with :mod:`kisekae.avatar.contact` applied, with the three self-contact numbers of each.
"""

from __future__ import annotations

import numpy as np

from ..render import materials as M
from ..render.camera import named_camera
from ..render.htmlpage import scroll_box
from ..render.renderer import default_renderer
from ..render.scene import avatar_landmarks, mesh_item
from ..render.sheets import comparison_sheet

#: Poses and close-up views of the section.
CONTACT_POSES = ("crouch", "sit")
CONTACT_VIEWS = ("knees", "hips", "armpits")
CELL = (480, 270)


def body_contact_rows(avatar, poses=CONTACT_POSES, views=CONTACT_VIEWS, size=CELL, renderer=None):
    """Pictures and numbers of plain skinning and the contact body.

    Returns
    -------
    rows : list of lists of (H, W, 3) uint8, one row per pose: per view, plain then contact
    records : list of dict, per pose and body (``"plain"``, ``"contact"``): the self-contact numbers

    ``avatar`` may be plain or already on the contact body (then its gap is the one shown); the plain pictures
    are its plain skinning either way.
    """
    from ..avatar.correctives import blended_rotations
    from ..avatar.poses import named_pose
    from ..qa.check import body_self_contact
    from ..qa.selfcontact import inverted_faces

    r = renderer or default_renderer()
    contact = avatar if avatar.body.deform is not None else avatar.with_body_contact()
    measure = body_self_contact(avatar)
    body = avatar.body
    rows, records = [], []
    for name in poses:
        pose = named_pose(avatar.skeleton, name)
        m = pose.skinning_matrices(avatar.skeleton)
        bodies = {"plain": body.skinned(m),
                  "contact": contact.body.posed(m)}
        blend = blended_rotations(body.skin, m)
        lm = avatar_landmarks(avatar, pose)
        items = {}
        for label, x in bodies.items():
            rec = measure.measure(x)
            rec["body_inverted_faces"] = inverted_faces(x, measure.rest_vertices, measure.faces, blend)
            records.append({"pose": name, "body": label, **{k: v for k, v in rec.items() if k.startswith("body_")}})
            items[label] = mesh_item(body.mesh, x, material=M.heatmap((0.0, 1.0), "inferno"),
                                     attributes={"heat": rec["buried"].astype(np.float32)}, role="body")
        row = []
        for view in views:
            cam = named_camera(view, bodies["plain"], size[0] / size[1], landmarks=lm)
            row += [r.draw([items[label]], cam, size).rgb for label in bodies]
        rows.append(row)
    return rows, records


def section_body_contact(ctx) -> str:
    """Crouch and sit close-ups: buried body vertices under plain skinning and with the contact step."""
    from .report import SHEET_FONT_PX, _img

    rows, records = body_contact_rows(ctx["avatar"])
    cols = [f"{v}: {b}" for v in CONTACT_VIEWS for b in ("plain skinning", "contact")]
    sheet = comparison_sheet(rows, row_labels=list(CONTACT_POSES), col_labels=cols, cell_width=CELL[0],
                             font_size=SHEET_FONT_PX, title="Body vertices buried in another body part (bright), plain skinning vs contact")
    head = ("<tr><th>pose</th><th>body</th><th>buried</th><th>self-crossings</th><th>volume change</th>"
            "<th>inside-out triangles</th><th>dihedral p99</th></tr>")
    body = "".join(f"<tr><td>{r['pose']}</td><td>{r['body']}</td><td class='num'>{r['body_buried']}</td>"
                   f"<td class='num'>{r['body_self_crossings']}</td>"
                   f"<td class='num'>{100 * r['body_volume_change']:+.2f} %</td>"
                   f"<td class='num'>{r['body_inverted_faces']}</td>"
                   f"<td class='num'>{r['body_dihedral_p99_deg']:.1f}°</td></tr>" for r in records)
    nums = "; ".join(f"{r['pose']} {r['body']}: {r['body_buried']} buried" for r in records)
    alt = (f"Close-ups of the {' and '.join(CONTACT_VIEWS)} in the {' and '.join(CONTACT_POSES)}, each under plain "
           f"skinning and with the joint-plane contact; buried body vertices glow ({nums}).")
    return ("<h2>The body against itself</h2><p>Linear blend skinning folds the skin of a bent joint into "
            "itself. <code>kisekae.avatar.contact</code> keeps each side of a joint's bisector plane apart; the "
            "command line, batch catalogues and this demo pose bodies with it by default (<code>--no-contact</code> "
            "for plain skinning). It does not yet remove every fold of a deep crouch, nor give back the "
            "volume skinning loses (docs/contact.md).</p>"
            + scroll_box(f"<table><thead>{head}</thead><tbody>{body}</tbody></table>")
            + _img(ctx["out"], "body_contact.png", sheet, alt))

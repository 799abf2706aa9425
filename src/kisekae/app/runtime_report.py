"""Demo report section: the per-frame garment correction, skinned garments beside two per-frame methods.

Follows :mod:`kisekae.app.demo`'s section contract (``section_runtime(ctx) -> str``). For the crouch and the sit,
close-ups of the knees, hips and the left armpit show the body (as the avatar poses it) in the tights and the skirt: skinned
(no correction), corrected by the stateless surface push (:func:`kisekae.fit.runtime.runtime_pose` with
``method="surface"``) and by the same push carried from the previous frame (``method="carried"``, the default;
each pose warms up from the rest pose), with the numbers of :func:`kisekae.qa.check.check_pose` for each.
(The first per-frame path, ``"capsules"``, leaves 5-10 times more inside: docs/fit.md.)
"""

from __future__ import annotations

import html
import time

from ..render.camera import named_camera
from ..render.htmlpage import scroll_box
from ..render.poke import culled_skin_seen, mark_pixels, poke_through
from ..render.renderer import default_renderer
from ..render.scene import avatar_items, avatar_landmarks, cull_covered, covered_body_faces
from ..render.sheets import comparison_sheet

#: Poses and close-up views of the section.
RUNTIME_POSES = ("crouch", "sit")
RUNTIME_VIEWS = ("knees", "hips", "armpits")
CELL = (480, 270)
#: Garments corrected and measured (those the avatar has).
RUNTIME_GARMENTS = ("tights", "skirt")
#: Garments drawn, one picture row per entry and pose: the skirt hides the tights (and the skin under them) in
#: these close-ups, so the tights are also shown alone.
RUNTIME_LAYERS = (("tights",), ("tights", "skirt"))
#: (column label, :func:`~kisekae.fit.runtime.runtime_pose` method or None for plain skinning), in column order.
RUNTIME_COLUMNS = (("skinned", None), ("surface", "surface"), ("carried", "carried"))
#: The :func:`~kisekae.qa.check.check_pose` numbers of each record.
RUNTIME_FIELDS = ("inside_count", "edge_crossings", "flipped_faces", "strain_p99", "strain_max")


def _garments(avatar) -> list:
    return [g for g in RUNTIME_GARMENTS if g in avatar.garments]


def runtime_rows(avatar, poses=RUNTIME_POSES, views=RUNTIME_VIEWS, size=CELL, renderer=None, layers=RUNTIME_LAYERS):
    """Pictures and numbers of skinned garments, the stateless and the carried surface push.

    Returns
    -------
    rows : list of lists of (H, W, 3) uint8, one row per pose and layer (``layers``: the garments drawn, those the
        avatar has), per view skinned, surface then carried (:data:`RUNTIME_COLUMNS`), the skin poking through
        the drawn garments marked in magenta
    records : list of dict, per pose, column (``"method"``: ``"skinned"``, ``"surface"``, ``"carried"``) and
        garment: the :data:`RUNTIME_FIELDS` of :func:`~kisekae.qa.check.check_pose` for those positions
    pixels : list of dict, one per picture in row order: ``pose``, ``garments`` (drawn), ``view``, ``method``,
        ``poke_through_pixels``, the pixels marked (:func:`~kisekae.render.poke.poke_through` at ``size``), and
        ``poke_through_pixels_culled``, the same with the skin the drawn garments cover left out, as the engine
        glue draws the body (:func:`~kisekae.render.scene.cull_covered`; the inside test on the whole body), and
        ``culled_skin_seen_pixels``, the holes that culling makes there (:func:`~kisekae.render.poke.culled_skin_seen`)

    The body is posed as the avatar poses it (``avatar.body.posed``: with its contact step, if it has one).
    The surface candidates are baked on the first call and cached on ``avatar``; each carried pose warms up from
    the rest pose (a fresh :class:`~kisekae.fit.carry.CarryState`), as a single pose does in ``kisekae check``.
    """
    from ..avatar.poses import named_pose
    from ..fit.runtime import runtime_pose
    from ..qa.check import check_pose

    r = renderer or default_renderer()
    garments = _garments(avatar)
    layers = [tuple(g for g in layer if g in garments) for layer in layers]
    rows, records, pixels = [], [], []
    for name in poses:
        pose = named_pose(avatar.skeleton, name)
        body = avatar.body.posed(pose.skinning_matrices(avatar.skeleton))
        lm = avatar_landmarks(avatar, pose)
        scenes = {}
        for label, method in RUNTIME_COLUMNS:
            moved = {} if method is None else {g: res[0] for g, res in
                                               runtime_pose(avatar, pose, garments, method=method,
                                                            layers=True).items()}
            for rec in check_pose(avatar, pose, garments, posed_garments=moved or None):
                records.append({"pose": name, "method": label, "garment": rec["garment"],
                                **{k: rec[k] for k in RUNTIME_FIELDS}})
            scenes[label] = avatar_items(avatar, pose, garments=garments, positions={"body": body, **moved})
        cams = {view: named_camera(view, body, size[0] / size[1], landmarks=lm) for view in views}
        for layer in layers:
            row = []
            for view, cam in cams.items():
                for label, _ in RUNTIME_COLUMNS:
                    body_item, items = scenes[label]
                    drawn = [items[g] for g in layer]
                    poke = poke_through(body_item, drawn, cam, size, renderer=r)
                    culled = poke_through(cull_covered(body_item, avatar, layer), drawn, cam, size, renderer=r,
                                          solid=body_item)
                    holes = culled_skin_seen(body_item, covered_body_faces(avatar, layer), drawn, cam, size, renderer=r)
                    row.append(mark_pixels(r.draw([body_item, *drawn], cam, size).rgb, poke.mask, grow=1))
                    pixels.append({"pose": name, "garments": layer, "view": view, "method": label,
                                   "poke_through_pixels": poke.count, "poke_through_pixels_culled": culled.count,
                                   "culled_skin_seen_pixels": holes.count})
            rows.append(row)
    return rows, records, pixels


def _bake(avatar) -> dict:
    """Pay the per-avatar one-time costs of the methods shown; returns garment -> seconds of its surface bake."""
    from ..avatar.poses import named_pose
    from ..fit.runtime import garment_candidates, runtime_pose

    garments = _garments(avatar)
    seconds = {}
    for g in garments:
        t = time.perf_counter()
        garment_candidates(avatar, g)
        seconds[g] = time.perf_counter() - t
    pose = named_pose(avatar.skeleton, RUNTIME_POSES[0])
    for _, method in RUNTIME_COLUMNS[1:]:  # the one-rings, chords, layer candidates and Numba's kernels
        runtime_pose(avatar, pose, garments, method=method, layers=True)
    return seconds


def section_runtime(ctx) -> str:
    """Crouch and sit close-ups: skinned garments, the stateless and the carried surface push, with their numbers."""
    from ..fit.surface import FINISH_STEP
    from .report import SHEET_FONT_PX, _img

    av = ctx["avatar"]
    t, c = time.perf_counter(), time.process_time()
    bake = _bake(av)
    ctx["warmup"] = (time.perf_counter() - t, time.process_time() - c,
                     "surface candidates baked, Numba's kernels")
    rows, records, pixels = runtime_rows(av)
    labels = {"skinned": "skinned", "surface": "stateless push", "carried": "carried push"}
    cols = [f"{v}: {labels[m]}" for v in RUNTIME_VIEWS for m, _ in RUNTIME_COLUMNS]
    per_row = len(RUNTIME_VIEWS) * len(RUNTIME_COLUMNS)
    captions = [[f"{p['poke_through_pixels']} px, culled {p['poke_through_pixels_culled']} px, "
                 f"holes {p['culled_skin_seen_pixels']} px" for p in pixels[i:i + per_row]]
                for i in range(0, len(pixels), per_row)]
    row_labels = [f"{p['pose']}, {' + '.join(p['garments'])}" for p in pixels[::per_row]]
    sheet = comparison_sheet(rows, row_labels=row_labels, col_labels=cols, cell_width=CELL[0],
                             captions=captions, font_size=SHEET_FONT_PX,
                             title="Per-frame correction: skinned garments, the stateless and the carried surface push; "
                                   "poke-through pixels in magenta")
    head = ("<tr><th>pose</th><th>method</th><th>garment</th><th class='num'>inside</th>"
            "<th class='num'>crossings</th><th class='num'>flipped faces</th><th class='num'>strain p99</th>"
            "<th class='num'>strain max</th></tr>")
    body = "".join(f"<tr><td>{r['pose']}</td><td>{labels[r['method']]}</td><td>{html.escape(r['garment'])}</td>"
                   f"<td class='num'>{r['inside_count']}</td><td class='num'>{r['edge_crossings']}</td>"
                   f"<td class='num'>{r['flipped_faces']}</td><td class='num'>{r['strain_p99']:.3f}</td>"
                   f"<td class='num'>{r['strain_max']:.3f}</td></tr>" for r in records)
    nums = "; ".join(f"{p['pose']} {' + '.join(p['garments'])} {p['view']} {labels[p['method']]}: "
                     f"{p['poke_through_pixels']} px, culled {p['poke_through_pixels_culled']} px, holes "
                     f"{p['culled_skin_seen_pixels']} px" for p in pixels)
    alt = (f"Close-ups of the {' and '.join(RUNTIME_VIEWS)} in the {' and '.join(RUNTIME_POSES)}, the body in the "
           f"tights alone and in the tights and the skirt, each skinned, corrected by the stateless and by the "
           f"carried surface push, skin poking through the garments in magenta ({nums}).")
    baked = ", ".join(f"{g} {s:.1f} s" for g, s in bake.items())
    return ("<h2>The per-frame correction</h2><p>What an engine runs every frame "
            "(<code>kisekae.fit.runtime.runtime_pose</code>). The surface push keeps each garment "
            "vertex outside the nearest of a few body triangles baked for it over a range of motion, measured "
            "against the posed body's own surface, with one-ring smoothing between two pushes and a stretch limit "
            "that pulls over-stretched edges back (each vertex it moves pushed again), so the cloth keeps its shape. "
            "Without memory (stateless), a vertex that skinning buries between two parts (thigh and calf) is pushed "
            "out of whichever is nearer this frame: the cloth pops and single edges spike. The carried push, the "
            "default, starts each frame from the previous frame's correction (nine tenths of it), so each vertex stays "
            "on the side it was on; a single pose warms up along the path from the rest pose. Both end with the edge "
            "lift and the unflip (points on the garment's long edges and inside its large faces kept out of the body "
            f"too, faces the push turned over turned back, at most {FINISH_STEP * 1e3:g} mm a vertex a frame), the "
            "default since 2026-12-04. Each garment vertex starts from its skinning plus the outward part of what the "
            "body does beyond skinning at its bound skin point (the body follow, since 2026-12-06), so cloth on skin "
            "that the correctives and joint planes move out moves out with it. The garments are worn as a stack, "
            "tights under the skirt: the skirt is also "
            "pushed out of the corrected tights (<code>runtime_pose(..., layers=True)</code>, the layer push), so "
            "the tights do not show through it. "
            "Garment vertices inside the body, edges crossing it, "
            "flipped faces and stretch (strain against plain skinning) from <code>kisekae check</code>; "
            f"poke-through pixels (skin showing through the garments' outside at {CELL[0]}x{CELL[1]}) in magenta: "
            "they also see the flat garment triangles between the vertices, and the skirt hides the tights, so "
            "each pose is drawn in the tights alone and in both. The pictures draw the whole body; each caption also "
            "gives the count with the skin under the drawn garments culled, as the engine glue draws it (the "
            "covered-skin masks that <code>kisekae fit</code> writes), and the holes that culling makes: culled "
            "skin that the view sees past the cloth, where the body's inside or another limb would show. The "
            f"surface candidates are baked once per garment and avatar ({baked}), counted in the timings as a "
            "one-time row of their own.</p>"
            + scroll_box(f"<table><thead>{head}</thead><tbody>{body}</tbody></table>")
            + _img(ctx["out"], "runtime.png", sheet, alt))

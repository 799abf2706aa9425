"""Demo report sections for ``kisekae demo``: pictures, poke-through pixels, tension, wound, animation.

Each ``section_*(ctx) -> str`` follows :mod:`kisekae.app.demo`'s contract: it gets the shared ``ctx`` dict
(``out`` folder, ``avatar``, ``timings``) and returns an HTML fragment. Keys read from ``ctx``:

* ``fixed_positions``: ``{pose name: {garment name: (N,3) fixed positions}}``: the push-out result.
  :func:`section_fix` computes it with :func:`kisekae.fit.fix.fix_pose` unless an earlier section
  stored it; the poke-through section then reports *after fixing* beside *before*.
* ``poke_sizes``: resolutions for the poke-through table (default ``("720p", "2160p")``).
* ``progress``: a callable ``(label, fraction)`` for sub-step progress (optional).

Keys written: ``fixed_positions``, ``pressure`` (``{pose: (Nb,) body pressure}``), ``poke_records``
(list of dict, see :func:`kisekae.render.poke.poke_through_report`).

:func:`add_poke_pixels` and :func:`format_pixel_table` serve ``kisekae check --pixels``.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

from ..render import materials as M
from ..render.camera import VIEWS, named_camera
from ..render.htmlpage import picture, scroll_box
from ..render.poke import culled_skin_seen_report, mark_pixels, poke_through, poke_through_report
from ..render.renderer import DrawItem, default_renderer
from ..render.scene import avatar_items, avatar_landmarks
from ..render.sheets import comparison_sheet, save_gif
from .contact_report import section_body_contact
from .runtime_report import section_runtime
from .shapes_report import section_body_shapes

THUMB = (640, 360)
POSES = ("stand", "leg_raise", "crouch")
#: Font size of the labels and captions inside the demo's picture sheets, pixels. The page shows a
#: sheet at least ``READABLE_PX / SHEET_FONT_PX`` of its size (:func:`kisekae.render.htmlpage.picture`).
SHEET_FONT_PX = 24


def _img(out: Path, name: str, image, alt: str, text_px: float | None = SHEET_FONT_PX) -> str:
    """Save a picture as ``out/img/name`` and return its HTML (alt text ``alt``; text inside it
    ``text_px`` pixels tall, None for none)."""
    from PIL import Image

    (out / "img").mkdir(parents=True, exist_ok=True)
    path = out / "img" / name
    image = image if isinstance(image, Image.Image) else Image.fromarray(image)
    image.save(path)
    return picture(f"img/{name}", alt, image.size, text_px=text_px)


def _pose(avatar, name):
    from ..avatar.poses import named_pose

    return named_pose(avatar.skeleton, name)


#: Tightness per garment used for the body pressure (tight look) in the demo (0 = only the push counts).
DEMO_TIGHTNESS = {"tights": 0.5}


def _fixed(ctx, pname):
    """Fixed garment positions of a pose, computed once per demo (kisekae.fit.fix.fix_pose)."""
    from ..fit.fix import fix_pose

    av = ctx["avatar"]
    fixed = ctx.setdefault("fixed_positions", {})
    if pname not in fixed:
        res = fix_pose(av, _pose(av, pname), list(av.garments))
        fixed[pname] = {k: v.positions for k, v in res.items()}
    return fixed[pname]


def _pressure(ctx, pname):
    """Body pressure (0..1 per body vertex) from the fixed garments of a pose (kisekae.fit.pressure)."""
    from ..fit.pressure import avatar_pressure

    maps = ctx.setdefault("pressure", {})
    if pname not in maps:
        av = ctx["avatar"]
        maps[pname] = avatar_pressure(av, _pose(av, pname), _fixed(ctx, pname),
                                      {k: v for k, v in DEMO_TIGHTNESS.items() if k in av.garments})
    return maps[pname]


def section_fix(ctx) -> str:
    """Before and after the fix, per pose: poke-through pixels marked, close-up, and the tight look."""
    av, out, r = ctx["avatar"], ctx["out"], default_renderer()
    rows, captions, labels, counts_text = [], [], [], []
    for pname in POSES:
        pose = _pose(av, pname)
        lm = avatar_landmarks(av, pose)
        fixed = _fixed(ctx, pname)
        press = _pressure(ctx, pname)
        before_body, before = avatar_items(av, pose)
        after_body, after = avatar_items(av, pose, positions=fixed, attributes={"body": {"pressure": press}})
        # per garment, the view with the most poke-through before fixing
        row, caps = [], []
        worst = {}
        for gname in before:
            cams = {v: named_camera(v, before_body.positions, 16 / 9, landmarks=lm) for v in VIEWS}
            counts = {v: poke_through(before_body, [before[gname]], c, (320, 180), renderer=r).count
                      for v, c in cams.items()}  # a quarter of the pixels is enough to pick the view
            view = max(VIEWS, key=lambda v: (counts[v], v == "three_quarter"))
            worst[gname] = view
            px = {}
            for stage, body, gs in (("before", before_body, before), ("after", after_body, after)):
                res = poke_through(body, [gs[gname]], cams[view], THUMB, renderer=r)
                row.append(mark_pixels(r.draw([body, gs[gname]], cams[view], THUMB).rgb, res.mask, grow=1))
                caps.append(f"{view}: {res.count} px")
                px[stage] = res.count
            counts_text.append(f"{pname} {gname} {px['before']} px before, {px['after']} after ({view} view)")
        close = worst.get("tights", next(iter(worst.values()), "three_quarter"))
        cam = named_camera(close, after_body.positions, 16 / 9, landmarks=lm)
        heat = type(after_body)(after_body.positions, after_body.faces, M.heatmap((0.0, 1.0), "inferno"),
                                normals=after_body.normals, attributes={"heat": press})
        row.append(r.draw([heat], cam, THUMB).rgb)
        row.append(r.draw([after_body], cam, THUMB).rgb)
        caps += [f"{close} view", f"{close} view"]
        rows.append(row)
        captions.append(caps)
        labels.append(pname)
    names = list(av.garments)
    sheet = comparison_sheet(rows, row_labels=labels, cell_width=300, captions=captions, font_size=SHEET_FONT_PX,
                             col_labels=[f"{g} {s}" for g in names for s in ("before", "after")]
                             + ["body pressure 0..1", "tight look, garments hidden"],
                             title="Push-out fix (kisekae.fit.fix): poke-through pixels in magenta")
    alt = (f"Grid of renders, one row per pose ({', '.join(POSES)}): each garment ({', '.join(names)}) before and "
           "after the push-out fix in the view where it pokes through most, poke-through pixels in magenta ("
           + "; ".join(counts_text) + "), then the body pressure as a heat map and the body's tight look with the "
           "garments hidden.")
    return ("<h2>Before and after the fix</h2><p>Garments fixed by <code>kisekae.fit.fix.fix_pose</code> "
            "(method auto, default parameters: the shape-preserving solve, else the best of the exact solver and the "
            "garment carried from the rest pose). Poke-through pixels (skin showing through a garment's "
            f"outside, at {THUMB[0]}x{THUMB[1]}) are marked in magenta. The body's tight look uses the "
            "pressure of <code>kisekae.fit.pressure.avatar_pressure</code> (tights tightness 0.5), shaded by the "
            "shader core's tight look.</p>" + _img(out, "fix_before_after.png", sheet, alt))


def section_pictures(ctx) -> str:
    """The avatar and its garments: four views, both looks, wireframe, each garment alone."""
    av, out, r = ctx["avatar"], ctx["out"], default_renderer()
    pose = _pose(av, "stand")
    lm = avatar_landmarks(av, pose)
    rows, labels = [], []
    for preset in ("realistic", "anime"):
        body, gs = avatar_items(av, pose, preset=preset)
        rows.append([r.draw([body, *gs.values()], named_camera(v, body.positions, 16 / 9, landmarks=lm), THUMB).rgb
                     for v in ("front", "three_quarter", "side", "back")])
        labels.append(preset)
    body, gs = avatar_items(av, pose)
    cam = named_camera("three_quarter", body.positions, 16 / 9)
    wire = avatar_items(av, pose, body_material=M.wireframe(), garments=[])[0]
    wire.edges = av.body.mesh.edges
    row = [r.draw([wire], cam, THUMB).rgb, r.draw([body], cam, THUMB).rgb]
    row += [r.draw([body, g], cam, THUMB).rgb for g in gs.values()]
    rows.append(row)
    labels.append("parts")
    garments = list(gs)
    parts = ["wireframe", "body alone"] + [f"body in {g}" for g in garments]
    views = ["front", "three-quarter", "side", "back"]
    width = max(len(r) for r in rows)
    sheet = comparison_sheet(rows, row_labels=labels, cell_width=400, font_size=SHEET_FONT_PX,
                             col_labels=[" / ".join(x for x in (views[j] if j < len(views) else "",
                                                               parts[j] if j < len(parts) else "") if x)
                                         for j in range(width)],
                             title="Built-in avatar, stand pose")
    alt = (f"Grid of renders of the built-in avatar standing in {' and '.join(garments)}: the realistic and the "
           f"anime look from the {', '.join(views[:-1])} and {views[-1]}; a row of parts seen three-quarter: "
           + ", ".join(parts) + ".")
    return "<h2>The avatar and its garments</h2>" + _img(out, "avatar.png", sheet, alt)


def section_poke(ctx) -> str:
    """Poke-through pixels per pose, garment, view and resolution, before (and after) fixing."""
    av, out, r = ctx["avatar"], ctx["out"], default_renderer()
    sizes = tuple(ctx.get("poke_sizes", ("720p", "2160p")))
    if ctx.get("fix", True):
        for pname in POSES:
            _fixed(ctx, pname)
    fixed = ctx.get("fixed_positions") or {}
    records, marked_rows, marked_caps, marked_labels, alt_parts = [], [], [], [], []
    from tqdm import tqdm

    n_stages = sum(1 + (p in fixed) for p in POSES)
    bar = tqdm(total=n_stages * len(sizes) * len(VIEWS) * len(av.garments), desc="  poke-through views",
               unit="view", leave=False, disable=not ctx.get("progress", False))
    for pname in POSES:
        pose = _pose(av, pname)
        lm = avatar_landmarks(av, pose)
        stages = [("before", {})]
        if pname in fixed:
            stages.append(("after", fixed[pname]))
        for stage, positions in stages:
            body, gs = avatar_items(av, pose, positions=positions)
            bar.set_postfix_str(f"{pname} {stage}")
            recs = poke_through_report(body, gs, views=VIEWS, sizes=sizes, landmarks=lm, renderer=r,
                                       progress=lambda: bar.update(1))
            for rec in recs:
                rec.update(pose=pname, stage=stage)
            records.extend(recs)
            # marked pictures: the view with most poke-through pixels per garment, at the first size
            row, caps = [], []
            for gname, g in gs.items():
                at = [x for x in recs if x["garment"] == gname and x["resolution"] == sizes[0]]
                worst = max(at, key=lambda x: x["poke_through_pixels"])
                cam = named_camera(worst["view"], body.positions, 16 / 9, landmarks=lm)
                res = poke_through(body, [g], cam, THUMB, renderer=r)
                row.append(mark_pixels(r.draw([body, g], cam, THUMB).rgb, res.mask, grow=1))
                caps.append(f"{gname}, {worst['view']}: {res.count} px")
                alt_parts.append(f"{pname} {stage} {gname} {res.count} px ({worst['view']} view)")
            marked_rows.append(row)
            marked_caps.append(caps)
            marked_labels.append(f"{pname} {stage}")
    bar.close()
    ctx["poke_records"] = records
    (out / "poke_through.json").write_text(json.dumps(records, indent=1))
    note = "" if fixed else ("<p>No fixed garments were provided by an earlier section "
                             "(<code>ctx['fixed_positions']</code>), so only <i>before</i> is shown.</p>")
    sheet = comparison_sheet(marked_rows, row_labels=marked_labels, cell_width=420, captions=marked_caps,
                             font_size=SHEET_FONT_PX,
                             title=f"Poke-through pixels (magenta) at {THUMB[0]}x{THUMB[1]}, worst view per garment")
    alt = ("Grid of renders, one row per pose before and after fixing, each garment in its worst view with "
           f"poke-through pixels in magenta (counted at {THUMB[0]}x{THUMB[1]}): " + "; ".join(alt_parts) + ".")
    return ("<h2>Poke-through pixels</h2><p>Skin pixels that show through where a garment's outside covers the "
            "body (pixel centres, linear-depth tolerance 0.1 mm); skin seen through hems and openings is not "
            "counted. Also in <a href='poke_through.json'>poke_through.json</a>.</p>" + note
            + poke_table(records, sizes)
            + _img(out, "poke_through.png", sheet, alt))


def poke_table(records, sizes) -> str:
    """HTML table of poke-through pixels: one row per (pose, stage, garment, resolution), one column per view.

    Parameters
    ----------
    records : list of dict
        :func:`~kisekae.render.poke.poke_through_report` records with ``pose`` (one of :data:`POSES`) and
        ``stage`` added.
    sizes : sequence of str
        The resolutions, in row order.

    Returns
    -------
    str
        The table, with a header row, in a box that scrolls sideways on a narrow screen.
    """
    views = list(dict.fromkeys(x["view"] for x in records))
    head = "".join(f"<th class='num'>{html.escape(v)}</th>" for v in views)
    body_rows = []
    keys = sorted({(x["pose"], x["stage"], x["garment"], x["resolution"]) for x in records},
                  key=lambda k: (POSES.index(k[0]), k[1] != "before", k[2], list(sizes).index(k[3])))
    for k in keys:
        by_view = {x["view"]: x["poke_through_pixels"] for x in records
                   if (x["pose"], x["stage"], x["garment"], x["resolution"]) == k}
        cells = "".join(f"<td class='num' style='background:{'#fdd' if by_view.get(v) else '#dfd'}'>"
                        f"{by_view.get(v, '')}</td>" for v in views)
        body_rows.append("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in k) + cells
                         + f"<td class='num'>{sum(by_view.values())}</td></tr>")
    return scroll_box("<table><thead><tr><th>pose</th><th>stage</th><th>garment</th><th>resolution</th>" + head
                      + "<th class='num'>total</th></tr></thead><tbody>" + "".join(body_rows) + "</tbody></table>")


def section_tension(ctx) -> str:
    """Tension heat maps (Blender colours) and the wrinkle look, with a histogram per pose."""
    from ..tension import tension_map

    av, out, r = ctx["avatar"], ctx["out"], default_renderer()
    mesh = av.garments["tights"].mesh
    rest = mesh.vertices
    rows, labels, hist = [], [], {}
    for pname in ("leg_raise", "crouch", "sit"):
        pose = _pose(av, pname)
        body, gs = avatar_items(av, pose, garments=["tights"])  # skinned: the tension of the pose itself
        t = tension_map(rest, gs["tights"].positions, mesh.quads if mesh.quads is not None else mesh.faces)
        comp, stre = np.asarray(t.compress), np.asarray(t.stretch)
        hist[pname] = (comp, stre)
        attrs = {"ratio": np.asarray(t.ratio)}  # mapped to compress/stretch by the shader core on the GPU
        lm = avatar_landmarks(av, pose)
        cam = named_camera("three_quarter", body.positions, 16 / 9, landmarks=lm)
        knees = named_camera("knees", body.positions, 16 / 9, landmarks=lm)
        g = gs["tights"]
        heat = type(g)(g.positions, g.faces, M.tension(shaded=True), normals=g.normals, attributes=attrs,
                       role="garment")
        real = type(g)(g.positions, g.faces, M.cloth(preset="realistic"), normals=g.normals, attributes=attrs)
        anime = type(g)(g.positions, g.faces, M.cloth(preset="anime"), normals=g.normals, attributes=attrs)
        skin_t = type(body)(body.positions, body.faces, M.skin(), normals=body.normals)
        rows.append([r.draw([skin_t, heat], cam, THUMB).rgb, r.draw([skin_t, heat], knees, THUMB).rgb,
                     r.draw([skin_t, real], knees, THUMB).rgb, r.draw([skin_t, anime], knees, THUMB).rgb])
        labels.append(pname)
    sheet = comparison_sheet(rows, row_labels=labels, cell_width=360, font_size=SHEET_FONT_PX,
                             col_labels=["tension map (R compress, G stretch)", "tension map, knees",
                                         "wrinkles, realistic", "wrinkles, anime"],
                             title="Tights: tension and wrinkle look")
    alt = (f"Grid of renders of the tights in the {', '.join(labels)} poses: the tension map (red where the "
           "cloth is compressed, green where it is stretched) on the whole body and at the knees, then the "
           "knees with the realistic and the anime wrinkle look.")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dpi = 120  # 4 x 5.6 inches: 480 px wide, so the plot's 10 pt text stays readable on a phone
    fig, ax = plt.subplots(2, 1, figsize=(4.0, 5.6))
    for pname, (c, s) in hist.items():
        ax[0].hist(c[c > 0], bins=40, histtype="step", label=pname)
        ax[1].hist(s[s > 0], bins=40, histtype="step", label=pname)
    ax[0].set_title("compress (vertices > 0)")
    ax[1].set_title("stretch (vertices > 0)")
    for a in ax:
        a.set_yscale("log")
        a.legend()
    fig.tight_layout()
    (out / "img").mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "img" / "tension_hist.png", dpi=dpi)
    hist_size = tuple(int(round(v)) for v in fig.get_size_inches() * dpi)
    text_px = min(matplotlib.font_manager.FontProperties(size=plt.rcParams[k]).get_size_in_points()
                  for k in ("xtick.labelsize", "ytick.labelsize", "legend.fontsize", "axes.titlesize")) * dpi / 72
    plt.close(fig)
    return ("<h2>Tension</h2><p>The tights' tension ratio T (rest / posed mean edge length, "
            "<code>kisekae.tension.tension_map</code>) is sent per vertex; the shader core maps it to the Tension "
            "Map colours (Blender node-group defaults) and the cloth blends wrinkle normals by the compression."
            "</p>" + _img(out, "tension.png", sheet, alt)
            + picture("img/tension_hist.png", "Histograms of the tights' compress and stretch values per vertex "
                      f"(vertices above 0, log counts) in the {', '.join(hist)} poses.", hist_size, text_px=text_px))


def section_wound(ctx) -> str:
    """The wound morph on the built-in damaged avatar: p from 0 to 1, and hits through the core's hit loop."""
    from ..avatar.skinning import lbs
    from ..wound.bake import bake
    from ..wound.damage import damaged_builtin

    from ..render.renderer import WoundMorph

    av, out, r = ctx["avatar"], ctx["out"], default_renderer()
    body = av.body
    dmg = damaged_builtin(av)
    baked = bake(body.mesh.vertices, body.mesh.faces, dmg.vertices, body.mesh.faces, parts=dmg.parts,
                 encodings=["delta16", "half"])
    pose = _pose(av, "stand")  # the bind pose of the built-in avatar: the baked (bind-space) data apply as is
    m = pose.skinning_matrices(av.skeleton)
    posed = body.posed(m)
    target_rest, _ = baked.decoded("half")
    target = lbs(np.asarray(target_rest, np.float32), body.skin.indices, body.skin.weights, m)
    upper = posed[posed[:, 1] > np.percentile(posed[:, 1], 45)]
    cams = [named_camera(v, upper, 1.0) for v in ("front", "three_quarter")]
    steps = (0.0, 0.25, 0.5, 0.75, 1.0)
    mat = M.skin("realistic")
    # the sequence reads the 'delta16' bake as a game does (unorm16 texels), decoded by the core on the GPU
    wm = WoundMorph.from_encoded(baked.encodings["delta16"])
    rows, captions = [], []
    for cam in cams:
        row = []
        for p in steps:
            item = DrawItem(posed, body.mesh.faces, mat, attributes={"wound": np.full(len(posed), p)}, wound=wm,
                            role="body")
            row.append(r.draw([item], cam, (400, 400)).rgb)
        rows.append(row)
        captions.append([f"p = {p:.2f}" for p in steps])
    # hits: the vertex stage runs the core's hit loop (posed hit points, per-part reach/gain)
    from ..wound.damage import PART_ARM, PART_CHEST

    reach = np.ones(3, np.float32)
    reach[PART_ARM] = 6.0  # a hit on the forearm takes the whole forearm
    gain = np.ones(3, np.float32)
    chest = np.flatnonzero(dmg.parts == PART_CHEST)
    arm = np.flatnonzero(dmg.parts == PART_ARM)
    pick = lambda idx, q: int(idx[np.argsort(posed[idx, 2])[int(q * (len(idx) - 1))]])  # noqa: E731
    dent = int(np.argmin(np.linalg.norm(posed - dmg.dent_center, axis=1)))  # the dented chest's centre
    beside = int(np.argmin(np.linalg.norm(posed - (dmg.dent_center + [0.03, -0.03, 0.0]), axis=1)))
    hit_vertices = [dent, pick(arm, 0.5), beside, pick(arm, 0.9)]
    row, caps = [], []
    for n in (1, 2, 4):
        hv = hit_vertices[:n]
        hits = np.c_[posed[hv], dmg.parts[hv]].astype(np.float32)
        wmh = WoundMorph(target, parts=dmg.parts.astype(np.int64), part_reach=reach, part_gain=gain, hits=hits,
                         hole_size=0.03, hole_intensity=30.0)
        item = DrawItem(posed, body.mesh.faces, mat, wound=wmh, role="body")
        row.append(r.draw([item], cams[1], (400, 400)).rgb)
        caps.append(f"{n} hit{'s' if n > 1 else ''} (loop)")
    rows.append(row + [None, None])
    captions.append(caps + [None, None])
    sheet = comparison_sheet(rows, row_labels=["front", "three-quarter", "hits"], cell_width=260, captions=captions,
                             font_size=SHEET_FONT_PX,
                             title="Wound morph (baked 'delta16' data decoded and morphed in the core's vertex stage)")
    alt = ("Grid of renders of the built-in body's upper half, from the front and three-quarter: the wound morph "
           f"at p = {', '.join(f'{p:g}' for p in steps)} (the left forearm shrinks, the chest dents); then 1, 2 and 4 "
           "hits resolved by the shader core's hit loop.")
    frames = []
    for p in list(np.linspace(0, 1, 9)) + list(np.linspace(1, 0, 9))[1:-1]:
        item = DrawItem(posed, body.mesh.faces, mat, attributes={"wound": np.full(len(posed), p)}, wound=wm)
        frames.append(r.draw([item], cams[1], (320, 320)).rgb)
    (out / "img").mkdir(parents=True, exist_ok=True)
    save_gif(frames, out / "img" / "wound.gif", fps=10)
    err = baked.error_table()
    return ("<h2>Wound morph</h2><p>Start: the built-in body; target: <code>kisekae.wound.damage.damaged_builtin"
            "</code> (shrunken left forearm, dented chest), baked with <code>kisekae.wound.bake</code> "
            "(closest-point correspondence, <code>delta16</code> encoding decoded on the GPU by the core). Rows 1-2: the "
            "morph parameter p from 0 to 1; row 3: hits resolved by the core's per-frame hit loop.</p>"
            + _img(out, "wound.png", sheet, alt)
            + picture("img/wound.gif", "Animation, three-quarter view: the wound morph going from p = 0 to 1 and "
                      "back (the left forearm shrinks, the chest dents).", frames[0].shape[1::-1])
            + "<pre>" + html.escape(err) + "</pre>")


def section_animation(ctx) -> str:
    """Smooth animated GIFs: the BVH excerpt with slerped in-betweens, and a loop over the named poses."""
    from ..avatar.builtin import load_builtin_avatar
    from ..avatar.contact import apply_contact
    from ..render.animation import inbetween

    out, r = ctx["out"], default_renderer()
    html_parts = ["<h2>Animation</h2>"]
    from ..data import SAMPLE_BVH, sample_path

    clip_path = Path(sample_path(SAMPLE_BVH))
    jobs = []
    if clip_path.exists():
        from ..io.bvh import read_bvh, retarget

        av = apply_contact(load_builtin_avatar("cmu_mb", ctx["avatar"].shape), ctx.get("contact"),
                           part_contact=ctx.get("part_contact", True))
        clip = read_bvh(clip_path)
        keys = retarget(clip, av.skeleton, list(range(clip.n_frames)), name=clip_path.stem).poses
        steps = max(1, 24 // max(1, len(keys) - 1))
        poses = inbetween(keys, steps) if len(keys) > 1 else keys
        poses = poses + poses[-2:0:-1]  # ping-pong, so the loop has no jump
        jobs.append((av, poses, "bvh.gif", f"BVH {clip_path.name}: {clip.n_frames} frames, {steps - 1} slerped "
                                            f"in-betweens per frame, played forwards and back ({len(poses)} frames)",
                     f"Animation, three-quarter view: the built-in avatar dressed, moved by the motion capture clip "
                     f"{clip_path.name} retargeted to its cmu_mb rig, {len(poses)} frames forwards and back."))
    av = ctx["avatar"]
    named = [_pose(av, n) for n in POSES]
    jobs.append((av, inbetween(named, 8, loop=True), "poses.gif",
                 f"named poses {', '.join(POSES)} in a loop, 7 slerped in-betweens each",
                 f"Animation, three-quarter view: the built-in avatar dressed, moving through the poses "
                 f"{', '.join(POSES)} and back to the first, with smooth in-betweens."))
    for avatar, poses, name, note, alt in jobs:
        allpts = np.concatenate([avatar_items(avatar, p, garments=[])[0].positions
                                 for p in poses[:: max(1, len(poses) // 6)]])
        cam = named_camera("three_quarter", allpts, 1.0)
        frames = []
        for p in poses:
            body, gs = avatar_items(avatar, p)
            frames.append(r.draw([body, *gs.values()], cam, (360, 360)).rgb)
        (out / "img").mkdir(parents=True, exist_ok=True)
        save_gif(frames, out / "img" / name, fps=15)
        html_parts.append(f"<p>{html.escape(note)}</p>" + picture(f"img/{name}", alt, frames[0].shape[1::-1]))
    return "".join(html_parts)


def add_poke_pixels(avatar, pose, records, positions=None, *, views=VIEWS, sizes=("720p", "2160p"),
                    renderer=None, cull=None, key="poke_through_pixels", seen_key=None) -> list:
    """Add poke-through pixel counts to check records of one pose (``kisekae check --pixels``).

    Parameters
    ----------
    avatar : kisekae.avatar.Avatar
    pose : kisekae.avatar.Pose
    records : list of dict
        Records with a ``garment`` key (e.g. from :func:`kisekae.qa.check.check_pose`); updated in place with
        ``key`` (sum over views and resolutions) and ``key`` without ``_pixels`` (``{resolution: {view:
        pixels}}``).
    positions : dict[str, (N,3)], optional
        Garment positions to use instead of skinning (e.g. the fixed garments).
    views, sizes : sequences
        Views (:data:`~kisekae.render.camera.VIEWS`) and resolutions.
    cull : dict[str, (F,) bool], optional
        Per garment, body triangles to leave out (the covered skin that the engine culls under it).
    key : str
        Record field for the total, default ``"poke_through_pixels"``.
    seen_key : str, optional
        With ``cull``: also count the holes that culling makes (:func:`~kisekae.render.poke.culled_skin_seen`: culled
        skin a view sees past the garment) into this record field, and per view under it without ``_pixels``.

    Returns
    -------
    list of dict
        The per-view records of :func:`~kisekae.render.poke.poke_through_report`.
    """
    from dataclasses import replace

    names = list(dict.fromkeys(r["garment"] for r in records))
    body, gs = avatar_items(avatar, pose, garments=names, positions=positions)
    kw = dict(views=views, sizes=sizes, landmarks=avatar_landmarks(avatar, pose), renderer=renderer or default_renderer())
    if cull is None:
        recs = poke_through_report(body, gs, **kw)
    else:
        recs = []
        for name in names:
            keep = ~np.asarray(cull[name], dtype=bool)
            if keep.any():
                recs += poke_through_report(replace(body, faces=body.faces[keep]), {name: gs[name]}, solid=body, **kw)
            else:  # no skin left to show through
                recs += [{"garment": name, "view": v, "resolution": z if isinstance(z, str) else f"{z[0]}x{z[1]}",
                          "poke_through_pixels": 0} for z in sizes for v in views]
    _total_per_view(records, recs, "poke_through_pixels", key)
    if cull is not None and seen_key:
        seen = culled_skin_seen_report(body, {n: cull[n] for n in names}, gs, **kw)
        _total_per_view(records, seen, "culled_skin_seen_pixels", seen_key)
    return recs


def _total_per_view(records, per_view, field, key):
    """Sum ``field`` of the per-view records into each check record's ``key``, and keep them per resolution and
    view under ``key`` without ``_pixels``."""
    per_key = key[: -len("_pixels")] if key.endswith("_pixels") else key + "_views"
    for rec in records:
        mine = [x for x in per_view if x["garment"] == rec["garment"]]
        rec[key] = int(sum(x[field] for x in mine))
        per = {}
        for x in mine:
            per.setdefault(x["resolution"], {})[x["view"]] = x[field]
        rec[per_key] = per


def format_pixel_table(records) -> str:
    """Poke-through pixels per (pose, garment, stage, resolution) and view, as fixed-width text."""
    rows = [r for r in records if "poke_through" in r]
    if not rows:
        return ""
    views = list(dict.fromkeys(v for r in rows for per in r["poke_through"].values() for v in per))
    head = ["pose", "garment", "stage", "resolution", *views, "total"]
    table = []
    for r in rows:
        for res, per in r["poke_through"].items():
            table.append([str(r.get("pose", "")), r["garment"], str(r.get("stage", "")), res,
                          *[str(per.get(v, "")) for v in views], str(sum(per.values()))])
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(t, widths)) for t in table]
    return "poke-through pixels per view\n" + "\n".join(lines)


#: (title, function) pairs, in page order.
SECTIONS = [
    ("pictures", section_pictures),
    ("before and after the fix", section_fix),
    ("per-frame correction", section_runtime),
    ("body shapes", section_body_shapes),
    ("body against itself", section_body_contact),
    ("poke-through pixels", section_poke),
    ("tension pictures", section_tension),
    ("wound morph", section_wound),
    ("animation", section_animation),
]

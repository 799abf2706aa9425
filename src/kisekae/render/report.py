"""Demo report sections for ``kisekae demo``: pictures, poke-through pixels, tension, wound, animation.

Each ``section_*(ctx) -> str`` follows :mod:`kisekae.demo`'s contract: it gets the shared ``ctx`` dict
(``out`` folder, ``avatar``, ``timings``) and returns an HTML fragment. Keys read from ``ctx`` when an
earlier section put them there (written by the effect owners' sections):

* ``fixed_positions``: ``{pose name: {garment name: (N,3) fixed positions}}``: the push-out result;
  the poke-through section then reports *after fixing* beside *before*.
* ``poke_sizes``: resolutions for the poke-through table (default ``("720p", "2160p")``).

Keys written: ``poke_records`` (list of dict, see :func:`kisekae.render.poke.poke_through_report`).
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

from . import materials as M
from .camera import VIEWS, named_camera
from .poke import mark_pixels, poke_through, poke_through_report
from .renderer import default_renderer
from .scene import avatar_items, avatar_landmarks
from .sheets import comparison_sheet, label, save_gif

THUMB = (640, 360)
POSES = ("stand", "leg_raise", "crouch")


def _img(out: Path, name: str, image) -> str:
    from PIL import Image

    (out / "img").mkdir(parents=True, exist_ok=True)
    path = out / "img" / name
    (image if isinstance(image, Image.Image) else Image.fromarray(image)).save(path)
    return f"<p><img src='img/{html.escape(name)}' alt='{html.escape(name)}'></p>"


def _pose(avatar, name):
    from ..avatar.poses import named_pose

    return named_pose(avatar.skeleton, name)


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
    sheet = comparison_sheet(rows, row_labels=labels, cell_width=400,
                             col_labels=["front / wire", "three-quarter / body", "side / tights", "back / skirt"],
                             title="Built-in avatar, stand pose")
    return "<h2>The avatar and its garments</h2>" + _img(out, "avatar.png", sheet)


def section_poke(ctx) -> str:
    """Poke-through pixels per pose, garment, view and resolution, before (and after) fixing."""
    av, out, r = ctx["avatar"], ctx["out"], default_renderer()
    sizes = tuple(ctx.get("poke_sizes", ("720p", "2160p")))
    fixed = ctx.get("fixed_positions") or {}
    records, marked_rows, marked_labels = [], [], []
    for pname in POSES:
        pose = _pose(av, pname)
        lm = avatar_landmarks(av, pose)
        stages = [("before", {})]
        if pname in fixed:
            stages.append(("after", fixed[pname]))
        for stage, positions in stages:
            body, gs = avatar_items(av, pose, positions=positions)
            recs = poke_through_report(body, gs, views=VIEWS, sizes=sizes, landmarks=lm, renderer=r)
            for rec in recs:
                rec.update(pose=pname, stage=stage)
            records.extend(recs)
            # marked pictures: the view with most poke-through pixels per garment, at the first size
            row = []
            for gname, g in gs.items():
                at = [x for x in recs if x["garment"] == gname and x["resolution"] == sizes[0]]
                worst = max(at, key=lambda x: x["poke_through_pixels"])
                cam = named_camera(worst["view"], body.positions, 16 / 9, landmarks=lm)
                res = poke_through(body, [g], cam, THUMB, renderer=r)
                img = mark_pixels(r.draw([body, g], cam, THUMB).rgb, res.mask, grow=1)
                row.append(label(img, f"{gname}, {worst['view']}: {res.count} px at {THUMB[0]}x{THUMB[1]}"))
            marked_rows.append(row)
            marked_labels.append(f"{pname} {stage}")
    ctx["poke_records"] = records
    (out / "poke_through.json").write_text(json.dumps(records, indent=1))
    # table: one row per (pose, stage, garment, resolution), one column per view
    head = "".join(f"<th>{html.escape(v)}</th>" for v in VIEWS)
    body_rows = []
    keys = sorted({(x["pose"], x["stage"], x["garment"], x["resolution"]) for x in records},
                  key=lambda k: (POSES.index(k[0]), k[1] != "before", k[2], sizes.index(k[3])))
    for k in keys:
        by_view = {x["view"]: x["poke_through_pixels"] for x in records
                   if (x["pose"], x["stage"], x["garment"], x["resolution"]) == k}
        cells = "".join(f"<td style='text-align:right;background:{'#fdd' if by_view[v] else '#dfd'}'>{by_view[v]}</td>"
                        for v in VIEWS)
        body_rows.append(f"<tr><td>{k[0]}</td><td>{k[1]}</td><td>{k[2]}</td><td>{k[3]}</td>{cells}"
                         f"<td style='text-align:right'>{sum(by_view.values())}</td></tr>")
    note = "" if fixed else ("<p>No fixed garments were provided by an earlier section "
                             "(<code>ctx['fixed_positions']</code>), so only <i>before</i> is shown.</p>")
    sheet = comparison_sheet(marked_rows, row_labels=marked_labels, cell_width=420,
                             title="Poke-through pixels (magenta), worst view per garment")
    return ("<h2>Poke-through pixels</h2><p>Skin pixels that show through where a garment's outside covers the "
            "body (pixel centres, linear-depth tolerance 0.1 mm); skin seen through hems and openings is not "
            "counted. Also in <a href='poke_through.json'>poke_through.json</a>.</p>" + note
            + "<table border='1' cellspacing='0'><tr><th>pose</th><th>stage</th><th>garment</th><th>resolution</th>"
            + head + "<th>total</th></tr>" + "".join(body_rows) + "</table>" + _img(out, "poke_through.png", sheet))


def section_tension(ctx) -> str:
    """Tension heat maps (Blender colours) and the wrinkle look, with a histogram per pose."""
    from ..tension import tension_map

    av, out, r = ctx["avatar"], ctx["out"], default_renderer()
    mesh = av.garments["tights"].mesh
    rest = mesh.vertices
    rows, labels, hist = [], [], {}
    for pname in ("leg_raise", "crouch", "sit"):
        pose = _pose(av, pname)
        body, gs = avatar_items(av, pose, garments=["tights"])
        t = tension_map(rest, gs["tights"].positions, mesh.quads if mesh.quads is not None else mesh.faces)
        comp, stre = np.asarray(t.compress), np.asarray(t.stretch)
        hist[pname] = (comp, stre)
        attrs = {"compress": comp, "stretch": stre}
        cam = named_camera("three_quarter", body.positions, 16 / 9, landmarks=avatar_landmarks(av, pose))
        g = gs["tights"]
        heat = type(g)(g.positions, g.faces, M.tension(shaded=True), normals=g.normals, attributes=attrs,
                       role="garment")
        real = type(g)(g.positions, g.faces, M.cloth(preset="realistic"), normals=g.normals, attributes=attrs)
        anime = type(g)(g.positions, g.faces, M.cloth(preset="anime"), normals=g.normals, attributes=attrs)
        skin_t = type(body)(body.positions, body.faces, M.skin(), normals=body.normals)
        rows.append([r.draw([skin_t, heat], cam, THUMB).rgb, r.draw([skin_t, real], cam, THUMB).rgb,
                     r.draw([skin_t, anime], cam, THUMB).rgb])
        labels.append(pname)
    sheet = comparison_sheet(rows, row_labels=labels, cell_width=420,
                             col_labels=["tension map (R compress, G stretch)", "wrinkles, realistic",
                                         "wrinkles, anime"], title="Tights: tension and wrinkle look")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(9, 3.2))
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
    fig.savefig(out / "img" / "tension_hist.png", dpi=90)
    plt.close(fig)
    return ("<h2>Tension</h2>" + _img(out, "tension.png", sheet)
            + "<p><img src='img/tension_hist.png' alt='tension histograms'></p>")


def section_animation(ctx) -> str:
    """An animated GIF over the BVH excerpt (cmu_mb rig), or stand -> crouch when the clip is absent."""
    from ..avatar.builtin import load_builtin_avatar

    out, r = ctx["out"], default_renderer()
    frames, note = [], ""
    from ..data import SAMPLE_BVH, sample_path

    clip_path = Path(sample_path(SAMPLE_BVH))
    if clip_path.exists():
        from ..io.bvh import read_bvh, retarget

        av = load_builtin_avatar("cmu_mb")
        clip = read_bvh(clip_path)
        step = max(1, clip.n_frames // 24)
        motion = retarget(clip, av.skeleton, list(range(0, clip.n_frames, step))[:24], name=clip_path.stem)
        poses = motion.poses
        note = f"BVH {clip_path.name}, {len(poses)} frames"
    else:
        av = ctx["avatar"]
        poses = [_pose(av, "stand"), _pose(av, "crouch")]
        note = "stand and crouch (BVH excerpt not found)"
    first, _ = avatar_items(av, poses[0])
    allpts = np.concatenate([avatar_items(av, p, garments=[])[0].positions for p in poses[:: max(1, len(poses) // 4)]])
    cam = named_camera("three_quarter", allpts, 1.0)
    for p in poses:
        body, gs = avatar_items(av, p)
        frames.append(r.draw([body, *gs.values()], cam, (360, 360)).rgb)
    save_gif(frames, out / "img" / "animation.gif", fps=8)
    return f"<h2>Animation</h2><p>{html.escape(note)}</p><p><img src='img/animation.gif' alt='animation'></p>"


#: (title, function) pairs, in page order.
SECTIONS = [
    ("pictures", section_pictures),
    ("poke-through pixels", section_poke),
    ("tension pictures", section_tension),
    ("animation", section_animation),
]

"""Pictures of a result store's worst cases: ``kisekae batch report STORE --pictures DIR``.

For the ``top`` worst (body, garment, motion, frame) cases of a store, the case is rebuilt from
the catalogue specs the store recorded (:meth:`kisekae.batch.store.Store.catalogs`): the same
body, garment and motion frame, and the fit settings its ``settings_hash`` stands for. Then:

1. *before*: the garment skinned into the pose; *after*: the same garment fixed by
   :func:`kisekae.fit.fix.fix_pose` with those settings (the very call of the batch's ``after``
   stage, :func:`kisekae.batch.worker.fix_function`);
2. poke-through pixels (:func:`kisekae.render.poke.poke_through`) of both are counted in every
   view of ``views`` at a small size (:data:`PICK_SIZE`), and the view with the most poke-through
   in the ranked stage wins (ties: the other stage, then the three-quarter view);
3. body plus garment are drawn in that view at ``size`` (default 640x360, at most 1280x720) with
   the poke-through pixels painted magenta, and written as ``NN_<case>_before.png`` and
   ``..._after.png`` beside an ``index.html`` that shows them side by side with the stored metrics.

Worst means, with ``worst_by="before"``, the most garment vertices inside the body before the fix
(``inside_count``, then the depth); with ``worst_by="after"``, the most garment edges still
crossing the body after the fix (``edge_crossings``, then ``inside_count``). Only cases with a
problem in the ranked stage (inside or crossing) are drawn.
"""

from __future__ import annotations

import html
import re
import time
from pathlib import Path

import numpy as np

from ..errors import KisekaeError, unexpected_error_text
from ..outputs import check_outputs
from .catalog import settings_hash
from .store import Store

#: Size of the view-picking renders, pixels (a quarter of 640x360 is enough to rank views).
PICK_SIZE = (320, 180)
#: Default and largest picture size, pixels (width, height).
DEFAULT_SIZE = (640, 360)
MAX_SIZE = (1280, 720)
#: Rankings of the worst cases.
WORST_BY = ("before", "after")
#: Colour of poke-through pixels (sRGB, magenta).
MARK = (255, 0, 255)

_CASE = ("body", "garment", "motion", "frame", "settings_hash")
_METRIC = ("inside_count", "inside_fraction", "max_depth_m", "edge_crossings")


def picture_cases(store: Store, top: int = 20, worst_by: str = "before") -> list:
    """The ``top`` worst cases of a store, each with its ``before_*`` and ``after_*`` metrics.

    Parameters
    ----------
    store : Store
    top : int
        Number of cases (at least 1).
    worst_by : {"before", "after"}
        ``before``: most vertices inside the body before the fix (then deepest); ``after``: most
        edges crossing the body after the fix (then most vertices inside, then deepest). Error
        rows and cases without a problem in that stage are left out.

    Returns
    -------
    list of dict
        Keys ``body, garment, motion, frame, settings_hash, pose`` and ``before_<m>``,
        ``after_<m>`` for ``m`` in inside_count, inside_fraction, max_depth_m, edge_crossings
        (None where the other stage has no error-free row).
    """
    if worst_by not in WORST_BY:
        raise KisekaeError(f"must be one of {', '.join(WORST_BY)}, got {worst_by!r}", "worst_by")
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise KisekaeError(f"must be a positive integer, got {top!r}", "top")
    other = "after" if worst_by == "before" else "before"
    order = ("a.inside_count DESC, a.max_depth_m DESC" if worst_by == "before" else
             "a.edge_crossings DESC, a.inside_count DESC, a.max_depth_m DESC")
    cols = ", ".join([f"a.{c}" for c in _CASE] + ["a.pose"] + [f"a.{m}" for m in _METRIC]
                     + [f"b.{m}" for m in _METRIC])
    join = " AND ".join(f"a.{c} = b.{c}" for c in _CASE)
    sql = (f"SELECT {cols} FROM results a LEFT JOIN results b ON b.stage = ? AND b.error IS NULL AND {join} "
           f"WHERE a.stage = ? AND a.error IS NULL AND (a.inside_count > 0 OR a.edge_crossings > 0) "
           f"ORDER BY {order}, a.body, a.garment, a.motion, a.frame, a.settings_hash LIMIT ?")
    names = list(_CASE) + ["pose"] + [f"{worst_by}_{m}" for m in _METRIC] + [f"{other}_{m}" for m in _METRIC]
    return [dict(zip(names, r)) for r in store.query(sql, (other, worst_by, int(top)))]


def _runs_catalogs(store: Store) -> list:
    """Specs of catalogue files named by the ``runs`` table that still load to the same catalogue id
    (stores written before the ``catalogs`` table existed)."""
    from .catalog import load_catalog

    out, seen = [], set()
    for path, cid in store.query("SELECT catalog, catalog_id FROM runs ORDER BY run_id DESC"):
        if (path, cid) in seen or not path:
            continue
        seen.add((path, cid))
        try:
            cat = load_catalog(path)
        except KisekaeError:
            continue
        if cat.catalog_id == cid:
            out.append({"catalog_id": cid, "catalog": path, "specs": cat.specs()})
    return out


def case_specs(store: Store, cases) -> list:
    """For each case, the recorded catalogue specs that produced its rows.

    A catalogue matches a case when it lists the case's body, garment and motion and the hash of
    that garment's effective settings and the catalogue's stages equals the row's
    ``settings_hash``. The store's ``catalogs`` table is searched first (newest first), then the
    catalogue files its ``runs`` table names, if they still load to the recorded catalogue id.

    Returns
    -------
    list of dict
        One specs dict (:meth:`~kisekae.batch.catalog.Catalog.specs`) per case, in order.

    Raises
    ------
    KisekaeError
        When any case cannot be matched, naming the store, the case and what to do.
    """
    cases = list(cases)
    recorded = store.catalogs()
    found = [None] * len(cases)

    def match(pool):
        for i, c in enumerate(cases):
            if found[i] is not None:
                continue
            for entry in pool:
                sp = entry["specs"]
                if (c["body"] in sp["bodies"] and c["garment"] in sp["garments"] and c["motion"] in sp["motions"]
                        and settings_hash(sp["settings"][c["garment"]], sp["stages"], sp.get("contact"))
                        == c["settings_hash"]):
                    found[i] = sp
                    break

    match(recorded)
    if any(f is None for f in found):
        match(_runs_catalogs(store))
    missing = [c for c, f in zip(cases, found) if f is None]
    if missing:
        c = missing[0]
        why = ("it records no catalogue specs (written before `kisekae batch` kept them), and no catalogue file "
               "named in its runs table still loads unchanged" if not recorded else
               "none of its recorded catalogues lists this case with these settings")
        raise KisekaeError(
            f"cannot rebuild {len(missing)} of {len(cases)} case(s) for pictures, e.g. body {c['body']!r}, "
            f"garment {c['garment']!r}, motion {c['motion']!r}, frame {c['frame']}, settings_hash "
            f"{c['settings_hash']}: {why}; run `kisekae batch CATALOG.toml --resume --store {store.path}` once "
            "with the catalogue that wrote these rows, so the store records it", store.path)
    return found


def case_positions(specs: dict, case: dict):
    """Rebuild one case and fix it: the inputs of its before and after pictures.

    Parameters
    ----------
    specs : dict
        The case's catalogue specs (:func:`case_specs`).
    case : dict
        A :func:`picture_cases` entry (body, garment, motion, frame, settings_hash).

    Returns
    -------
    avatar : kisekae.avatar.Avatar
    garment : str
        The garment's name in ``avatar``.
    pose : kisekae.avatar.Pose
    fixed : (N,3) float32
        The garment's fixed positions, metres (the batch's ``after`` stage).
    """
    from . import worker

    avatar, gname, pose = _load(specs, case)
    fix = worker.fix_function()
    if fix is None:
        raise KisekaeError("this installation's kisekae.fit has no fix_pose; after pictures cannot be drawn",
                           "pictures")
    fixed, _metrics = fix(avatar, pose, gname, specs["settings"][case["garment"]])
    return avatar, gname, pose, np.asarray(fixed, dtype=np.float32)


def _load(specs: dict, case: dict):
    from . import worker

    if specs["id"] not in worker._SPECS:
        worker.install(specs, numba_threads=None)  # the report process keeps its own thread count
    avatar, gname, pose, _rig = worker.load_case(specs["id"], tuple(case[c] for c in _CASE))
    return avatar, gname, pose


def _error_text(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, KisekaeError) else unexpected_error_text(exc)


def _init_fix_process() -> None:
    """Pool initializer: exit with the client process, one Numba thread per process (the processes
    already fill the cores)."""
    import numba

    from .worker import exit_with_parent

    exit_with_parent()
    numba.set_num_threads(1)


def _fixed_only(specs: dict, case: dict):
    """Pool task: ``(fixed positions, None)`` or ``(None, error text)`` for one case."""
    try:
        return case_positions(specs, case)[3], None
    except Exception as exc:  # noqa: BLE001 - reported per case
        return None, _error_text(exc)


def render_case(avatar, pose, garment: str, fixed, *, ranked: str = "before", views=None, size=DEFAULT_SIZE,
                renderer=None) -> dict:
    """Draw one case before and after the fix, poke-through pixels marked, in its worst view.

    Parameters
    ----------
    avatar : kisekae.avatar.Avatar
    pose : kisekae.avatar.Pose
    garment : str
        Garment name in ``avatar``.
    fixed : (N,3) float
        The garment's fixed positions, metres.
    ranked : {"before", "after"}
        The stage whose poke-through picks the view (ties: the other stage, then three-quarter).
    views : sequence of str, optional
        Candidate views (default every :data:`kisekae.render.camera.VIEWS`).
    size : (int, int)
        Picture size in pixels, at most :data:`MAX_SIZE`.
    renderer : kisekae.render.Renderer, optional

    Returns
    -------
    dict
        ``view``; ``view_pixels`` ``{stage: {view: poke-through pixels at PICK_SIZE}}``;
        ``pixels`` ``{stage: poke-through pixels at size}``; ``images`` ``{stage: (H,W,3) uint8}``
        with the poke-through pixels (grown by one pixel) in :data:`MARK`.
    """
    from ..render import VIEWS, default_renderer, named_camera
    from ..render.poke import mark_pixels, poke_through
    from ..render.scene import avatar_items, avatar_landmarks

    if ranked not in WORST_BY:
        raise KisekaeError(f"must be one of {', '.join(WORST_BY)}, got {ranked!r}", "ranked")
    w, h = picture_size(size)
    views = tuple(VIEWS if views is None else views)
    if not views:
        raise KisekaeError("no views to choose from", "views")
    r = renderer or default_renderer()
    body, before = avatar_items(avatar, pose, garments=[garment])
    body_a, after = avatar_items(avatar, pose, garments=[garment], positions={garment: np.asarray(fixed)})
    items = {"before": (body, before[garment]), "after": (body_a, after[garment])}
    landmarks = avatar_landmarks(avatar, pose)
    cams = {v: named_camera(v, body.positions, w / h, landmarks=landmarks) for v in views}
    counts = {s: {v: poke_through(b, [g], cams[v], PICK_SIZE, renderer=r).count for v in views}
              for s, (b, g) in items.items()}
    other = "after" if ranked == "before" else "before"
    view = max(views, key=lambda v: (counts[ranked][v], counts[other][v], v == "three_quarter"))
    out = {"view": view, "view_pixels": counts, "pixels": {}, "images": {}}
    for stage, (b, g) in items.items():
        res = poke_through(b, [g], cams[view], (w, h), renderer=r)
        out["pixels"][stage] = res.count
        out["images"][stage] = mark_pixels(r.draw([b, g], cams[view], (w, h)).rgb, res.mask, color=MARK, grow=1)
    return out


def picture_size(value) -> tuple:
    """Parse a picture size (``"WxH"``, a name like ``"720p"``, or a pair) no larger than :data:`MAX_SIZE`."""
    from ..render.camera import resolution

    w, h = resolution(value)
    if w > MAX_SIZE[0] or h > MAX_SIZE[1]:
        raise KisekaeError(f"pictures are at most {MAX_SIZE[0]}x{MAX_SIZE[1]} (720p), got {w}x{h}", "picture_size")
    return w, h


def _slug(text) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-.")[:40] or "x"


def _stem(i: int, case: dict) -> str:
    """File name stem of the ``i``-th case's pictures (``<stem>_before.png``, ``<stem>_after.png``)."""
    return f"{i:02d}_{_slug(case['body'])}_{_slug(case['garment'])}_{_slug(case['motion'])}_{case['frame']}"


def write_pictures(store: Store, out_dir, *, top: int = 20, worst_by: str = "before", size=DEFAULT_SIZE,
                   views=None, force: bool = False, workers: int = 1, progress=None) -> dict:
    """Render the worst cases of ``store`` into ``out_dir`` (PNGs and ``index.html``).

    Parameters
    ----------
    store : Store
    out_dir : str or Path
        Output folder (created, with parents, when missing).
    top : int
        Number of cases, see :func:`picture_cases`.
    worst_by : {"before", "after"}
    size : (int, int) or str
        Picture size, at most 1280x720.
    views : sequence of str, optional
        Candidate views (default all named views).
    force : bool
        Overwrite an existing ``index.html`` and PNGs of the same names (otherwise any of them
        existing is refused before anything is written, :func:`kisekae.outputs.check_outputs`).
    workers : int
        Processes that re-run the fix (about 90 % of the time per case); 1 (default) fixes in this
        process. Rendering always happens in this process, on one GL context.
    progress : callable, optional
        ``progress(done, total)`` after each case.

    Returns
    -------
    dict
        ``{"dir", "index", "worst_by", "size", "workers", "seconds", "cpu_seconds", "cases"}`` (CPU
        seconds of this process only, not of the fix processes); each case is its
        :func:`picture_cases` entry plus ``rank``, ``view``, ``before_pixels``, ``after_pixels``
        (poke-through pixels at ``size``), ``view_pixels``, ``before_png``, ``after_png`` (paths)
        and ``error`` (None, or why this case could not be drawn).

    Raises
    ------
    KisekaeError
        Bad arguments, an existing ``index.html`` or picture without ``force``, or cases whose catalogue the
        store does not record (:func:`case_specs`); nothing is written then.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    out = Path(out_dir)
    size = picture_size(size)
    index = out / "index.html"
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise KisekaeError(f"must be a positive integer, got {workers!r}", "workers")
    cases = picture_cases(store, top, worst_by)
    specs = case_specs(store, cases)
    pngs = [out / f"{_stem(i, case)}_{stage}.png" for i, case in enumerate(cases, 1) for stage in ("before", "after")]
    check_outputs([index, *pngs], force=force, folders=[out])
    out.mkdir(parents=True, exist_ok=True)
    renderer, pool, futures = None, None, [None] * len(cases)
    if workers > 1 and len(cases) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(min(int(workers), len(cases)), mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_init_fix_process)
        futures = [pool.submit(_fixed_only, sp, case) for case, sp in zip(cases, specs)]
    try:
        for i, (case, sp, fut) in enumerate(zip(cases, specs, futures), 1):
            if renderer is None:
                from ..render import default_renderer

                renderer = default_renderer()
            _draw_case(i, case, sp, fut, out, worst_by, views, size, renderer)
            if progress is not None:
                progress(i, len(cases))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    summary = {"dir": str(out), "index": str(index), "worst_by": worst_by, "size": list(size), "cases": cases,
               "workers": int(workers), "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0}
    index.write_text(_html(summary, store.path))
    return summary


def _draw_case(i, case, specs, future, out, worst_by, views, size, renderer) -> None:
    """Fix the case (or take the pool's fixed positions), render it and save its PNGs; a failure
    (a file gone or broken since the run) becomes the case's ``error`` and the others go on."""
    from PIL import Image

    case.update(rank=i, view=None, before_pixels=None, after_pixels=None, view_pixels=None, before_png=None,
                after_png=None, error=None)
    try:
        if future is None:
            avatar, gname, pose, fixed = case_positions(specs, case)
        else:
            fixed, error = future.result()
            if error is not None:
                case["error"] = error
                return
            avatar, gname, pose = _load(specs, case)
        res = render_case(avatar, pose, gname, fixed, ranked=worst_by, views=views, size=size, renderer=renderer)
    except Exception as exc:  # noqa: BLE001 - reported per case
        case["error"] = _error_text(exc)
        return
    for stage in ("before", "after"):
        path = out / f"{_stem(i, case)}_{stage}.png"
        Image.fromarray(res["images"][stage]).save(path)
        case[f"{stage}_png"] = str(path)
        case[f"{stage}_pixels"] = int(res["pixels"][stage])
    case["view"] = res["view"]
    case["view_pixels"] = res["view_pixels"]


def _fmt(col: str, v) -> str:
    if v is None:
        return "–"
    if col.endswith("_m"):
        return f"{1000 * v:.1f}"
    if col.endswith("fraction"):
        return f"{100 * v:.2f}"
    return str(v)


def _html(summary: dict, store_path) -> str:
    from ..render.htmlpage import html_page, picture, scroll_box

    e = html.escape
    ranked = summary["worst_by"]
    how = ("most garment vertices inside the body before the fix" if ranked == "before"
           else "most garment edges still crossing the body after the fix")
    w, h = summary["size"]
    style = (f".pair{{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,300px),1fr));gap:8px;"
             f"max-width:{2 * w + 8}px}}td,th{{text-align:right}}.err{{color:#a00}}")
    parts = [
        f"<h1>Worst cases of {e(str(store_path))}</h1>",
        f"<p>{len(summary['cases'])} case(s) with the {e(how)}. Each picture shows the body and one garment, "
        f"skinned (<i>before</i>) and fixed by <code>kisekae.fit.fix.fix_pose</code> with the row's settings "
        f"(<i>after</i>), {w}x{h} pixels, in the view with the most poke-through pixels "
        f"{'before' if ranked == 'before' else 'after'} the fix. Poke-through pixels (skin showing through the "
        "garment's outside) are magenta. Lengths in mm, fractions in %.</p>",
    ]
    if not summary["cases"]:
        parts.append("<p>No case has a problem in this stage: nothing to draw.</p>")
    cols = [("inside_count", "inside"), ("inside_fraction", "inside %"), ("max_depth_m", "depth mm"),
            ("edge_crossings", "crossings")]
    for c in summary["cases"]:
        title = f"{c['rank']}. {c['body']} / {c['garment']} / {c['motion']} frame {c['frame']}"
        parts.append(f"<h2>{e(title)}</h2>")
        rows = "".join(f"<tr><th>{stage}</th>" + "".join(f"<td>{e(_fmt(k, c.get(f'{stage}_{k}')))}</td>"
                                                         for k, _ in cols)
                       + f"<td>{e(_fmt('', c.get(f'{stage}_pixels')))}</td></tr>" for stage in ("before", "after"))
        parts.append(scroll_box("<table><thead><tr><th>stage</th>" + "".join(f"<th>{e(n)}</th>" for _, n in cols)
                                + f"<th>poke-through px</th></tr></thead><tbody>{rows}</tbody></table>"))
        parts.append(f"<p>pose {e(str(c['pose']))}, settings {e(c['settings_hash'])}"
                     + (f", view <b>{e(c['view'])}</b>" if c["view"] else "") + "</p>")
        if c["error"]:
            parts.append(f"<p class='err'>Not drawn: {e(c['error'])}</p>")
            continue
        parts.append("<div class='pair'>")
        for stage in ("before", "after"):
            name = Path(c[f"{stage}_png"]).name
            alt = (f"Render of garment {c['garment']} on body {c['body']}, motion {c['motion']} frame {c['frame']} "
                   f"(pose {c['pose']}), {stage} the fix, {c['view'].replace('_', '-')} view: "
                   f"{c[f'{stage}_pixels']} poke-through pixels, painted magenta.")
            parts.append(f"<figure>{picture(name, alt, (w, h))}"
                         f"<figcaption>{stage}: {c[f'{stage}_pixels']} poke-through px</figcaption></figure>")
        parts.append("</div>")
    parts.append(f"<p>Rendered in {summary['seconds']:.1f} s wall, {summary['cpu_seconds']:.1f} s CPU "
                 "(this process).</p>")
    return html_page("kisekae batch: worst cases", "\n".join(parts), style=style)

"""``kisekae batch report``: the worst cases and the failures of a result store, as tables.

Everything is a plain SQL query over the ``results`` table, so the same numbers can be pulled
from any SQLite client.
"""

from __future__ import annotations

from .store import Store

_TASK = "body, garment, motion, frame, settings_hash"


def overview(store: Store) -> list:
    """Per stage: rows, error-free rows, error rows, clipping rows (``inside_count > 0``) and the deepest clip."""
    out = []
    for stage, n, ok, err, clip, deepest, crossings in store.query(
            "SELECT stage, COUNT(*), SUM(error IS NULL), SUM(error IS NOT NULL), SUM(inside_count > 0), "
            "MAX(max_depth_m), SUM(edge_crossings > 0) FROM results GROUP BY stage "
            "ORDER BY CASE stage WHEN 'before' THEN 0 WHEN 'after' THEN 1 ELSE 2 END"):
        out.append({"stage": stage, "rows": n, "ok": ok or 0, "errors": err or 0, "clipping": clip or 0,
                    "crossing": crossings or 0, "max_depth_m": deepest})
    return out


def worst_cases(store: Store, top: int = 20, stage: str = "before") -> list:
    """The ``top`` rows of ``stage`` with the deepest clipping (then the largest inside fraction),
    each joined with its ``after`` row when there is one (``after_*`` fields)."""
    other = "after" if stage == "before" else "before"
    sql = (f"SELECT a.body, a.garment, a.motion, a.frame, a.pose, a.vertices, a.inside_count, a.inside_fraction, "
           f"a.max_depth_m, a.p95_depth_m, a.edge_crossings, b.inside_count, b.max_depth_m, b.edge_crossings, "
           f"b.max_push_m FROM results a LEFT JOIN results b ON b.stage = ? AND b.error IS NULL AND "
           f"a.body = b.body AND a.garment = b.garment AND a.motion = b.motion AND a.frame = b.frame AND "
           f"a.settings_hash = b.settings_hash "
           f"WHERE a.stage = ? AND a.error IS NULL AND a.inside_count > 0 "
           f"ORDER BY a.max_depth_m DESC, a.inside_fraction DESC, a.body, a.garment, a.motion, a.frame LIMIT ?")
    names = ("body", "garment", "motion", "frame", "pose", "vertices", "inside_count", "inside_fraction",
             "max_depth_m", "p95_depth_m", "edge_crossings", f"{other}_inside_count", f"{other}_max_depth_m",
             f"{other}_edge_crossings", f"{other}_max_push_m")
    return [dict(zip(names, r)) for r in store.query(sql, (other, stage, int(top)))]


def per_garment(store: Store) -> list:
    """Per (body, garment, stage): frames checked, frames clipping, deepest clip and where it happens."""
    sql = ("SELECT body, garment, stage, COUNT(*), SUM(inside_count > 0), MAX(max_depth_m), "
           "AVG(inside_fraction) FROM results WHERE error IS NULL GROUP BY body, garment, stage "
           "ORDER BY MAX(max_depth_m) DESC, body, garment, stage")
    out = []
    for body, garment, stage, n, clip, deepest, mean_frac in store.query(sql):
        where = store.query("SELECT motion, frame FROM results WHERE body=? AND garment=? AND stage=? AND "
                            "error IS NULL ORDER BY max_depth_m DESC, motion, frame LIMIT 1", (body, garment, stage))
        out.append({"body": body, "garment": garment, "stage": stage, "frames": n, "clipping_frames": clip or 0,
                    "max_depth_m": deepest, "mean_inside_fraction": mean_frac,
                    "worst": f"{where[0][0]}:{where[0][1]}" if where and clip else ""})
    return out


def failures(store: Store, limit: int = 50) -> list:
    """Error rows grouped by (body, garment, motion, error): how many rows each failure produced."""
    sql = ("SELECT body, garment, motion, error, COUNT(*) FROM results WHERE error IS NOT NULL "
           "GROUP BY body, garment, motion, error ORDER BY COUNT(*) DESC, body, garment, motion LIMIT ?")
    return [{"body": b, "garment": g, "motion": m, "error": e, "rows": n} for b, g, m, e, n in
            store.query(sql, (int(limit),))]


def build_report(store: Store, top: int = 20) -> dict:
    """Every section of the report as plain data (the ``--json`` output)."""
    return {"overview": overview(store), "worst_before": worst_cases(store, top, "before"),
            "worst_after": worst_cases(store, top, "after"), "per_garment": per_garment(store),
            "failures": failures(store)}


def _cell(col: str, v) -> str:
    if v is None:
        return ""
    if col.endswith("_m"):
        return f"{1000 * v:.1f}"
    if col.endswith("fraction"):
        return f"{100 * v:.2f}"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _head(col: str) -> str:
    if col.endswith("_m"):
        return col[:-2] + " mm"
    if col.endswith("fraction"):
        return col + " %"
    return col


def text_table(rows: list, columns=None) -> str:
    """A fixed-width table (lengths in millimetres, fractions in percent)."""
    if not rows:
        return "(none)"
    columns = columns or list(rows[0])
    cells = [[_head(c) for c in columns]] + [[_cell(c, r.get(c)) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_report(rep: dict) -> str:
    """The report as text: overview, worst cases before (and after) the fix, per garment, failures."""
    parts = ["Overview (rows per stage)", text_table(rep["overview"])]
    parts += ["", "Worst cases before the fix (deepest clipping first)",
              text_table(rep["worst_before"], ["body", "garment", "motion", "frame", "inside_count",
                                               "inside_fraction", "max_depth_m", "p95_depth_m", "edge_crossings"]
                         + (["after_inside_count", "after_max_depth_m", "after_max_push_m"]
                            if any(r["after_inside_count"] is not None for r in rep["worst_before"]) else []))]
    if any(o["stage"] == "after" for o in rep["overview"]):
        parts += ["", "Worst cases after the fix", text_table(rep["worst_after"], [
            "body", "garment", "motion", "frame", "inside_count", "inside_fraction", "max_depth_m", "edge_crossings",
            "before_inside_count", "before_max_depth_m"])]
    parts += ["", "Per garment", text_table(rep["per_garment"])]
    parts += ["", "Failures", text_table(rep["failures"])]
    if rep.get("pictures") is not None:
        parts += ["", format_pictures(rep["pictures"])]
    return "\n".join(parts)


def format_pictures(pictures: dict) -> str:
    """The pictures section of the text report: one line per case with its view and PNG paths."""
    ranked = "inside_count before the fix" if pictures["worst_by"] == "before" else "edge_crossings after the fix"
    head = (f"Pictures: {pictures['index']} ({len(pictures['cases'])} worst by {ranked}, "
            f"{pictures['size'][0]}x{pictures['size'][1]}, poke-through pixels in magenta; "
            f"{pictures['seconds']:.1f} s wall, {pictures['cpu_seconds']:.1f} s CPU in this process, "
            f"{pictures['workers']} fix process(es))")
    rows = [{"rank": c["rank"], "body": c["body"], "garment": c["garment"], "motion": c["motion"],
             "frame": c["frame"], "view": c["view"] or "", "before_px": c["before_pixels"],
             "after_px": c["after_pixels"],
             "pictures": (f"{c['before_png']} {c['after_png']}" if not c["error"] else f"not drawn: {c['error']}")}
            for c in pictures["cases"]]
    return head + "\n" + text_table(rows)

"""``kisekae batch``: check a whole catalogue (bodies x garments x motions), before and after the fix.

``kisekae batch CATALOG.toml [--resume | --fresh] [--workers N | --scheduler ADDRESS]`` runs it;
``kisekae batch report STORE.sqlite [--pictures DIR]`` summarises the worst cases and the failures,
with before/after pictures of the worst ones.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def register(sub):
    p = sub.add_parser(
        "batch", help="check every (body, garment, motion) of a catalogue on local processes or a Dask cluster",
        description="Run `check` before and after the fix for every (body, garment, motion frame) listed in a TOML "
                    "catalogue and store one row per stage in a SQLite file. Interrupted runs continue with "
                    "--resume. `kisekae batch report STORE` prints the worst cases. Exit status 1 means the run "
                    "finished but some catalogue entries failed (their rows carry the error).")
    p.add_argument("target", metavar="CATALOG.toml | report", help="the catalogue to run, or 'report'")
    p.add_argument("report_store", nargs="?", metavar="STORE", help="with 'report': the result store to summarise")
    p.add_argument("--store", metavar="FILE", help="SQLite result store (default: the catalogue's 'store', else "
                                                  "./<catalogue stem>.sqlite)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run: skip tasks already stored")
    p.add_argument("--fresh", action="store_true", help="delete this catalogue's stored rows and run everything")
    p.add_argument("--workers", type=int, metavar="N", help="local worker processes (default: all cores; with "
                                                             "report --pictures: processes re-running the fix)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on a Dask distributed cluster (tcp://host:8786)")
    p.add_argument("--allow-outside-paths", action="store_true",
                   help="accept absolute paths and paths outside the catalogue's folder in the catalogue "
                        "(refused by default, so a catalogue cannot make kisekae read files elsewhere)")
    p.add_argument("--inline", action="store_true", help="run in this process, one task at a time (debugging)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--top", type=int, default=20, metavar="N", help="report: worst cases to list (default 20)")
    p.add_argument("--json", metavar="FILE", help="report: also write the report as JSON")
    p.add_argument("--force", action="store_true", help="report: overwrite an existing --json file or --pictures "
                                                        "index.html")
    p.add_argument("--pictures", metavar="DIR", help="report: render the --top worst cases before/after the fix, "
                                                     "poke-through pixels marked, into DIR (PNGs + index.html)")
    p.add_argument("--worst-by", choices=("before", "after"), default="before",
                   help="report --pictures: rank by vertices inside before the fix (default) or by edges still "
                        "crossing after it")
    p.add_argument("--picture-size", default="640x360", metavar="WxH",
                   help="report --pictures: picture size, at most 1280x720 (default 640x360)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from ..errors import KisekaeError

    if args.target == "report":
        return _report(args)
    if args.report_store:
        raise KisekaeError("unexpected second argument (only 'report' takes a store)", args.report_store)
    for flag, given in (("--json", args.json), ("--pictures", args.pictures)):
        if given:
            raise KisekaeError(f"{flag} belongs to 'kisekae batch report'", flag)
    if args.inline and (args.scheduler or args.workers):
        raise KisekaeError("--inline excludes --workers and --scheduler", "--inline")
    if args.scheduler and args.workers:
        raise KisekaeError("--workers applies to local processes; a Dask cluster has its own", "--workers")
    from ..batch import load_catalog, run_catalog

    catalog = load_catalog(args.target, allow_outside=args.allow_outside_paths)
    store = args.store or catalog.store or (Path.cwd() / f"{Path(args.target).stem}.sqlite")
    executor = "inline" if args.inline else ("dask" if args.scheduler else "local")
    try:
        s = run_catalog(catalog, store, resume=args.resume, fresh=args.fresh, executor=executor, workers=args.workers,
                        scheduler=args.scheduler, progress=not args.no_progress)
    except KeyboardInterrupt:
        print(f"kisekae: interrupted; finished tasks are stored in {store}; continue with --resume", file=sys.stderr)
        return 130
    print(f"{s.ran} tasks run, {s.skipped} already stored, {s.planned} planned; {s.rows} rows written "
          f"({s.error_rows} with errors) to {store}; {s.wall_s:.1f} s on {s.workers} {s.executor} worker(s)"
          + (f", {s.tasks_per_s:.1f} tasks/s" if s.ran else ""))
    if s.error_rows:
        print(f"some entries failed: see `kisekae batch report {store}`", file=sys.stderr)
        return 1
    return 0


def _report(args) -> int:
    from ..batch.report import build_report, format_report
    from ..batch.store import Store
    from ..errors import KisekaeError

    path = args.report_store or args.store
    if not path:
        raise KisekaeError("give the result store: kisekae batch report STORE.sqlite", "report")
    if args.top < 1:
        raise KisekaeError(f"--top must be at least 1, got {args.top}", "--top")
    from .common import check_outputs

    check_outputs([args.json] if args.json else [], force=args.force)  # --pictures: checked by write_pictures
    with Store(path, readonly=True) as store:
        rep = build_report(store, args.top)
        if args.pictures:
            from ..batch.pictures import write_pictures

            def progress(done, total):
                print(f"pictures: {done}/{total} cases", file=sys.stderr)

            workers = args.workers if args.workers is not None else (os.cpu_count() or 1)
            rep["pictures"] = write_pictures(store, args.pictures, top=args.top, worst_by=args.worst_by,
                                             size=args.picture_size, force=args.force, workers=workers,
                                             progress=progress)
    print(format_report(rep))
    if args.json:
        Path(args.json).write_text(json.dumps(rep, indent=1))
        print(f"wrote {args.json}", file=sys.stderr)
    failed = [c for c in (rep.get("pictures") or {}).get("cases", []) if c["error"]]
    if failed:
        print(f"{len(failed)} case(s) could not be drawn (see {rep['pictures']['index']})", file=sys.stderr)
        return 1
    return 0

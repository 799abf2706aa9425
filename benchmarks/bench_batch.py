#!/usr/bin/env python3
"""Batch catalogue runs: result store choice, checks per second, per-task overhead.

1. Store: SQLite (WAL) against DuckDB (and DuckDB writing Parquet), on the batch client's write
   pattern (one transaction per finished task, two rows each) and on the report's worst-case
   query over a large table.
2. Throughput: the built-in avatar with tights and skirt over the named poses and the BVH
   excerpt, run by the plain serial loop (baseline, same run), the inline executor, local
   processes (1 and 2) and a Dask LocalCluster (1 and 2 workers). Wall time and CPU time of all
   processes involved.
3. Per-task overhead: no-op tasks through local processes and Dask, as the marginal cost per task
   between a short and a long run (start-up reported separately).

Run: ``.venv/bin/python benchmarks/bench_batch.py [--quick] [--after]``
(``--after`` adds the push-out fix stage to the throughput runs).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _timing import table  # noqa: E402

from kisekae.batch import load_catalog, plan, run_catalog  # noqa: E402
from kisekae.batch.store import COLUMNS, KEY_COLUMNS, Store  # noqa: E402
from kisekae.batch.worker import install, noop_task, run_task  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "kisekae" / "data" / "samples"
POSES = '["stand", "leg_raise", "crouch", "knee_bend", "sit", "lunge", "arms_up", "arms_forward", "twist"]'


def fake_rows(n_tasks: int, seed: int = 0) -> list:
    rng = random.Random(seed)
    out = []
    for t in range(n_tasks):
        task = []
        for stage in ("before", "after"):
            r = {c: None for c in COLUMNS}
            r.update(body=f"b{t % 20}", garment=f"g{t // 1000}", motion=f"m{(t // 20) % 50}", frame=t % 20,
                     stage=stage, settings_hash="0123456789abcdef", rig="game_engine", pose="p", vertices=2674,
                     inside_count=rng.randint(0, 300), inside_fraction=rng.random() * 0.1,
                     max_depth_m=rng.random() * 0.07, p95_depth_m=rng.random() * 0.04,
                     edge_crossings=rng.randint(0, 300), time_ms=20.0, task_ms=25.0, worker="host:1",
                     finished_at=time.time(), kisekae_version="0.1.0")
            task.append(r)
        out.append(task)
    return out


WORST = ("SELECT a.body, a.garment, a.motion, a.frame, a.max_depth_m, b.max_depth_m FROM results a "
         "LEFT JOIN results b ON b.stage='after' AND a.body=b.body AND a.garment=b.garment AND a.motion=b.motion "
         "AND a.frame=b.frame AND a.settings_hash=b.settings_hash WHERE a.stage='before' AND a.inside_count>0 "
         "ORDER BY a.max_depth_m DESC LIMIT 20")


def bench_store(folder: Path, n_small: int, n_big: int) -> list:
    rows = []
    tasks = fake_rows(n_big)
    # SQLite through the real Store
    st = Store(folder / "s.sqlite")
    t, c = time.perf_counter(), time.process_time()
    for task in tasks[:n_small]:
        st.write(task)
    w_small, c_small = time.perf_counter() - t, time.process_time() - c
    t = time.perf_counter()
    for i in range(n_small, n_big, 500):
        st.write([r for task in tasks[i:i + 500] for r in task])
    w_bulk = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(5):
        st.query(WORST)
    w_q = (time.perf_counter() - t) / 5
    st.close()
    size = sum(p.stat().st_size for p in folder.glob("s.sqlite*"))
    rows.append(["SQLite (WAL, Store)", f"{n_small / w_small:,.0f}", f"{c_small / n_small * 1e3:.3f}",
                 f"{2 * (n_big - n_small) / w_bulk:,.0f}", f"{w_q * 1e3:.1f}", f"{size / 2 / n_big:.0f}"])
    try:
        import duckdb
    except ImportError:
        rows.append(["DuckDB", "not installed", "", "", "", ""])
        return rows
    types = {"frame": "INTEGER", "vertices": "INTEGER", "inside_count": "INTEGER", "edge_crossings": "INTEGER",
             "moved_unnecessarily": "INTEGER"}
    db = duckdb.connect(str(folder / "d.duckdb"))
    db.execute(f"CREATE TABLE results ({', '.join(c + ' ' + types.get(c, 'DOUBLE' if c.endswith(('_m', 'fraction', '_ms', '_at')) else 'VARCHAR') for c in COLUMNS)}, "
               f"PRIMARY KEY ({', '.join(KEY_COLUMNS)}))")
    sql = f"INSERT OR REPLACE INTO results VALUES ({', '.join('?' * len(COLUMNS))})"
    n_duck = max(50, n_small // 10)
    t, c = time.perf_counter(), time.process_time()
    for task in tasks[:n_duck]:
        db.execute("BEGIN")
        db.executemany(sql, [tuple(r[k] for k in COLUMNS) for r in task])
        db.execute("COMMIT")
    w_small, c_small = time.perf_counter() - t, time.process_time() - c
    # Bulk: DuckDB's fast path is COPY from a file (executemany runs ~100 rows/s here).
    import csv

    csv_path = folder / "bulk.csv"
    t = time.perf_counter()
    with open(csv_path, "w", newline="") as fh:
        wr = csv.writer(fh)
        for task in tasks[n_duck:]:
            for r in task:
                wr.writerow(["" if r[k] is None else r[k] for k in COLUMNS])
    db.execute(f"COPY results FROM '{csv_path}' (FORMAT CSV, NULLSTR '')")
    w_bulk = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(5):
        db.execute(WORST).fetchall()
    w_q = (time.perf_counter() - t) / 5
    db.close()
    size = (folder / "d.duckdb").stat().st_size
    rows.append(["DuckDB (table, PK)", f"{n_duck / w_small:,.0f}", f"{c_small / n_duck * 1e3:.3f}",
                 f"{2 * (n_big - n_duck) / w_bulk:,.0f} (COPY CSV)", f"{w_q * 1e3:.1f}", f"{size / 2 / n_big:.0f}"])
    # Parquet through DuckDB: one file per write batch (files are immutable), query over the glob.
    pq = folder / "pq"
    pq.mkdir()
    con = duckdb.connect()
    t = time.perf_counter()
    for i in range(0, n_small, 1):
        if i >= 200:
            break
        con.execute(f"COPY (SELECT * FROM (VALUES {', '.join('(' + ', '.join('?' * len(COLUMNS)) + ')' for _ in tasks[i])}) "
                    f"t({', '.join(COLUMNS)})) TO '{pq}/p{i:06d}.parquet' (FORMAT PARQUET)",
                    [r[k] for r in tasks[i] for k in COLUMNS])
    w_small = (time.perf_counter() - t) / 200
    t = time.perf_counter()
    for _ in range(5):
        con.execute(WORST.replace("results", f"read_parquet('{pq}/*.parquet')")).fetchall()
    w_q = (time.perf_counter() - t) / 5
    rows.append(["DuckDB -> Parquet (file per task)", f"{1 / w_small:,.0f}", "", "", f"{w_q * 1e3:.1f} (400 rows)",
                 ""])
    return rows


def _cluster_cpu(client) -> float:
    import psutil

    def cpu():
        t = psutil.Process().cpu_times()
        return t.user + t.system

    return sum(client.run(cpu).values())


def write_catalog(folder: Path, after: bool) -> Path:
    stages = '["before", "after"]' if after else '["before"]'
    mhclo = "".join(f'[[garments]]\npath = "{SAMPLES / g}.mhclo"\n' for g in ("female_casualsuit01", "male_worksuit01"))
    p = folder / "bench.toml"
    p.write_text(f"stages = {stages}\n" + '[[bodies]]\nname = "mh"\n[[garments]]\nname = "tights"\n'
                 '[[garments]]\nname = "skirt"\n' + mhclo
                 + f'[[motions]]\nposes = {POSES}\n[[motions]]\nbvh = "{SAMPLES / "cmu_35_01_excerpt.bvh"}"\n')
    return p


def throughput(folder: Path, after: bool, quick: bool) -> list:
    import distributed

    cat = load_catalog(write_catalog(folder, after))
    keys = plan(cat)
    n_rows = len(keys) * len(cat.stages)
    out = []
    # Baseline: the plain serial loop, no executor, no store (avatar already loaded).
    install(cat.specs())
    run_task(cat.catalog_id, keys[0])
    t, c = time.perf_counter(), time.process_time()
    for k in keys:
        run_task(cat.catalog_id, k)
    w, cpu = time.perf_counter() - t, time.process_time() - c
    out.append(["serial loop (baseline, warm, no store)", 1, f"{w:.2f}", f"{cpu:.2f}", "", f"{n_rows / w:.1f}",
                f"{n_rows / w:.1f}", "1.00x"])
    base = n_rows / w

    def record(label, n, fn):
        first = []

        def on_result(summary, backend):
            if not first:
                first.append((time.perf_counter(), summary.ran))

        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t, c = time.perf_counter(), time.process_time()
        extra = fn(on_result)
        end = time.perf_counter()
        w = end - t
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = time.process_time() - c + (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime) + (extra or 0)
        t1, done1 = first[0]
        steady = (len(keys) - done1) * len(cat.stages) / (end - t1)
        out.append([label, n, f"{w:.2f}", f"{cpu:.2f}", f"{t1 - t:.2f}", f"{n_rows / w:.1f}", f"{steady:.1f}",
                    f"{steady / base:.2f}x"])

    i = iter(range(100))
    record("inline executor (+store)", 1, lambda cb: run_catalog(
        cat, folder / f"t{next(i)}.sqlite", executor="inline", progress=False, on_result=cb) and None)
    for n in (1, 2):
        record("local processes (cold start)", n, lambda cb: run_catalog(
            cat, folder / f"t{next(i)}.sqlite", executor="local", workers=n, progress=False, on_result=cb) and None)
    for n in (1, 2):
        with distributed.LocalCluster(n_workers=n, processes=True, threads_per_worker=1, host="127.0.0.1",
                                      dashboard_address=":0", silence_logs=40) as cl, distributed.Client(cl) as client:
            c0 = _cluster_cpu(client)

            def go(cb):
                run_catalog(cat, folder / f"t{next(i)}.sqlite", client=client, progress=False, on_result=cb)
                return _cluster_cpu(client) - c0

            record("Dask LocalCluster (running cluster)", n, go)
    return out


def overhead(folder: Path, quick: bool) -> list:
    import distributed

    out = []
    sizes = (100, 600) if quick else (200, 2000)

    def cat_of(n):
        p = folder / f"noop{n}.toml"
        p.write_text('stages = ["before"]\n[[bodies]]\nname = "mh"\n[[motions]]\nposes = ["stand"]\n'
                     + "".join(f'[[garments]]\nname = "g{j:05d}"\n' for j in range(n)))
        return load_catalog(p)

    cats = {n: cat_of(n) for n in sizes}
    k = iter(range(100))

    def timed(**kw):
        res = {}
        for n in sizes:
            t = time.perf_counter()
            run_catalog(cats[n], folder / f"n{next(k)}.sqlite", progress=False, task_fn=noop_task, **kw)
            res[n] = time.perf_counter() - t
        per = (res[sizes[1]] - res[sizes[0]]) / (sizes[1] - sizes[0])
        return per, res[sizes[0]] - sizes[0] * per

    per, start = timed(executor="local", workers=2)
    out.append(["local processes, 2", f"{per * 1e3:.2f}", f"{start:.2f}"])
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=":0", silence_logs=40) as cl, distributed.Client(cl) as client:
        per, start = timed(client=client)
    out.append(["Dask LocalCluster, 2 (running)", f"{per * 1e3:.2f}", f"{start:.2f}"])
    per, start = timed(executor="inline")
    out.append(["inline (store write + loop only)", f"{per * 1e3:.2f}", f"{start:.2f}"])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller store and overhead runs")
    ap.add_argument("--after", action="store_true", help="include the fix (after) stage in the throughput runs")
    args = ap.parse_args(argv)
    print(f"machine: {os.cpu_count()} cores; times in seconds unless marked")
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "store").mkdir()
        n_small, n_big = (1000, 20000) if args.quick else (3000, 100000)
        print(f"\n1. Result store: {n_small} single-task transactions (2 rows each), then bulk to {2 * n_big:,} rows; "
              "worst-20 query with the before/after join")
        print(table(bench_store(d / "store", n_small, n_big),
                    ["store", "task commits/s", "CPU ms/commit", "bulk rows/s", "worst-20 query ms", "bytes/row"]))
        print(f"\n2. Throughput: built-in avatar, tights, skirt and the two .mhclo garments, 9 named poses + 3 BVH frames "
              f"({'before and after' if args.after else 'before'} stage); CPU = all processes")
        print(table(throughput(d, args.after, args.quick),
                    ["executor", "workers", "wall s", "CPU s", "to 1st result s", "checks/s (all)",
                     "checks/s (after 1st)", "steady vs baseline"]))
        print("\n3. Per-task overhead (no-op tasks): marginal wall ms per task, and fixed start-up")
        print(table(overhead(d, args.quick), ["executor", "ms per task", "start-up s"]))


if __name__ == "__main__":
    main()

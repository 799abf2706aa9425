"""The result store: one SQLite file, one row per (body, garment, motion, frame, stage, settings hash).

Why SQLite (measured in ``benchmarks/bench_batch.py``, see ``docs/batch.md``): the client commits
each batch of finished tasks in its own transaction, so what matters is the cost of many small
atomic commits, and SQLite in WAL mode does those one to two orders of magnitude faster than
DuckDB, while the report's worst-case queries stay in milliseconds at catalogue scale. It is
also in the standard library and a single file any tool can open.

The ``catalogs`` table keeps each run's catalogue specs (names, absolute paths, effective fit
settings per garment, stages) as JSON, so ``kisekae batch report --pictures`` can rebuild any row's
case, with the settings its ``settings_hash`` stands for, after the catalogue file has changed or
gone. It was added without a schema-version change: stores written before it simply lack the
table until a run (``--resume`` will do) opens them for writing again.

Exactly-once: the primary key is the row's identity; only the client process writes; every
task's rows are written in one transaction (all stages or none). A resumed run skips the keys
whose rows are all present and error-free, and rewrites the others.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from ..errors import KisekaeError
from .worker import METRICS

SCHEMA_VERSION = 1
KEY_COLUMNS = ("body", "garment", "motion", "frame", "stage", "settings_hash")
INFO_COLUMNS = ("rig", "pose")
TIMING_COLUMNS = ("time_ms", "task_ms", "worker", "finished_at")
#: Every column of the ``results`` table, in order.
COLUMNS = KEY_COLUMNS + INFO_COLUMNS + METRICS + ("error",) + TIMING_COLUMNS + ("kisekae_version",)

_TYPES = {"frame": "INTEGER", "vertices": "INTEGER", "inside_count": "INTEGER", "edge_crossings": "INTEGER",
          "moved_unnecessarily": "INTEGER", "inside_fraction": "REAL", "max_depth_m": "REAL", "p95_depth_m": "REAL",
          "max_push_m": "REAL", "moved_fraction": "REAL", "time_ms": "REAL", "task_ms": "REAL",
          "finished_at": "REAL"}

_DDL = f"""
CREATE TABLE IF NOT EXISTS results (
  {", ".join(f"{c} {_TYPES.get(c, 'TEXT')}{' NOT NULL' if c in KEY_COLUMNS else ''}" for c in COLUMNS)},
  PRIMARY KEY ({", ".join(KEY_COLUMNS)})
);
CREATE INDEX IF NOT EXISTS results_depth ON results (stage, max_depth_m);
CREATE TABLE IF NOT EXISTS runs (
  run_id INTEGER PRIMARY KEY AUTOINCREMENT,
  catalog TEXT, catalog_id TEXT, executor TEXT, workers INTEGER, tasks INTEGER, skipped INTEGER,
  started_at REAL, finished_at REAL, status TEXT, kisekae_version TEXT
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS catalogs (
  catalog_id TEXT PRIMARY KEY, catalog TEXT, specs TEXT, recorded_at REAL
);
"""


class Store:
    """A SQLite result store (single writer: the batch client).

    Parameters
    ----------
    path : str or Path
        The database file; created with its tables when missing. An existing file that is not a
        kisekae result store is refused (never written into).
    readonly : bool
        Open an existing store for reading only (reports).
    """

    def __init__(self, path, *, readonly: bool = False):
        self.path = Path(path)
        if readonly:
            if not self.path.is_file():
                raise KisekaeError("store not found", self.path)
            uri = f"file:{self.path.resolve()}?mode=ro"
            self.db = sqlite3.connect(uri, uri=True)
        else:
            if self.path.parent and not self.path.parent.exists():
                raise KisekaeError("the store's folder does not exist", self.path)
            if self.path.is_dir():
                raise KisekaeError("is a folder; the result store is a file", self.path)
            if self.path.exists():
                # Only a kisekae store is written into; any other file (another program's database
                # included) is refused before SQLite changes a byte of it.
                Store(self.path, readonly=True).close()
            self.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            if not readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.executescript(_DDL)
                self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            version = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise KisekaeError(f"not a kisekae result store ({exc})", self.path) from None
        if version is None or int(version[0]) != SCHEMA_VERSION:
            self.db.close()
            raise KisekaeError(f"store schema version {version and version[0]} is not {SCHEMA_VERSION}", self.path)

    def close(self) -> None:
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- writing ---------------------------------------------------------------------------
    def write(self, rows) -> int:
        """Insert or replace ``rows`` (dicts with :data:`COLUMNS`) in one transaction; returns the count."""
        rows = list(rows)
        if not rows:
            return 0
        now = time.time()
        values = []
        for r in rows:
            missing = [c for c in KEY_COLUMNS if r.get(c) is None]
            if missing:
                raise KisekaeError(f"row lacks key column(s) {', '.join(missing)}", "results")
            values.append(tuple(now if c == "finished_at" and r.get(c) is None else r.get(c) for c in COLUMNS))
        sql = f"INSERT OR REPLACE INTO results ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
        with self.db:  # BEGIN ... COMMIT, or ROLLBACK on error
            self.db.execute("BEGIN")
            self.db.executemany(sql, values)
        return len(values)

    def delete_keys(self, task_keys) -> int:
        """Delete every stage's row of the given task keys (body, garment, motion, frame, settings_hash)."""
        n = 0
        with self.db:
            self.db.execute("BEGIN")
            for k in task_keys:
                cur = self.db.execute("DELETE FROM results WHERE body=? AND garment=? AND motion=? AND frame=? "
                                      "AND settings_hash=?", tuple(k))
                n += cur.rowcount
        return n

    def delete_stale_errors(self, task_keys) -> int:
        """Delete error rows of the planned (body, garment, motion, settings) combinations whose frame
        is no longer planned (for example the ``-1`` rows of a clip that could not be read before)."""
        planned = {tuple(k) for k in task_keys}
        combos = {(k[0], k[1], k[2], k[4]) for k in planned}
        stale = [(b, g, m, f, h) for b, g, m, f, h in self.db.execute(
            "SELECT DISTINCT body, garment, motion, frame, settings_hash FROM results WHERE error IS NOT NULL")
            if (b, g, m, h) in combos and (b, g, m, f, h) not in planned]
        return self.delete_keys(stale) if stale else 0

    def start_run(self, catalog: str, catalog_id: str, executor: str, workers: int, tasks: int, skipped: int) -> int:
        from .. import __version__

        with self.db:
            self.db.execute("BEGIN")
            cur = self.db.execute(
                "INSERT INTO runs (catalog, catalog_id, executor, workers, tasks, skipped, started_at, status, "
                "kisekae_version) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)",
                (catalog, catalog_id, executor, workers, tasks, skipped, time.time(), __version__))
        return int(cur.lastrowid)

    def record_catalog(self, catalog) -> None:
        """Keep ``catalog``'s specs (:meth:`~kisekae.batch.catalog.Catalog.specs`) under its id."""
        import json

        with self.db:
            self.db.execute("BEGIN")
            self.db.execute("INSERT OR REPLACE INTO catalogs VALUES (?, ?, ?, ?)",
                            (catalog.catalog_id, catalog.path, json.dumps(catalog.specs(), sort_keys=True),
                             time.time()))

    def catalogs(self) -> list:
        """Recorded catalogue specs, newest first: dicts ``{"catalog_id", "catalog", "specs"}``.

        Empty for a store written before the ``catalogs`` table existed (opened read-only).
        """
        import json

        if not self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='catalogs'").fetchone():
            return []
        return [{"catalog_id": cid, "catalog": path, "specs": json.loads(specs)} for cid, path, specs in
                self.db.execute("SELECT catalog_id, catalog, specs FROM catalogs ORDER BY recorded_at DESC")]

    def finish_run(self, run_id: int, status: str) -> None:
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute("UPDATE runs SET finished_at=?, status=? WHERE run_id=?", (time.time(), status, run_id))

    # -- reading ---------------------------------------------------------------------------
    def row_counts(self, task_keys, stages) -> dict:
        """For each task key present in the store: (rows, error-free rows) over ``stages``."""
        counts = {}
        q = (f"SELECT body, garment, motion, frame, settings_hash, COUNT(*), SUM(error IS NULL) FROM results "
             f"WHERE stage IN ({', '.join('?' * len(stages))}) GROUP BY body, garment, motion, frame, settings_hash")
        for b, g, m, f, h, n, ok in self.db.execute(q, tuple(stages)):
            counts[(b, g, m, f, h)] = (n, ok)
        planned = {tuple(k) for k in task_keys}
        return {k: v for k, v in counts.items() if k in planned}

    def completed(self, task_keys, stages) -> set:
        """Task keys whose rows for every stage exist and carry no error."""
        return {k for k, (n, ok) in self.row_counts(task_keys, stages).items() if n == len(stages) and ok == n}

    def rows(self, where: str = "", params=(), order: str = "body, garment, motion, frame, stage") -> list:
        """Rows of ``results`` as dicts (``where`` is an SQL condition with ``?`` parameters)."""
        sql = f"SELECT {', '.join(COLUMNS)} FROM results" + (f" WHERE {where}" if where else "") + f" ORDER BY {order}"
        return [dict(zip(COLUMNS, r)) for r in self.db.execute(sql, tuple(params))]

    def query(self, sql: str, params=()) -> list:
        return self.db.execute(sql, tuple(params)).fetchall()

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0])

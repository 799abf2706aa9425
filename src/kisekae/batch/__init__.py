"""Catalogue checks at scale: every garment on every body in every motion, before and after the fix.

``kisekae batch CATALOG.toml`` reads a catalogue (:mod:`.catalog`), runs one task per
(body, garment, motion, frame) on local processes or a Dask cluster (:mod:`.runner`, with the
worker side in :mod:`.worker`), and stores one row per stage in a SQLite file (:mod:`.store`).
Runs resume without losing or duplicating rows; ``kisekae batch report`` summarises the worst
cases (:mod:`.report`) and, with ``--pictures``, draws them before and after the fix
(:mod:`.pictures`).
"""

from .catalog import Catalog, TaskKey, load_catalog, parse_catalog, plan
from .pictures import write_pictures
from .runner import RunSummary, run_catalog
from .store import COLUMNS, KEY_COLUMNS, TIMING_COLUMNS, Store
from .worker import METRICS, fix_available, run_task

__all__ = ["Catalog", "TaskKey", "load_catalog", "parse_catalog", "plan", "RunSummary", "run_catalog", "Store",
           "COLUMNS", "KEY_COLUMNS", "TIMING_COLUMNS", "METRICS", "fix_available", "run_task", "write_pictures"]

"""Run a catalogue: plan the tasks, skip what the store already holds, execute, store atomically.

Executors (the client process alone writes the store):

* ``local`` (default): :class:`concurrent.futures.ProcessPoolExecutor` with one process per core;
  its initializer installs the catalogue and loads the bodies once per process. A pool broken
  by a dead process is rebuilt and the tasks that were in flight are submitted again.
* ``dask``: a :class:`distributed.Client` (``--scheduler ADDRESS``, or one given by the caller).
  The catalogue reaches each worker once through a ``WorkerPlugin`` (also on workers that join
  or restart later); tasks carry only their keys. A task whose worker dies is rescheduled by
  Dask on another worker. The plugin is unregistered when the run ends, and a scheduler-side guard
  unregisters it when the client dies without ending the run (the scheduler drops its tasks).
* ``inline``: in the client process, one task at a time (debugging; the benchmark's baseline).

At most ``window`` tasks are in flight, so a catalogue of millions of tasks never sits in memory
as futures. Finished tasks are written in one transaction per wake-up of the loop.
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED
from dataclasses import dataclass, field

from ..errors import KisekaeError, unexpected_error_text
from .catalog import Catalog, plan
from .store import Store
from .worker import install, run_task, warm

#: Times a task may be in flight when its local worker process dies before it gets error rows.
MAX_LOCAL_RETRIES = 3


@dataclass
class RunSummary:
    """What a run did. ``status`` is ``done``, ``interrupted`` or ``failed``."""

    store: str
    planned: int
    skipped: int
    ran: int = 0
    error_rows: int = 0
    rows: int = 0
    wall_s: float = 0.0
    status: str = "running"
    executor: str = ""
    workers: int = 0
    restarts: int = 0
    errors: list = field(default_factory=list)

    @property
    def tasks_per_s(self) -> float:
        return self.ran / self.wall_s if self.wall_s > 0 else 0.0


def error_rows(key, stages, message: str) -> list:
    """Rows recording that task ``key`` failed with ``message`` (one per stage, no metrics)."""
    from .. import __version__

    b, g, m, f, h = key
    return [{"body": b, "garment": g, "motion": m, "frame": int(f), "settings_hash": h, "stage": s,
             "error": message, "kisekae_version": __version__} for s in stages]


# -- backends ------------------------------------------------------------------------------
class _Inline:
    name = "inline"

    def __init__(self, specs, task_fn):
        install(specs)
        warm(specs["id"])
        self.cid, self.task_fn, self.workers = specs["id"], task_fn, 1

    def submit(self, key):
        return _Done(self.task_fn, self.cid, key)

    def wait(self, futures, timeout):
        return set(futures)

    def result(self, fut):
        return fut.result()

    def close(self, cancel=False):
        pass


class _Done:
    def __init__(self, fn, *args):
        try:
            self._value, self._exc = fn(*args), None
        except Exception as exc:  # noqa: BLE001
            self._value, self._exc = None, exc

    def result(self):
        if self._exc is not None:
            raise self._exc
        return self._value


class _Local:
    name = "local"

    def __init__(self, specs, task_fn, workers: int):
        self.specs, self.task_fn, self.workers = specs, task_fn, workers
        self.pool = None
        self._start()

    def _start(self):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from .worker import init_process

        # spawn: no inherited threads or locks, and the same start-up a Dask worker has.
        self.pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=init_process, initargs=(self.specs,))

    def restart(self):
        self.pool.shutdown(wait=False, cancel_futures=True)
        self._start()

    def submit(self, key):
        return self.pool.submit(self.task_fn, self.specs["id"], key)

    def wait(self, futures, timeout):
        from concurrent.futures import wait

        return wait(futures, timeout=timeout, return_when=FIRST_COMPLETED).done

    def result(self, fut):
        return fut.result()

    def close(self, cancel=False):
        if self.pool is not None:
            self.pool.shutdown(wait=not cancel, cancel_futures=cancel)


def _plugin_class():
    from distributed.diagnostics.plugin import WorkerPlugin

    class CatalogPlugin(WorkerPlugin):
        """Installs a catalogue (and loads its bodies) once on every worker, including late joiners."""

        def __init__(self, specs):
            self.specs = specs
            self.name = f"kisekae-batch-{specs['id']}"

        def setup(self, worker):
            install(self.specs)
            warm(self.specs["id"])

    return CatalogPlugin


def _guard_class():
    from distributed.diagnostics.plugin import SchedulerPlugin

    class RunGuard(SchedulerPlugin):
        """Scheduler side of a run: when the run's client leaves the scheduler (closed, or killed
        with SIGKILL), unregister the run's worker plugin and this guard, so that no worker, not even
        one joining later, keeps installing a catalogue nobody runs any more. (The scheduler itself
        drops a dead client's tasks.) Defined in a function, so that it travels to the scheduler by
        value and the scheduler needs no kisekae installed."""

        def __init__(self, client_id: str, worker_plugin: str):
            self.client_id, self.worker_plugin = client_id, worker_plugin
            self.name = f"{worker_plugin}-guard"

        def remove_client(self, scheduler, client: str) -> None:
            if client != self.client_id:
                return
            import asyncio

            scheduler.plugins.pop(self.name, None)
            if self.worker_plugin in scheduler.worker_plugins:
                asyncio.ensure_future(scheduler.unregister_worker_plugin(None, self.worker_plugin))

    return RunGuard


class _Dask:
    name = "dask"

    def __init__(self, specs, task_fn, client=None, address: str | None = None):
        try:
            from distributed import Client
        except ImportError:  # pragma: no cover - a dependency
            raise KisekaeError("Dask execution needs the 'distributed' package", "scheduler") from None
        self.own = client is None
        if client is None:
            try:
                client = Client(address, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise KisekaeError(f"cannot reach the Dask scheduler ({exc})", address) from None
        self.client, self.specs, self.task_fn = client, specs, task_fn
        plugin = _plugin_class()(specs)
        self.plugin = plugin.name
        guard = _guard_class()(client.id, plugin.name)
        self.guard = guard.name
        client.register_plugin(guard, name=guard.name)  # first: a client killed from here on leaves nothing
        client.register_plugin(plugin, name=plugin.name)
        self.workers = max(1, len(client.scheduler_info().get("workers", {})))

    def submit(self, key):
        return self.client.submit(self.task_fn, self.specs["id"], tuple(key), pure=False)

    def wait(self, futures, timeout):
        from distributed import wait
        from distributed.client import TimeoutError as DaskTimeout

        try:
            return wait(list(futures), timeout=timeout, return_when="FIRST_COMPLETED").done
        except (TimeoutError, DaskTimeout):
            return set()

    def result(self, fut):
        return fut.result()

    def close(self, cancel=False):
        # The run is over: workers joining later need not install its catalogue.
        for unregister, name in ((self.client.unregister_scheduler_plugin, self.guard),
                                 (self.client.unregister_worker_plugin, self.plugin)):
            try:
                unregister(name)
            except Exception:  # noqa: BLE001 - already gone (a scheduler restart); nothing left to undo
                pass
        if self.own:
            self.client.close()


# -- the run -------------------------------------------------------------------------------
def run_catalog(catalog: Catalog, store_path, *, resume: bool = False, fresh: bool = False,
                executor: str = "local", workers: int | None = None, scheduler: str | None = None, client=None,
                progress: bool = True, window: int | None = None, on_result=None, task_fn=None) -> RunSummary:
    """Run every task of ``catalog`` that the store does not hold yet.

    Parameters
    ----------
    catalog : Catalog
    store_path : str or Path
        SQLite result store (created when missing).
    resume : bool
        Continue a run: skip tasks whose rows (every stage) are stored without error; run the rest
        again (error rows are replaced).
    fresh : bool
        Delete this catalogue's stored rows first and run everything.
    executor : {"local", "dask", "inline"}
        See the module docstring. ``scheduler`` or ``client`` imply ``dask``.
    workers : int, optional
        Local processes (default: all cores).
    scheduler : str, optional
        Dask scheduler address, e.g. ``tcp://10.0.0.5:8786``.
    client : distributed.Client, optional
        An existing Dask client (tests, notebooks); not closed here.
    progress : bool
        Show a tqdm progress bar on stderr (done, remaining, rate, errors).
    window : int, optional
        Tasks in flight at once (default 4 per worker, at least 8).
    on_result : callable, optional
        ``on_result(summary, backend)`` after each stored batch (tests use it to kill workers).
    task_fn : callable, optional
        Replaces :func:`kisekae.batch.worker.run_task` (the benchmark's no-op task).

    Returns
    -------
    RunSummary

    Raises
    ------
    KisekaeError
        When the store already holds results of this catalogue and neither ``resume`` nor
        ``fresh`` is given, or on bad arguments.
    KeyboardInterrupt
        After storing what finished; the store stays consistent and ``resume`` continues.
    """
    executor = _check_run_args(resume, fresh, executor, workers, scheduler, client)
    stages = list(catalog.stages)
    keys = plan(catalog)
    store = Store(store_path)
    try:
        todo = _todo(store, store_path, catalog, keys, stages, resume, fresh)
        summary = RunSummary(str(store_path), len(keys), len(keys) - len(todo), executor=executor)
        backend = None
        t0 = time.perf_counter()
        run_id = None
        try:
            if todo:
                backend = _backend(executor, catalog.specs(), task_fn or run_task, workers, client, scheduler)
                summary.workers = backend.workers
            run_id = store.start_run(catalog.path, catalog.catalog_id, executor, summary.workers, len(keys),
                                     summary.skipped)
            if todo:
                _loop(backend, todo, stages, store, summary, window or max(8, 4 * summary.workers), progress,
                      on_result)
            summary.status = "done"
        except KeyboardInterrupt:
            summary.status = "interrupted"
            raise
        except BaseException:
            summary.status = "failed"
            raise
        finally:
            summary.wall_s = time.perf_counter() - t0
            if backend is not None:
                backend.close(cancel=summary.status != "done")
            if run_id is not None:
                store.finish_run(run_id, summary.status)
        return summary
    finally:
        store.close()


def _check_run_args(resume, fresh, executor, workers, scheduler, client) -> str:
    """Validate :func:`run_catalog`'s options; returns the executor (``dask`` when a cluster is named)."""
    if resume and fresh:
        raise KisekaeError("resume and fresh exclude each other", "fresh")
    if scheduler or client is not None:
        executor = "dask"
    if executor not in ("local", "dask", "inline"):
        raise KisekaeError(f"unknown executor {executor!r}", "executor")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise KisekaeError(f"workers must be a positive integer, got {workers!r}", "workers")
    return executor


def _todo(store, store_path, catalog, keys, stages, resume: bool, fresh: bool) -> list:
    """The task keys to run: all, or (``resume``) those not stored complete; stale rows go first.

    Refuses a store that already holds this catalogue's results unless ``resume`` or ``fresh``.
    """
    store.record_catalog(catalog)  # lets `batch report --pictures` rebuild any row's case later
    present = store.row_counts(keys, stages)
    if present and not (resume or fresh):
        raise KisekaeError(f"the store already holds results for {len(present)} of this catalogue's {len(keys)} "
                           "tasks; pass --resume to continue or --fresh to compute them again", store_path)
    if fresh and present:
        store.delete_keys(present)
    done_keys = set()
    if resume:
        store.delete_stale_errors(keys)
        done_keys = store.completed(keys, stages)
    return [k for k in keys if tuple(k) not in done_keys]


def _backend(executor: str, specs, task_fn, workers, client, scheduler):
    """The execution backend: in this process, local processes or a Dask cluster."""
    if executor == "inline":
        return _Inline(specs, task_fn)
    if executor == "local":
        return _Local(specs, task_fn, workers or os.cpu_count() or 1)
    return _Dask(specs, task_fn, client=client, address=scheduler)


def _loop(backend, todo, stages, store, summary, window, progress, on_result):
    from tqdm import tqdm

    pending = {}
    attempts = {}
    queue = list(reversed(todo))  # pop() from the end keeps plan order
    bar = tqdm(total=summary.planned, initial=summary.skipped, unit="task", disable=not progress, file=sys.stderr,
               dynamic_ncols=True, bar_format="{desc}{percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} done"
                                             "{postfix} [{elapsed}<{remaining}, {rate_fmt}]")
    bar.set_postfix_str(f"{len(todo)} left, 0 errors")

    def fill():
        while queue and len(pending) < window:
            key = queue.pop()
            attempts[key] = attempts.get(key, 0) + 1
            pending[backend.submit(key)] = key

    try:
        fill()
        while pending:
            done = backend.wait(set(pending), timeout=0.5)
            if not done:
                continue
            rows, broken = [], []
            for fut in done:
                key = pending.pop(fut)
                try:
                    rows.extend(backend.result(fut))
                except Exception as exc:  # noqa: BLE001
                    if _is_broken_pool(exc):
                        broken.append(key)
                        continue
                    rows.extend(error_rows(key, stages, _executor_error(exc)))
                summary.ran += 1
            if broken:
                # A local process died: the whole pool is gone. Rebuild it and resubmit what was in flight.
                broken += list(pending.values())
                pending.clear()
                backend.restart()
                summary.restarts += 1
                for key in broken:
                    if attempts[key] >= MAX_LOCAL_RETRIES:
                        rows.extend(error_rows(key, stages, f"worker process died {attempts[key]} times while "
                                                            "running this task"))
                        summary.ran += 1
                    else:
                        queue.append(key)
            written = store.write(rows)
            n_err = sum(1 for r in rows if r.get("error"))
            summary.rows += written
            summary.error_rows += n_err
            bar.update(len({(r["body"], r["garment"], r["motion"], r["frame"], r["settings_hash"]) for r in rows}))
            bar.set_postfix_str(f"{len(queue) + len(pending)} left, {summary.error_rows} errors")
            if on_result is not None:
                on_result(summary, backend)
            fill()
    finally:
        bar.close()


def _is_broken_pool(exc) -> bool:
    from concurrent.futures.process import BrokenProcessPool

    return isinstance(exc, BrokenProcessPool)


def _executor_error(exc) -> str:
    name = type(exc).__name__
    if name == "KilledWorker":
        return f"worker died repeatedly while running this task (Dask KilledWorker: {exc})"
    return f"task failed outside the check ({unexpected_error_text(exc)})"

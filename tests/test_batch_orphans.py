"""A `kisekae batch` client killed with SIGKILL leaves no process behind (issue 12, item 6): its local
worker processes, and the worker processes of a Dask cluster it started, exit on their own; on a
cluster it only connected to, the workers (the cluster's) stay and the dead client's tasks stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from test_batch import write_catalog
from test_batch_resume import _stored

POSES = 'poses = ["stand", "leg_raise", "crouch", "knee_bend", "sit", "lunge", "arms_up", "arms_forward", "twist"]'


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its new parent, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


def _descendants(root: int) -> set:
    """Every live process below ``root`` (from /proc's parent links)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                pass
    found, todo = set(), [root]
    while todo:
        p = todo.pop()
        kids = {c for c, pp in parent.items() if pp == p and c not in found}
        found |= kids
        todo.extend(kids)
    return {p for p in found if _alive(p)}


def _kill_client_mid_run(argv, store: Path, want_children: int = 2):
    """Start the client in its own session, wait until it has stored rows and has its worker
    processes, SIGKILL the client alone; return (its processes before the kill, the Popen)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 180
    kids = set()
    while proc.poll() is None and time.monotonic() < deadline:
        kids = _descendants(proc.pid)
        if _stored(store) > 0 and len(kids) >= want_children:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()
    assert _stored(store) > 0 and len(kids) >= want_children, (kids, _stored(store))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    return kids, proc


def _gone_within(pids, seconds: float) -> set:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = {p for p in pids if _alive(p)}
        if not left:
            return left
        time.sleep(0.1)
    return {p for p in pids if _alive(p)}


def _cleanup(pids, group: int) -> None:
    for p in pids:
        if _alive(p):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture
def catalog(tmp_path):
    return write_catalog(tmp_path, extra='stages = ["before"]\n',
                         garments=['name = "tights"', 'name = "skirt"'], motions=[POSES])


def test_local_workers_exit_when_the_client_is_killed(catalog, tmp_path):
    store = tmp_path / "s.sqlite"
    argv = [sys.executable, "-m", "kisekae", "batch", str(catalog), "--store", str(store), "--workers", "2",
            "--no-progress"]
    kids, proc = (set(), None)
    try:
        kids, proc = _kill_client_mid_run(argv, store)
        left = _gone_within(kids, 15)
        assert not left, f"worker processes {sorted(left)} still run after their client was killed"
    finally:
        if proc is not None:
            _cleanup(kids, proc.pid)


def test_dask_workers_of_the_clients_own_cluster_exit(catalog, tmp_path):
    """``run_catalog(executor="dask")`` without a scheduler address starts a local cluster in the
    client; its worker processes must not outlive the client either."""
    store = tmp_path / "s.sqlite"
    script = textwrap.dedent(f"""
        from kisekae.batch import load_catalog, run_catalog
        run_catalog(load_catalog({str(catalog)!r}), {str(store)!r}, executor="dask", progress=False)
    """)
    kids, proc = (set(), None)
    try:
        kids, proc = _kill_client_mid_run([sys.executable, "-c", script], store)
        left = _gone_within(kids, 20)
        assert not left, f"Dask processes {sorted(left)} still run after their client was killed"
    finally:
        if proc is not None:
            _cleanup(kids, proc.pid)


def test_a_cluster_forgets_a_killed_clients_run(catalog, tmp_path):
    """``--scheduler ADDRESS``: the cluster's workers are not the client's and stay, but nothing of the
    killed client's run does: no task, no worker plugin that would make joining workers load its bodies."""
    import distributed

    def state(dask_scheduler):
        return (len(dask_scheduler.tasks), sorted(dask_scheduler.worker_plugins), sorted(dask_scheduler.plugins),
                sorted(dask_scheduler.workers))

    store = tmp_path / "s.sqlite"
    with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=":0", silence_logs=40) as cluster, \
            distributed.Client(cluster) as probe:
        workers = probe.run_on_scheduler(state)[3]
        argv = [sys.executable, "-m", "kisekae", "batch", str(catalog), "--store", str(store), "--scheduler",
                cluster.scheduler_address, "--no-progress"]
        kids, proc = (set(), None)
        try:
            kids, proc = _kill_client_mid_run(argv, store, want_children=0)
            seen = None
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                seen = probe.run_on_scheduler(state)
                if seen[0] == 0 and not [n for n in seen[1] + seen[2] if n.startswith("kisekae-")]:
                    break
                time.sleep(0.2)
            tasks, worker_plugins, plugins, now = seen
            assert tasks == 0, seen
            assert not [n for n in worker_plugins + plugins if n.startswith("kisekae-")], seen
            assert now == workers  # the cluster's own worker is still there
        finally:
            if proc is not None:
                _cleanup(kids, proc.pid)

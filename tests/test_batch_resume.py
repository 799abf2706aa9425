"""The client process killed (SIGKILL) mid-run, then resumed: exactly the rows of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

from kisekae.batch import Store, load_catalog, run_catalog

from test_batch import metric_rows, write_catalog


def _stored(path) -> int:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_killed_client_resumes_to_the_uninterrupted_rows(tmp_path):
    cat_path = write_catalog(tmp_path, extra='stages = ["before"]\n', garments=['name = "tights"', 'name = "skirt"'],
                             motions=['poses = ["stand", "leg_raise", "crouch", "knee_bend", "sit", "lunge", '
                                      '"arms_up", "arms_forward", "twist"]'])
    cat = load_catalog(cat_path)
    ref = tmp_path / "ref.sqlite"
    run_catalog(cat, ref, executor="inline", progress=False)
    n = 18

    store = tmp_path / "s.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "kisekae", "batch", str(cat_path), "--store", str(store),
                             "--workers", "1", "--no-progress"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while _stored(store) == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)  # the client only; its pool process is orphaned
        proc.wait(30)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # clean up the orphaned worker we started
        except ProcessLookupError:
            pass
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()
    partial = _stored(store)
    assert 0 < partial < n, partial  # it really died mid-run
    with Store(store, readonly=True) as s:
        assert s.query("SELECT status FROM runs") == [("running",)]  # never finished

    s = run_catalog(cat, store, resume=True, executor="inline", progress=False)
    assert (s.skipped, s.ran) == (partial, n - partial)
    assert metric_rows(store) == metric_rows(ref)
    with Store(store, readonly=True) as st:
        assert st.count() == n


def _interruptible():
    """In the child before exec: SIGINT back to its default, as in a terminal's foreground job. A test run started
    in the background by a shell without job control inherits SIGINT ignored (POSIX), and so would the batch."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_cleanly_and_resumes(tmp_path):
    cat_path = write_catalog(tmp_path, extra='stages = ["before"]\n', garments=['name = "tights"', 'name = "skirt"'],
                             motions=['poses = ["stand", "leg_raise", "crouch", "knee_bend", "sit", "lunge", '
                                      '"arms_up", "arms_forward", "twist"]'])
    store = tmp_path / "s.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "kisekae", "batch", str(cat_path), "--store", str(store),
                             "--workers", "1", "--no-progress"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_interruptible)
    try:
        deadline = time.monotonic() + 120
        while _stored(store) == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
        _, err = proc.communicate(timeout=60)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == 130, err.decode()
    assert "continue with --resume" in err.decode()
    partial = _stored(store)
    assert 0 < partial < 18
    with Store(store, readonly=True) as s:
        assert s.query("SELECT status FROM runs") == [("interrupted",)]
    s = run_catalog(load_catalog(cat_path), store, resume=True, executor="inline", progress=False)
    assert s.skipped == partial and s.ran == 18 - partial and s.error_rows == 0

"""Worker side of a batch run: load each avatar once per process, run one task, return its rows.

The client ships a catalogue's specs to each worker process once (:func:`install`: a process-pool
initializer locally, a Dask ``WorkerPlugin`` on a cluster). Tasks then carry only their
:class:`~kisekae.batch.catalog.TaskKey`. Avatars, garments and BVH clips are loaded on first use
and kept in per-process caches, so a worker reads the body once, not once per task.

Every exception inside a task becomes an error row (one per stage) naming the problem, so a
broken catalogue entry fails only its own rows.
"""

from __future__ import annotations

import os
import socket
import time
from collections import OrderedDict

from .. import __version__
from ..errors import KisekaeError, unexpected_error_text

#: Metric columns of a row (``kisekae check`` fields, then the fix's own), in table order.
CHECK_METRICS = ("vertices", "inside_count", "inside_fraction", "max_depth_m", "p95_depth_m", "edge_crossings")
FIX_METRICS = ("max_push_m", "moved_fraction", "moved_unnecessarily")
METRICS = CHECK_METRICS + FIX_METRICS

_SPECS: dict = {}          # catalogue id -> specs
_AVATARS: OrderedDict = OrderedDict()   # (catalog id, body, rig) -> Avatar | Exception
_GARMENTS: dict = {}       # (catalog id, body, rig, garment) -> garment name in the avatar | Exception
_CLIPS: OrderedDict = OrderedDict()     # path -> BVHClip | Exception
_POSES: OrderedDict = OrderedDict()     # (catalog id, body, rig, motion, frame) -> Pose
MAX_AVATARS = 4
MAX_CLIPS = 16
MAX_POSES = 64


def install(specs: dict, *, numba_threads: int | None = 1) -> None:
    """Make a catalogue's specs available to :func:`run_task` in this process.

    Forgets every previously installed catalogue and cached avatar, garment, clip and pose.

    Parameters
    ----------
    specs : dict
        :meth:`kisekae.batch.catalog.Catalog.specs`.
    numba_threads : int or None
        Numba threads per worker process (default 1: one process per core already fills the
        machine). None leaves Numba's setting alone.
    """
    if not isinstance(specs, dict) or "id" not in specs:
        raise KisekaeError("worker specs must be a Catalog.specs() dict", "specs")
    # Every run installs its catalogue afresh: files fixed or edited since the last run are read again.
    clear_caches(specs["id"])
    _SPECS[specs["id"]] = specs
    if numba_threads:
        try:
            import numba

            numba.set_num_threads(min(int(numba_threads), numba.config.NUMBA_NUM_THREADS))
        except ImportError:  # pragma: no cover - numba is a dependency
            pass


def exit_with_parent() -> bool:
    """End this process as soon as the process that started it dies, even by SIGKILL.

    A ``ProcessPoolExecutor`` worker waits on its task queue forever once its client is gone
    (other workers keep the queue's pipe open), so a killed ``kisekae batch`` used to leave its
    workers running. This starts a daemon thread that blocks on
    :func:`multiprocessing.parent_process`'s sentinel, a pipe end that the operating system
    closes when the parent dies, and then calls ``os._exit``: immediately, without running
    cleanup that could block on the dead parent. It costs one sleeping thread and no polling.

    Returns
    -------
    bool
        True when the watch started (this process was started by :mod:`multiprocessing`).
    """
    import multiprocessing
    import threading
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return False
    sentinel = parent.sentinel

    def watch():
        wait([sentinel])
        os._exit(EXIT_PARENT_DIED)

    threading.Thread(target=watch, name="kisekae-exit-with-parent", daemon=True).start()
    return True


#: Exit status of a worker that ended because its client died (:func:`exit_with_parent`).
EXIT_PARENT_DIED = 75


def init_process(specs: dict) -> None:
    """``ProcessPoolExecutor`` initializer: exit with the client, install the specs and load the bodies once."""
    exit_with_parent()
    install(specs)
    warm(specs["id"])


def warm(catalog_id: str) -> None:
    """Load every body of the catalogue now (errors are cached and reported per task later)."""
    specs = _SPECS[catalog_id]
    for body, spec in specs["bodies"].items():
        rigs = {spec["rig"]} if spec["rig"] != "auto" else {_auto_rig(m) for m in specs["motions"].values()}
        for rig in sorted(rigs):
            try:
                _avatar(catalog_id, body, rig if spec["kind"] == "builtin" else "")
            except Exception:  # noqa: BLE001 - reported by the tasks that need it
                pass


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _auto_rig(motion_spec: dict) -> str:
    return "cmu_mb" if motion_spec["kind"] == "bvh" else "game_engine"


def _lru_put(cache: OrderedDict, key, value, limit: int):
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > limit:
        cache.popitem(last=False)
    return value


def _cached(cache, key, limit, load):
    if key in cache:
        if isinstance(cache, OrderedDict):
            cache.move_to_end(key)
        value = cache[key]
    else:
        try:
            value = load()
        except Exception as exc:  # noqa: BLE001 - cached so a broken file is read once
            value = exc
        if isinstance(cache, OrderedDict):
            _lru_put(cache, key, value, limit)
        else:
            cache[key] = value
    if isinstance(value, Exception):
        raise value
    return value


def _avatar(cid: str, body: str, rig: str):
    spec = _SPECS[cid]["bodies"][body]
    # specs recorded before the contact setting existed have no "contact": plain skinning, as they were run
    gap = _SPECS[cid].get("contact")

    def load():
        from ..avatar.contact import apply_contact

        if spec["kind"] == "builtin":
            from ..avatar.builtin import load_builtin_avatar
            from ..avatar.shape import BodyShape

            shape = BodyShape.from_mapping(spec["shape"], f"bodies.{body}.shape") if "shape" in spec else None
            return apply_contact(load_builtin_avatar(rig, shape), gap)
        from ..io import gltf  # the same reader as `kisekae check --avatar`

        return apply_contact(gltf.load_avatar(spec["path"]), gap)

    avatar = _cached(_AVATARS, (cid, body, rig), MAX_AVATARS, load)
    # An avatar evicted from the cache takes its loaded garments with it.
    for k in [k for k in _GARMENTS if k[:3] not in _AVATARS]:
        del _GARMENTS[k]
    return avatar


def _garment(cid: str, body: str, rig: str, avatar, garment: str) -> str:
    spec = _SPECS[cid]["garments"][garment]

    def load():
        if spec["kind"] == "builtin":
            avatar.part(garment)
            return garment
        if spec["kind"] == "mhclo":
            from ..io.mhclo import load_mhclo

            g = load_mhclo(spec["path"], avatar, name=garment)
        else:
            from .garments import load_gltf_garment

            g = load_gltf_garment(spec["path"], avatar, name=garment, part=spec.get("mesh"))
        if g.name not in avatar.garments:
            avatar.add_garment(g)
        return g.name

    return _cached(_GARMENTS, (cid, body, rig, garment), None, load)


def _pose(cid: str, body: str, rig: str, avatar, motion: str, frame: int):
    spec = _SPECS[cid]["motions"][motion]

    def load():
        if spec["kind"] == "pose":
            from ..avatar.poses import named_pose

            return named_pose(avatar.skeleton, spec["pose"])
        if spec["kind"] == "pose_file":
            from ..avatar.poses import load_pose_file

            return load_pose_file(avatar.skeleton, spec["path"])
        from ..io.bvh import read_bvh, retarget

        if frame < 0:  # the plan's placeholder for a clip it could not read: report why
            from .catalog import motion_frames

            raise KisekaeError(motion_frames(spec)[1] or "the clip could not be read")
        clip = _cached(_CLIPS, spec["path"], MAX_CLIPS, lambda: read_bvh(spec["path"]))
        if not 0 <= frame < clip.n_frames:
            raise KisekaeError(f"frame {frame} is outside the clip's {clip.n_frames} frames", spec["path"])
        return retarget(clip, avatar.skeleton, [frame]).poses[0]

    return _cached(_POSES, (cid, body, rig, motion, frame), MAX_POSES, load)


def load_case(catalog_id: str, key, *, _rows=None):
    """Load (through this process's caches) what one task checks.

    Parameters
    ----------
    catalog_id : str
        Id of specs previously given to :func:`install` in this process.
    key : TaskKey or tuple
        ``(body, garment, motion, frame, settings_hash)``.

    Returns
    -------
    avatar : kisekae.avatar.Avatar
        The body, with the garment added to it when it comes from a file.
    garment : str
        The garment's name in ``avatar``.
    pose : kisekae.avatar.Pose
        The motion frame, retargeted to the avatar's skeleton for BVH clips.
    rig : str
        The built-in avatar's rig (``game_engine`` or ``cmu_mb``), ``""`` for a glTF body.

    Raises
    ------
    KisekaeError
        An unknown catalogue id, or a file of the case that cannot be read (other exceptions of
        the readers pass through unchanged).
    """
    body, garment, motion, frame = key[0], key[1], key[2], int(key[3])
    if catalog_id not in _SPECS:
        raise KisekaeError(f"catalogue {catalog_id} was not installed on this worker", worker_name())
    specs = _SPECS[catalog_id]
    bspec = specs["bodies"][body]
    rig = "" if bspec["kind"] != "builtin" else (
        bspec["rig"] if bspec["rig"] != "auto" else _auto_rig(specs["motions"][motion]))
    avatar = _avatar(catalog_id, body, rig)
    for r in (_rows or {}).values():
        r["rig"] = rig or getattr(avatar, "rig", "") or None
    gname = _garment(catalog_id, body, rig, avatar, garment)
    pose = _pose(catalog_id, body, rig, avatar, motion, frame)
    for r in (_rows or {}).values():
        r["pose"] = pose.name
    return avatar, gname, pose, rig


def fix_function():
    """The ``after`` stage's fix, or None when this installation's :mod:`kisekae.fit` lacks it.

    Returns ``fix(avatar, pose, garment, settings) -> (positions (N, 3) float32, metrics dict)``, a
    thin wrapper of :func:`kisekae.fit.fix.fix_pose` (the solver of ``kisekae check --fix``) for one
    garment. With empty ``settings`` the solver's own defaults apply (skirt mode for skirt-like
    names); otherwise ``settings`` override those defaults field by field
    (:class:`kisekae.fit.PushParams`).
    """
    try:
        from ..fit.fix import fix_pose, params_for
        from ..fit.pushout import PushParams
    except ImportError:
        return None

    def fix(avatar, pose, garment: str, settings: dict):
        params = None
        if settings:
            from dataclasses import asdict

            params = PushParams(**{**asdict(params_for(garment, None)), **settings})
        result = fix_pose(avatar, pose, [garment], params)[garment]
        return result.positions, result.metrics

    return fix


def fix_available() -> bool:
    """Whether this installation can run the ``after`` (fixed) stage."""
    return fix_function() is not None


def _error_text(exc: BaseException) -> str:
    """The ``error`` column for an exception: a :class:`KisekaeError`'s own one-line message.

    Any other exception is an unexpected failure whose text may quote a file it was reading (a
    ``ValueError`` from a number conversion does), so only its type and where it was raised are
    stored, never its message; an ``OSError`` keeps its file name and system message.
    """
    if isinstance(exc, KisekaeError):
        return str(exc)
    return unexpected_error_text(exc)


def run_task(catalog_id: str, key) -> list:
    """Run one task: check one garment on one body in one motion frame, before and after the fix.

    Parameters
    ----------
    catalog_id : str
        Id of specs previously given to :func:`install` in this process.
    key : TaskKey or tuple
        ``(body, garment, motion, frame, settings_hash)``.

    Returns
    -------
    list of dict
        One row per stage of the catalogue: the key fields, ``stage``, ``rig``, ``pose``, the
        :data:`METRICS` (None where they do not apply), ``error`` (None on success), ``time_ms``
        (the check, or check plus fix), ``task_ms`` (the whole task, including loading),
        ``worker`` and ``kisekae_version``.
    """
    t0 = time.perf_counter()
    body, garment, motion, frame, settings_hash = key
    if catalog_id not in _SPECS:
        raise KisekaeError(f"catalogue {catalog_id} was not installed on this worker", worker_name())
    specs = _SPECS[catalog_id]
    stages = specs["stages"]
    base = {"body": body, "garment": garment, "motion": motion, "frame": int(frame), "settings_hash": settings_hash,
            "rig": None, "pose": None, "worker": worker_name(), "kisekae_version": __version__}
    rows = {s: {**base, "stage": s, **{m: None for m in METRICS}, "error": None, "time_ms": None} for s in stages}
    try:
        avatar, gname, pose, rig = load_case(catalog_id, key, _rows=rows)
    except Exception as exc:  # noqa: BLE001 - becomes the rows' error
        for r in rows.values():
            r["error"] = _error_text(exc)
        return _finish(rows, t0)

    from ..qa.check import check_pose

    if "before" in rows:
        try:
            rec = check_pose(avatar, pose, [gname])[0]
            rows["before"].update({m: _plain(rec[m]) for m in CHECK_METRICS})
            rows["before"]["time_ms"] = float(rec["time_ms"])
        except Exception as exc:  # noqa: BLE001
            rows["before"]["error"] = _error_text(exc)
    if "after" in rows:
        try:
            fix = fix_function()
            if fix is None:
                raise KisekaeError("this installation's kisekae.fit has no fix_garment; the after stage cannot run",
                                   "stages")
            t = time.perf_counter()
            fixed, metrics = fix(avatar, pose, gname, specs["settings"][garment])
            fix_ms = (time.perf_counter() - t) * 1e3
            rec = check_pose(avatar, pose, [gname], posed_garments={gname: fixed})[0]
            rows["after"].update({m: _plain(rec[m]) for m in CHECK_METRICS})
            rows["after"].update({m: _plain(metrics.get(m)) for m in FIX_METRICS})
            rows["after"]["time_ms"] = fix_ms + float(rec["time_ms"])
        except Exception as exc:  # noqa: BLE001
            rows["after"]["error"] = _error_text(exc)
    return _finish(rows, t0)


def _plain(v):
    if v is None:
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, bool):
        return int(v)
    return v


def _finish(rows: dict, t0: float) -> list:
    ms = (time.perf_counter() - t0) * 1e3
    for r in rows.values():
        r["task_ms"] = ms
    return list(rows.values())


def noop_task(catalog_id: str, key) -> list:
    """A task that does no work (same arguments and result shape): measures per-task overhead."""
    return [{"body": key[0], "garment": key[1], "motion": key[2], "frame": int(key[3]), "settings_hash": key[4],
             "stage": "noop", "catalog": catalog_id in _SPECS}]


def clear_caches(catalog_id: str | None = None) -> None:
    """Forget cached avatars, garments, clips and poses: of one catalogue, or everything (None)."""
    _CLIPS.clear()
    if catalog_id is None:
        for c in (_SPECS, _AVATARS, _GARMENTS, _POSES):
            c.clear()
        return
    _SPECS.pop(catalog_id, None)
    for c in (_AVATARS, _GARMENTS, _POSES):
        for k in [k for k in c if k[0] == catalog_id]:
            del c[k]

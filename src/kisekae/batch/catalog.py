"""Catalogue files (TOML): which bodies, garments, motions and fit settings a batch run covers.

A catalogue is read once by the client process and turned into

* a :class:`Catalog` of plain, picklable specs (absolute paths, names, settings), shipped to every
  worker once, and
* a plan: one :class:`TaskKey` per (body, garment, motion, frame), each producing one row per
  stage (``before``, and ``after`` the push-out fix).

Format (paths are relative to the catalogue file and must lie inside its folder, unless the
caller opts in with ``allow_outside=True``, on the command line ``--allow-outside-paths``)::

    store = "results.sqlite"            # optional, default ./<catalogue stem>.sqlite
    stages = ["before", "after"]        # optional, default: both when the fix is available
    contact = true                      # optional: the joint-plane contact body (default), false for
                                        # plain skinning, or a number: the gap in metres (0.004 default)

    [fit]                               # global push-out settings (kisekae.fit.PushParams fields)
    margin = 0.002

    [[bodies]]
    name = "makehuman"
    builtin = true                      # the built-in avatar ...
    rig = "auto"                        # ... game_engine | cmu_mb | auto (cmu_mb for BVH clips)
    [[bodies]]
    name = "heavy"
    builtin = true
    shape = { gender = 0.0, weight = 1.0 }  # a MakeHuman body shape (kisekae.avatar.shape)
    [[bodies]]
    name = "alice"
    path = "avatars/alice.vrm"          # ... or a glTF/VRM file

    [[garments]]
    name = "tights"                     # a garment the body already has
    [[garments]]
    path = "clothes/suit.mhclo"         # a MakeHuman garment, or a .glb/.gltf mesh
    name = "suit"                       # optional, default the file stem
    # mesh = "Skirt"                    # glTF only: which garment of the file (default: its only one)
    fit = { margin = 0.003 }            # per-garment settings override [fit]

    [[motions]]
    poses = ["stand", "crouch"]         # named poses (one motion each, frame 0)
    [[motions]]
    pose_file = "poses/kneel.json"      # a JSON pose file (frame 0)
    [[motions]]
    bvh = "clips/walk.bvh"              # a BVH clip ...
    frames = "0:30"                     # ... with a frame range (Python slice, end exclusive)
    name = "walk"                       # optional, default the file stem
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..errors import KisekaeError, unexpected_error_text
from ..validate import inside_folder

STAGES = ("before", "after")
RIGS = ("auto", "game_engine", "cmu_mb")
GLTF_SUFFIXES = (".glb", ".gltf", ".vrm")
#: Settings the after stage accepts besides :class:`kisekae.fit.PushParams` fields (none yet).
EXTRA_FIT_KEYS: tuple = ()

_TOP_KEYS = {"store", "stages", "contact", "fit", "bodies", "garments", "motions"}
_BODY_KEYS = {"name", "builtin", "path", "rig", "shape"}
_GARMENT_KEYS = {"name", "path", "fit", "mesh"}
_MOTION_KEYS = {"name", "poses", "pose_file", "bvh", "frames"}


class TaskKey(NamedTuple):
    """One unit of work: a garment on a body in one motion frame (rows: one per stage).

    ``frame`` is 0 for named poses and pose files, the clip's frame index for BVH, and -1 when
    the clip itself could not be read (its rows then carry the error).
    """

    body: str
    garment: str
    motion: str
    frame: int
    settings_hash: str


@dataclass
class Catalog:
    """A parsed catalogue: plain specs, safe to pickle and ship to workers.

    Attributes
    ----------
    path : str
        The catalogue file (absolute).
    bodies, garments, motions : dict name -> spec dict
        ``bodies[n] = {"kind": "builtin"|"gltf", "path": str|None, "rig": str}``, plus ``"shape"``
        (parameter -> value, all parameters) for a shaped built-in body,
        ``garments[n] = {"kind": "builtin"|"mhclo"|"gltf", "path": str|None, "fit": dict}`` (plus
        ``"mesh"``, the part inside a glTF file, when given),
        ``motions[n] = {"kind": "pose"|"pose_file"|"bvh", "pose": str, "path": str, "frames": str}``.
    stages : tuple of str
    fit : dict
        Global fit settings (per-garment ``fit`` overrides them key by key).
    store : str or None
        Store path named by the catalogue (absolute), if any.
    contact : float or None
        Gap of the joint-plane contact body every body is posed with, metres
        (:func:`kisekae.avatar.contact.apply_contact`); None for plain linear blend skinning.
    """

    path: str
    bodies: dict = field(default_factory=dict)
    garments: dict = field(default_factory=dict)
    motions: dict = field(default_factory=dict)
    stages: tuple = ("before",)
    fit: dict = field(default_factory=dict)
    store: str | None = None
    contact: float | None = None

    def garment_settings(self, garment: str) -> dict:
        """Effective fit settings of ``garment``: global ``[fit]`` overridden by its own ``fit``."""
        return {**self.fit, **self.garments[garment]["fit"]}

    def settings_hash(self, garment: str) -> str:
        """16 hex digits of SHA-256 over the garment's effective settings, the stages and the contact gap
        (canonical JSON; see :func:`settings_hash`)."""
        return settings_hash(self.garment_settings(garment), self.stages, self.contact)

    @property
    def catalog_id(self) -> str:
        """A hash of every spec: names the worker-side copy of this catalogue (a plain-skinning catalogue keeps
        the id it had before the contact setting existed)."""
        parts = [self.bodies, self.garments, self.motions, list(self.stages), self.fit]
        if self.contact is not None:
            parts.append({"contact": self.contact})
        blob = json.dumps(parts, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def specs(self) -> dict:
        """The picklable dict a worker needs (see :func:`kisekae.batch.worker.install`)."""
        return {"id": self.catalog_id, "bodies": self.bodies, "garments": self.garments, "motions": self.motions,
                "stages": list(self.stages), "contact": self.contact,
                "settings": {g: self.garment_settings(g) for g in self.garments}}


#: How a contact body gets its pose-space correctives (:func:`kisekae.avatar.contact.apply_contact`, "auto": the
#: packaged bake where it fits) and, since "auto-2", the part contact after the planes; part of the hash of contact
#: rows, so rows from before either are not reused.
CORRECTIVES_POLICY = "auto-2"


#: Which fix the ``after`` stage runs (:func:`kisekae.fit.fix.fix_pose`'s ``auto``); hashed into the rows of catalogues
#: with that stage, so rows fixed by an earlier rule are computed again rather than reused. "runtime-1": the per-frame
#: start joined the candidates (2026-12-03); "runtime-2": the per-frame start follows the body beyond skinning
#: (:mod:`kisekae.fit.body_follow`, 2026-12-06).
FIX_POLICY = "runtime-2"


def settings_hash(settings: dict, stages, contact: float | None = None) -> str:
    """The ``settings_hash`` column: 16 hex digits of SHA-256 over canonical JSON of a garment's
    effective fit settings, the catalogue's stages and its contact gap.

    Parameters
    ----------
    settings : dict
        Effective fit settings (:meth:`Catalog.garment_settings`).
    stages : sequence of str
        The catalogue's stages, e.g. ``("before", "after")``.
    contact : float or None
        The catalogue's contact gap in metres; None (plain skinning) leaves it out of the hash, so rows of
        plain-skinning runs keep the hash they had before the setting existed. Contact rows also hash
        :data:`CORRECTIVES_POLICY`. Catalogues with the ``after`` stage also hash :data:`FIX_POLICY`.
    """
    data = {"fit": dict(settings), "stages": list(stages)}
    if "after" in data["stages"]:
        data["fix"] = FIX_POLICY
    if contact is not None:
        data["contact"] = float(contact)
        data["correctives"] = CORRECTIVES_POLICY
    blob = json.dumps(data, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _fail(message: str, source) -> None:
    raise KisekaeError(message, source)


def _check_keys(entry, allowed: set, where: str, source: str) -> dict:
    if not isinstance(entry, dict):
        _fail(f"{where} must be a table", source)
    unknown = sorted(set(entry) - allowed)
    if unknown:
        _fail(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}", source)
    return entry


def _str(entry: dict, key: str, where: str, source: str, default=None) -> str | None:
    v = entry.get(key, default)
    if v is not None and (not isinstance(v, str) or not v.strip()):
        _fail(f"{where}.{key} must be a non-empty string", source)
    return v


def _name(value: str, where: str, source: str) -> str:
    if not isinstance(value, str):
        _fail(f"{where}.name must be a non-empty string", source)
    if "/" in value or value != value.strip() or not value:
        _fail(f"{where}: bad name {value!r} (no slashes, no surrounding spaces)", source)
    return value


def _resolve(base: Path, p: str, where: str, source: str, allow_outside: bool) -> str:
    return str(inside_folder(p, base, source, where, allow_outside=allow_outside))


def check_fit_settings(settings: dict, where: str, source: str) -> dict:
    """Validate fit settings against :class:`kisekae.fit.PushParams` (field names and types; ranges
    are checked on each garment's effective settings by :func:`parse_catalog`).

    Returns the settings unchanged; raises :class:`KisekaeError` naming ``where`` otherwise.
    """
    if not isinstance(settings, dict):
        _fail(f"{where} must be a table of settings", source)
    from dataclasses import fields

    from ..fit import PushParams

    names = {f.name for f in fields(PushParams)}
    unknown = sorted(set(settings) - names - set(EXTRA_FIT_KEYS))
    if unknown:
        _fail(f"{where}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(names | set(EXTRA_FIT_KEYS)))}",
              source)
    for k, v in settings.items():
        if k in names and (isinstance(v, bool) or not isinstance(v, (int, float))):
            _fail(f"{where}.{k} must be a number, got {v!r}", source)
    return settings


def parse_catalog(data: dict, path, *, fix_available: bool | None = None, allow_outside: bool = False) -> Catalog:
    """Build a :class:`Catalog` from the decoded TOML ``data`` of the file ``path``.

    Parameters
    ----------
    data : dict
        Decoded TOML.
    path : str or Path
        The catalogue file; relative paths inside it are resolved against its folder.
    fix_available : bool, optional
        Whether the ``after`` stage can run (default: ask :func:`kisekae.batch.worker.fix_available`).
        Only used when the catalogue does not list ``stages`` itself.
    allow_outside : bool
        Accept absolute paths and paths outside the catalogue's folder (``..``). Off by default:
        every path the catalogue names (``store``, bodies, garments, pose files, clips) must lie
        inside its folder, as for the files a glTF or ``.mhclo`` names.

    Raises
    ------
    KisekaeError
        On any structural problem (unknown keys, wrong types, duplicate names, empty lists, bad
        settings, a path outside the catalogue's folder). A file that a well-formed entry points at is *not* opened here: a missing or
        corrupt file fails only that entry's rows at run time.
    """
    src = str(path)
    base = Path(path).resolve().parent

    def resolve(p: str, where: str) -> str:
        return _resolve(base, p, where, src, allow_outside)

    _check_keys(data, _TOP_KEYS, "catalogue", src)
    cat = Catalog(path=str(Path(path).resolve()))
    if "store" in data:
        cat.store = resolve(_str(data, "store", "catalogue", src), "store")
    cat.stages = _parse_stages(data, src, fix_available)
    cat.contact = _parse_contact(data, src)
    cat.fit = dict(check_fit_settings(data.get("fit", {}), "fit", src))
    for kind in ("bodies", "garments", "motions"):
        if kind not in data:
            _fail(f"missing [[{kind}]] entries", src)
        if not isinstance(data[kind], list) or not data[kind]:
            _fail(f"{kind} must be a non-empty array of tables ([[{kind}]])", src)
    for i, e in enumerate(data["bodies"]):
        _parse_body(cat, e, f"bodies[{i}]", resolve, src)
    for i, e in enumerate(data["garments"]):
        _parse_garment(cat, e, f"garments[{i}]", resolve, src)
    for i, e in enumerate(data["motions"]):
        for name, spec in _parse_motion(e, f"motions[{i}]", resolve, src):
            name = _name(name, f"motions[{i}]", src)
            if name in cat.motions:
                _fail(f"motions[{i}]: duplicate motion name {name!r}", src)
            cat.motions[name] = spec
    return cat


def _parse_stages(data: dict, src: str, fix_available: bool | None) -> tuple:
    """The ``stages`` list, or the default: both stages when the fix is available."""
    if "stages" in data:
        st = data["stages"]
        if not isinstance(st, list) or not st or any(s not in STAGES for s in st) or len(set(st)) != len(st):
            _fail(f"stages must be a non-empty list of distinct values from {list(STAGES)}, got {st!r}", src)
        return tuple(s for s in STAGES if s in st)
    if fix_available is None:
        from .worker import fix_available as _fa

        fix_available = _fa()
    return STAGES if fix_available else ("before",)


def _parse_contact(data: dict, src: str) -> float | None:
    """The ``contact`` key as a gap in metres (None: plain skinning); absent means the contact body."""
    from ..avatar.contact import contact_gap

    try:
        return contact_gap(data.get("contact", True), "contact")
    except KisekaeError as exc:
        _fail(f"{exc.source}: {exc.message}", src)


def _parse_body(cat: Catalog, e: dict, where: str, resolve, src: str) -> None:
    """One ``[[bodies]]`` entry into ``cat.bodies``: the built-in body (rig, shape) or a glTF file.

    ``resolve(path, where)`` turns a path of the catalogue into an absolute one (or fails).
    """
    _check_keys(e, _BODY_KEYS, where, src)
    p = _str(e, "path", where, src)
    builtin = e.get("builtin", p is None)
    if not isinstance(builtin, bool):
        _fail(f"{where}.builtin must be true or false", src)
    if builtin == (p is not None):
        _fail(f"{where}: give exactly one of builtin = true or path", src)
    rig = _str(e, "rig", where, src, "auto")
    if rig not in RIGS:
        _fail(f"{where}.rig must be one of {', '.join(RIGS)}, got {rig!r}", src)
    if p is not None and "rig" in e:
        _fail(f"{where}.rig applies to the built-in body only", src)
    if p is not None and not p.lower().endswith(GLTF_SUFFIXES):
        _fail(f"{where}.path: unsupported body file type (expected {', '.join(GLTF_SUFFIXES)})", src)
    name = _name(_str(e, "name", where, src) or ("makehuman" if builtin else Path(p).stem), where, src)
    if name in cat.bodies:
        _fail(f"{where}: duplicate body name {name!r}", src)
    path_ = None if builtin else resolve(p, f"{where}.path")
    cat.bodies[name] = {"kind": "builtin" if builtin else "gltf", "path": path_, "rig": rig}
    if "shape" in e:
        if not builtin:
            _fail(f"{where}.shape applies to the built-in body only", src)
        from ..avatar.shape import BodyShape

        try:
            shape = BodyShape.from_mapping(e["shape"], f"{where}.shape")
        except KisekaeError as exc:
            _fail(f"{exc.source}: {exc.message}", src)
        cat.bodies[name]["shape"] = shape.as_dict()


def _garment_kind(p: str | None, where: str, src: str) -> str:
    if p is None:
        return "builtin"
    if p.lower().endswith(".mhclo"):
        return "mhclo"
    if p.lower().endswith((".glb", ".gltf")):
        return "gltf"
    _fail(f"{where}.path: unsupported garment file type (expected .mhclo, .glb or .gltf)", src)


def _parse_garment(cat: Catalog, e: dict, where: str, resolve, src: str) -> None:
    """One ``[[garments]]`` entry into ``cat.garments``, its fit settings checked as PushParams."""
    _check_keys(e, _GARMENT_KEYS, where, src)
    p = _str(e, "path", where, src)
    n = _str(e, "name", where, src)
    if p is None and n is None:
        _fail(f"{where}: give a name (a garment of the body) or a path (.mhclo, .glb, .gltf)", src)
    kind = _garment_kind(p, where, src)
    name = _name(n or Path(p).stem, where, src)
    if name in cat.garments or name == "body":
        _fail(f"{where}: duplicate or reserved garment name {name!r}", src)
    mesh = _str(e, "mesh", where, src)
    if mesh is not None and kind != "gltf":
        _fail(f"{where}.mesh applies to .glb/.gltf garments only", src)
    fit = dict(check_fit_settings(e.get("fit", {}), f"{where}.fit", src))
    path_ = None if p is None else resolve(p, f"{where}.path")
    cat.garments[name] = {"kind": kind, "path": path_, "fit": fit}
    if mesh is not None:
        cat.garments[name]["mesh"] = mesh
    effective = cat.garment_settings(name)
    if effective:
        from ..fit import PushParams

        try:
            PushParams(**{k: v for k, v in effective.items() if k not in EXTRA_FIT_KEYS})
        except KisekaeError as exc:
            _fail(f"{where}: fit settings {effective}: {exc}", src)


def _parse_motion(e: dict, where: str, resolve, src: str) -> list:
    """One ``[[motions]]`` entry as ``[(name, spec), ...]``: named poses, a pose file or a BVH clip."""
    _check_keys(e, _MOTION_KEYS, where, src)
    given = [k for k in ("poses", "pose_file", "bvh") if k in e]
    if len(given) != 1:
        _fail(f"{where}: give exactly one of poses, pose_file or bvh", src)
    if "frames" in e and "bvh" not in e:
        _fail(f"{where}.frames applies to bvh clips only", src)
    if "poses" in e:
        poses = e["poses"]
        if isinstance(poses, str):
            _fail(f"{where}.poses must be a list of pose names, e.g. poses = [{json.dumps(poses[:40])}]", src)
        if not isinstance(poses, list) or not poses or not all(isinstance(x, str) and x for x in poses):
            _fail(f"{where}.poses must be a non-empty list of pose names", src)
        if "name" in e and len(poses) != 1:
            _fail(f"{where}.name needs a single pose (each pose is named after itself)", src)
        return [(e.get("name", x), {"kind": "pose", "pose": x}) for x in poses]
    if "pose_file" in e:
        p = _str(e, "pose_file", where, src)
        return [(e.get("name") or Path(p).stem, {"kind": "pose_file", "path": resolve(p, f"{where}.pose_file")})]
    p = _str(e, "bvh", where, src)
    frames = e.get("frames")
    if frames is not None:
        from ..io.bvh import frame_selection

        frame_selection(frames, f"{src}: {where}.frames")
    return [(e.get("name") or Path(p).stem, {"kind": "bvh", "path": resolve(p, f"{where}.bvh"), "frames": frames})]


def load_catalog(path, *, fix_available: bool | None = None, allow_outside: bool = False) -> Catalog:
    """Read and validate a catalogue TOML file (see the module docstring for the format).

    ``allow_outside`` accepts paths outside the catalogue's folder (see :func:`parse_catalog`).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise KisekaeError("file not found", path) from None
    except IsADirectoryError:
        raise KisekaeError("is a directory, expected a .toml catalogue", path) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise KisekaeError(f"not a text file ({exc.reason})", path) from None
    except tomllib.TOMLDecodeError as exc:
        raise KisekaeError(f"not valid TOML: {exc}", path) from None
    return parse_catalog(data, path, fix_available=fix_available, allow_outside=allow_outside)


def motion_frames(spec: dict) -> tuple[list, str | None]:
    """Frame indices a motion contributes, and an error message when its file cannot be read.

    Named poses and pose files have the single frame 0. A BVH clip is parsed here (not
    retargeted) to count its frames; on failure the result is ``([-1], message)``.
    """
    if spec["kind"] != "bvh":
        return [0], None
    from ..io.bvh import parse_frames, read_bvh

    try:
        clip = read_bvh(spec["path"])
        return parse_frames(spec.get("frames"), clip.n_frames, f"{spec['path']} frames"), None
    except KisekaeError as exc:
        return [-1], str(exc)
    except (OSError, ValueError) as exc:
        return [-1], f"{spec['path']}: {unexpected_error_text(exc)}"


def plan(catalog: Catalog) -> list:
    """Every :class:`TaskKey` of the catalogue, ordered body, motion, frame, garment.

    That order keeps the tasks of one posed body next to each other, so a worker's posed-body
    cache is hit.
    """
    frames = {m: motion_frames(spec)[0] for m, spec in catalog.motions.items()}
    hashes = {g: catalog.settings_hash(g) for g in catalog.garments}
    return [TaskKey(b, g, m, f, hashes[g])
            for b in catalog.bodies for m in catalog.motions for f in frames[m] for g in catalog.garments]

"""Run the HLSL core on the GPU (Mesa llvmpipe in CI) through its conformance kernel.

The kernel ``hlsl/conformance/kisekae_conformance.comp.hlsl`` includes the core and runs one core function
per thread over arrays. It is compiled by :mod:`kisekae.shaders.toolchain` (HLSL -> SPIR-V -> GLSL 430)
and dispatched as a moderngl compute shader over a headless EGL context. The data source of the capsule
rig and the wound hits is selectable, so every path engines use is executed: ``'constants'`` (float4
arrays in a constant buffer), ``'texture'`` (RGBA32F texture read with ``Load``) and ``'structured'``.

The ``gpu_*`` functions are the public face: plain NumPy arrays in, plain arrays out.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from ..errors import KisekaeError
from ..fit.pushout import PushParams
from ..fit.surface import NO_DEPTH_BOUND, STRETCH_LIMIT, as_depth_bound, as_shortest
from ..validate import as_nonnegative, as_points
from . import toolchain
from .limits import MAX_CAPSULES, MAX_HITS, check_capsule_count

SOURCES = {"constants": 0, "texture": 1, "structured": 2}

#: Harness modes (the ``gMode`` switch of the conformance kernel).
MODES = {
    "capsule_field": 0,
    "capsule_distance": 1,
    "tension": 2,
    "pushout": 3,
    "tight_look": 4,
    "tight_look_preset": 5,
    "wound_loop": 6,
    "wound_accumulate": 7,
    "wound_morph": 8,
    "bound_push_out": 9,
    "skin_push_out": 10,
    "wrinkle_weights": 11,
    "wrinkle_normals": 12,
    "wound_decode": 13,
    "contact_plane": 14,
    "contact_planes": 15,
    "surface_push": 16,
    "smooth_push": 17,
    "body_curvature": 18,
    "stretch_limit": 19,
    "carry_start": 20,
    "sample_point": 21,
    "sample_push": 22,
    "edge_lift": 23,
    "unflip": 24,
    "corrective_offset": 25,
    "corrective_feature": 26,
    "clamp_step": 27,
    "skinned_offset": 28,
    "body_follow": 29,
    "guarded_face": 30,
    "part_step": 31,
    "part_depth": 32,
    "part_guard": 33,
    "self_layers": 34,
}

#: Bone influences a vertex that ``KisekaeSkinnedOffset`` reads in the harness (``KISEKAE_SKIN_INFLUENCES``).
SKIN_INFLUENCES = 8

#: Per-vertex textures of ``kisekae_source_vertex_textures.hlsl``: key -> (HLSL name, texture unit here).
VERTEX_TEXTURES = {
    "body_position": ("_KisekaeBodyPositionTex", 1),
    "body_normal": ("_KisekaeBodyNormalTex", 2),
    "wound_position": ("_KisekaeWoundPositionTex", 3),
    "wound_normal": ("_KisekaeWoundNormalTex", 4),
}

#: NumPy dtype of a per-vertex texture -> moderngl texture dtype (unsigned integers are normalised, as an
#: engine binds the PNGs: UNORM formats).
_TEX_DTYPES = {np.dtype(np.uint8): "f1", np.dtype(np.uint16): "nu2", np.dtype(np.float16): "f2",
               np.dtype(np.float32): "f4"}


def vertex_texture(values, width: int) -> np.ndarray:
    """Lay per-vertex rows out as the core reads them: vertex ``i`` in texel ``(i % width, i // width)``.

    Parameters
    ----------
    values : (N, C) array_like
        One row per vertex, ``C`` in 1..4 channels (dtype kept).
    width : int
        Texture width in texels (> 0).

    Returns
    -------
    (ceil(N / width), width, C) array, zero padded, row 0 first (upload as is, no vertical flip).
    """
    arr = np.asarray(values)
    if arr.ndim != 2 or not 1 <= arr.shape[1] <= 4:
        raise KisekaeError(f"expected shape (N, C) with 1..4 channels, got {arr.shape}", "values")
    width = int(width)
    if width <= 0:
        raise KisekaeError(f"must be > 0, got {width}", "width")
    rows = max(1, -(-len(arr) // width))
    out = np.zeros((rows * width, arr.shape[1]), arr.dtype)
    out[: len(arr)] = arr
    return out.reshape(rows, width, arr.shape[1])

_LOCAL_SIZE = 64
_lock = threading.Lock()
_ctx = None
_programs: dict[str, object] = {}


def gl_context():
    """The process-wide standalone moderngl context used to execute the core (EGL, GL >= 4.3).

    The renderer draws with this same context where it exists (:func:`kisekae.render.context.shared_context`):
    moderngl does not switch between standalone contexts, and a draw issued while another context is current
    crashes the driver.
    """
    global _ctx
    with _lock:
        if _ctx is None:
            try:
                import moderngl

                _ctx = moderngl.create_context(standalone=True, backend="egl", require=430)
            except Exception as exc:  # glcontext raises plain Exception / OSError
                why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise KisekaeError(
                    f"no headless OpenGL 4.3 context ({why}); install libegl1 libegl-mesa0 libgl1-mesa-dri",
                    "shaders",
                ) from None
        return _ctx


def as_capsules(capsules, name: str = "capsules") -> np.ndarray:
    """Return posed capsules as a float32 ``(C, 8)`` array ``[ax, ay, az, r0, bx, by, bz, r1]`` (metres).

    Radii must be positive and finite. Raises :class:`KisekaeError` otherwise.
    """
    try:
        arr = np.ascontiguousarray(capsules, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise KisekaeError(f"cannot read as numbers: {exc}", name) from None
    if arr.ndim != 2 or arr.shape[1] != 8:
        raise KisekaeError(f"expected shape (C, 8) = [a, r0, b, r1] per capsule, got {arr.shape}", name)
    if not np.all(np.isfinite(arr)):
        raise KisekaeError("non-finite value (NaN or inf)", name)
    if arr.size and (np.any(arr[:, 3] <= 0) or np.any(arr[:, 7] <= 0)):
        raise KisekaeError("radii r0 and r1 must be > 0", name)
    return arr.astype(np.float32)


class CoreRunner:
    """Compiled conformance kernel for one data source, ready to dispatch.

    Parameters
    ----------
    source : {'constants', 'texture', 'structured'}
        Where the kernel reads the capsule rig and the wound hits from.
    core_dir : path, optional
        A copy of the HLSL core to run instead of the packaged one (used to check that tests detect
        changed constants).
    max_capsules, max_hits : int
        Array sizes of the constant-array source (``KISEKAE_MAX_CAPSULES``, ``KISEKAE_MAX_HITS``); default
        the sizes the HLSL declares (:mod:`kisekae.shaders.limits`). A rig with more capsules is refused.
    mode : str, optional
        Compile only this harness mode (``KISEKAE_HARNESS_MODE``): a much smaller program, which
        llvmpipe JIT-compiles several times faster than the kernel with every mode. None = all modes.
    """

    def __init__(self, source: str = "constants", *, core_dir=None, max_capsules: int = MAX_CAPSULES, max_hits: int = MAX_HITS,
                 mode: str | None = None):
        if source not in SOURCES:
            raise KisekaeError(f"must be one of {sorted(SOURCES)}, got {source!r}", "source")
        if mode is not None and mode not in MODES:
            raise KisekaeError(f"must be one of {sorted(MODES)}, got {mode!r}", "mode")
        self.source = source
        self.mode = mode
        self.max_capsules = int(max_capsules)
        self.max_hits = int(max_hits)
        root = Path(core_dir) if core_dir else toolchain.HLSL_DIR
        self.compiled = toolchain.compile_hlsl(
            root / "conformance" / "kisekae_conformance.comp.hlsl",
            "comp",
            defines={
                "KISEKAE_HARNESS_SOURCE": SOURCES[source],
                "KISEKAE_MAX_CAPSULES": self.max_capsules,
                "KISEKAE_MAX_HITS": self.max_hits,
                "KISEKAE_HARNESS_MODE": -1 if mode is None else MODES[mode],
            },
            core_dir=root,
        )
        ctx = gl_context()
        with _lock:
            prog = _programs.get(self.compiled.key)
            if prog is None:
                prog = ctx.compute_shader(self.compiled.glsl)
                _programs[self.compiled.key] = prog
        self.program = prog
        self.ctx = ctx

    # -- data -------------------------------------------------------------------------------
    def _bind_data(self, capsules: np.ndarray, hits: np.ndarray, keep: list):
        ctx, b = self.ctx, self.compiled.bindings
        ncap, nhit = len(capsules), len(hits)
        counts = np.array([ncap, nhit], np.float32)
        if self.source == "constants":
            check_capsule_count(ncap, self.max_capsules)
            if nhit > self.max_hits:
                raise KisekaeError(f"at most {self.max_hits} hits fit the constant arrays (KISEKAE_MAX_HITS), "
                                   f"got {nhit}", "hits")
            block = np.zeros((2 * self.max_capsules + self.max_hits + 1, 4), np.float32)
            block[:ncap] = capsules[:, :4]
            block[self.max_capsules : self.max_capsules + ncap] = capsules[:, 4:]
            block[2 * self.max_capsules : 2 * self.max_capsules + nhit] = hits
            block[-1, :2] = counts
            self._uniform(b, "KisekaeConstants", block.tobytes(), keep)
        else:
            self._uniform(b, "_Global", np.concatenate([counts, np.zeros(2, np.float32)]).tobytes(), keep)
            if self.source == "texture":
                h = max(ncap, nhit, 1)
                tex_data = np.zeros((h, 3, 4), np.float32)
                tex_data[:ncap, 0] = capsules[:, :4]
                tex_data[:ncap, 1] = capsules[:, 4:]
                tex_data[:nhit, 2] = hits
                tex = ctx.texture((3, h), 4, tex_data.tobytes(), dtype="f4")
                tex.filter = (0x2600, 0x2600)  # GL_NEAREST; Load ignores it, but keep it explicit
                keep.append(tex)
                names = [n for n in self.program if "KisekaeDataTex" in n]
                for n in names:
                    self.program[n].value = 0
                tex.use(location=0)
            else:
                cap_buf = capsules.reshape(-1, 4) if ncap else np.zeros((2, 4), np.float32)
                self._storage(b, "_KisekaeCapsuleBuffer", cap_buf.tobytes(), keep)
                self._storage(b, "_KisekaeHitBuffer", (hits if nhit else np.zeros((1, 4), np.float32)).tobytes(), keep)

    def _uniform(self, b, name, data, keep):
        if name not in b:
            return  # optimised away: the mode does not read it
        buf = self.ctx.buffer(data)
        buf.bind_to_uniform_block(b[name][1])
        keep.append(buf)

    def _storage(self, b, name, data, keep):
        if name not in b:
            return
        buf = self.ctx.buffer(data)
        buf.bind_to_storage_buffer(b[name][1])
        keep.append(buf)

    # -- dispatch ---------------------------------------------------------------------------
    def _bind_vertex_textures(self, textures, keep):
        for key, (hlsl_name, unit) in VERTEX_TEXTURES.items():
            arr = None if textures is None else textures.get(key)
            names = [n for n in self.program if hlsl_name in n]
            if arr is None or not names:
                continue
            arr = np.ascontiguousarray(arr)
            if arr.ndim != 3 or arr.dtype not in _TEX_DTYPES or not 1 <= arr.shape[2] <= 4:
                raise KisekaeError(f"expected an (H, W, C) texture of uint8/uint16/float16/float32, got {arr.shape} "
                                   f"{arr.dtype}", key)
            tex = self.ctx.texture((arr.shape[1], arr.shape[0]), arr.shape[2], arr.tobytes(),
                                   dtype=_TEX_DTYPES[arr.dtype], alignment=1)
            tex.filter = (0x2600, 0x2600)  # GL_NEAREST (Load ignores it)
            keep.append(tex)
            for n in names:
                self.program[n].value = unit
            tex.use(location=unit)

    def run(self, mode: str, n: int, *, in0=None, in1=None, in2=None, in3=None, in4=None, in5=None, params=None,
            capsules=None, hits=None, textures=None):
        """Dispatch ``mode`` over ``n`` items and return ``(out0, out1)``, each float32 ``(n, 4)``.

        ``in0..in5`` are ``(m, 4)`` float arrays with ``m >= n`` rows (missing ones are zeros; rows past ``n``
        hold tables that a mode indexes itself, such as the surface push's candidates), ``params`` up to 8 float4
        rows of the harness constant buffer, ``capsules`` ``(C, 8)``, ``hits`` ``(H, 4)`` and ``textures``
        the per-vertex textures by :data:`VERTEX_TEXTURES` key (``(H, W, C)`` arrays, see
        :func:`vertex_texture`).
        """
        if mode not in MODES:
            raise KisekaeError(f"must be one of {sorted(MODES)}, got {mode!r}", "mode")
        if self.mode is not None and mode != self.mode:
            raise KisekaeError(f"this kernel was compiled for mode {self.mode!r} only, got {mode!r}", "mode")
        n = int(n)
        if n <= 0:
            return np.zeros((0, 4), np.float32), np.zeros((0, 4), np.float32)
        caps = np.zeros((0, 8), np.float32) if capsules is None else np.asarray(capsules, np.float32).reshape(-1, 8)
        hts = np.zeros((0, 4), np.float32) if hits is None else np.asarray(hits, np.float32).reshape(-1, 4)
        keep: list = []
        b = self.compiled.bindings
        with _lock:
            self._bind_data(caps, hts, keep)
            self._bind_vertex_textures(textures, keep)
            header = np.zeros(4, np.uint32)
            header[0], header[1] = MODES[mode], n
            prm = np.zeros((8, 4), np.float32)
            if params is not None:
                p = np.asarray(params, np.float32).reshape(-1, 4)
                prm[: len(p)] = p
            self._uniform(b, "KisekaeHarness", header.tobytes() + prm.tobytes(), keep)
            for name, arr in (("gIn0", in0), ("gIn1", in1), ("gIn2", in2), ("gIn3", in3), ("gIn4", in4), ("gIn5", in5)):
                data = np.zeros((n, 4), np.float32) if arr is None else np.ascontiguousarray(arr, np.float32)
                if data.ndim != 2 or data.shape[1] != 4 or len(data) < n:
                    raise KisekaeError(f"expected at least {n} rows of 4, got shape {data.shape}", name)
                self._storage(b, name, data.tobytes(), keep)
            outs = []
            for name in ("gOut0", "gOut1"):
                buf = self.ctx.buffer(reserve=n * 16)
                if name in b:
                    buf.bind_to_storage_buffer(b[name][1])
                outs.append(buf)
                keep.append(buf)
            self.program.run(group_x=(n + _LOCAL_SIZE - 1) // _LOCAL_SIZE)
            result = tuple(np.frombuffer(o.read(), np.float32).reshape(n, 4).copy() for o in outs)
            for obj in keep:
                obj.release()
        return result


_runners: dict[tuple, CoreRunner] = {}
_core_dir = [None]


class using_core:
    """Context manager: make the ``gpu_*`` functions run another copy of the core (a folder laid out like
    ``hlsl/``). The conformance suite uses it to show that a changed constant is detected."""

    def __init__(self, core_dir):
        self.core_dir = None if core_dir is None else str(Path(core_dir).resolve())

    def __enter__(self):
        self._saved = _core_dir[0]
        _core_dir[0] = self.core_dir
        return self

    def __exit__(self, *exc):
        _core_dir[0] = self._saved
        if self.core_dir is not None:  # free the programs of a temporary core
            for key in [k for k in _runners if k[1] == self.core_dir]:
                r = _runners.pop(key)
                if _programs.pop(r.compiled.key, None) is not None:
                    r.program.release()
        return False


def runner(source: str = "constants", mode: str | None = None) -> CoreRunner:
    """Shared :class:`CoreRunner` for the current core (see :class:`using_core`), ``source`` and ``mode``
    (one harness mode, or None for the kernel with every mode)."""
    key = (source, _core_dir[0], mode)
    if key not in _runners:
        _runners[key] = CoreRunner(source, core_dir=_core_dir[0], mode=mode)
    return _runners[key]


def _run(mode: str, source: str, n: int, **kw):
    """Dispatch one harness mode on the kernel compiled for that mode alone (see :func:`runner`)."""
    return runner(source, mode).run(mode, n, **kw)


def gpu_capsule_field(points, capsules, smooth_k: float = 0.0, *, source: str = "constants"):
    """Evaluate ``KisekaeCapsuleField`` on the GPU.

    Parameters
    ----------
    points : (N, 3) array_like
        Query points (m), in the capsules' space.
    capsules : (C, 8) array_like
        Posed capsules ``[a, r0, b, r1]`` (m).
    smooth_k : float
        Smooth-union width (m); 0 = exact union.
    source : {'constants', 'texture', 'structured'}
        Data path the kernel reads the capsules through.

    Returns
    -------
    distance : (N,) float32
        Signed distance (m), negative inside.
    gradient : (N, 3) float32
        Gradient of the (smooth) field.
    nearest : (N,) int64
        Index of the nearest capsule.
    """
    pts = as_points(points, "points", dtype=np.float32)
    caps = as_capsules(capsules)
    if smooth_k < 0 or not np.isfinite(smooth_k):
        raise KisekaeError(f"must be >= 0 and finite, got {smooth_k!r}", "smooth_k")
    in0 = np.zeros((len(pts), 4), np.float32)
    in0[:, :3] = pts
    o0, o1 = _run("capsule_field", source, len(pts), in0=in0, params=[[smooth_k, 0, 0, 0]], capsules=caps)
    return o0[:, 3], o0[:, :3], o1[:, 0].astype(np.int64)


def gpu_capsule_distance(points, capsules, index, *, source: str = "constants"):
    """``KisekaeCapsuleDistance`` of each point to capsule ``index[i]``; returns ``(distance (N,), gradient (N,3))``."""
    pts = as_points(points, "points", dtype=np.float32)
    caps = as_capsules(capsules)
    idx = np.asarray(index).reshape(-1)
    if idx.shape != (len(pts),) or (idx.size and (idx.min() < 0 or idx.max() >= len(caps))):
        raise KisekaeError("need one capsule index in range per point", "index")
    in0 = np.zeros((len(pts), 4), np.float32)
    in0[:, :3] = pts
    in0[:, 3] = idx
    o0, _ = _run("capsule_distance", source, len(pts), in0=in0, capsules=caps)
    return o0[:, 3], o0[:, :3]


def gpu_tension_from_ratio(ratio, *, falloff=1.0, stretch_area=1.0, compress_area=1.0, weight_limit=1.0):
    """``KisekaeTensionFromRatio`` on the GPU; returns ``(compress, stretch)``, each ``(N,)`` float32 in 0..1."""
    r = np.asarray(ratio, np.float32).reshape(-1)
    if not np.all(np.isfinite(r)):
        raise KisekaeError("non-finite value (NaN or inf)", "ratio")
    in0 = np.zeros((len(r), 4), np.float32)
    in0[:, 0] = r
    o0, _ = _run(
        "tension", "constants", len(r), in0=in0, params=[[falloff, stretch_area, compress_area, weight_limit]]
    )
    return o0[:, 0], o0[:, 1]


def _vec4(n, *cols):
    out = np.zeros((n, 4), np.float32)
    j = 0
    for c in cols:
        c = np.asarray(c, np.float32).reshape(n, -1)
        out[:, j : j + c.shape[1]] = c
        j += c.shape[1]
    return out


def _mask(m, n, name):
    arr = np.broadcast_to(np.asarray(m, np.float64), (n,)) if np.ndim(m) == 0 else np.asarray(m, np.float64)
    if arr.shape != (n,):
        raise KisekaeError(f"expected {n} per-vertex values, got shape {arr.shape}", name)
    if not np.all(np.isfinite(arr)) or arr.min(initial=0) < 0 or arr.max(initial=0) > 1:
        raise KisekaeError("values must be finite and in [0, 1]", name)
    return arr


def gpu_push_out(points, capsules, params: PushParams | None = None, *, tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0),
                 source: str = "constants"):
    """``KisekaePushOut`` on the GPU (the push law of :mod:`kisekae.fit.pushout`, no smoothing pass).

    Parameters
    ----------
    points : (N, 3) array_like
        Posed garment vertices (m).
    capsules : (C, 8) array_like
        Posed capsules ``[a, r0, b, r1]`` (m).
    params : PushParams, optional
        margin, stiffness, max_push, skirt_bias and smooth_k (defaults: ``PushParams()``);
        smooth_iterations does not apply (the core has no smoothing pass).
    tightness, softness : float or (N,) array_like
        Per-vertex masks, 0..1.
    up : (3,) array_like
        World up (unit).
    source : str
        Capsule data path.

    Returns
    -------
    new_points : (N, 3) float32
    push : (N,) float32
        Displacement length (m).
    d : (N,) float32
        Field distance before the push (m).
    """
    pts = as_points(points, "points", dtype=np.float32)
    caps = as_capsules(capsules)
    n = len(pts)
    t = _mask(tightness, n, "tightness")
    s = _mask(softness, n, "softness")
    o0, o1 = _run("pushout", source, n, in0=_vec4(n, pts), in1=_vec4(n, t, s), params=_push_params(params, up),
                  capsules=caps)
    return o0[:, :3], o0[:, 3], o1[:, 0]


def gpu_push_amount(d, params: PushParams | None = None, *, tightness=0.0, softness=0.0):
    """``KisekaePushAmount`` (the push law alone) for distances ``d`` (m); returns ``(N,)`` float32 metres.

    ``params`` as :func:`gpu_push_out` (smooth_k does not apply to the law alone).
    """
    params = params or PushParams()
    dd = np.asarray(d, np.float32).reshape(-1)
    n = len(dd)
    o0, o1 = _run(
        "pushout", "constants", n, in0=_vec4(n, np.full((n, 3), 1e3)),  # far point: the field part is inert
        in1=_vec4(n, _mask(tightness, n, "tightness"), _mask(softness, n, "softness"), dd),
        params=[[params.margin, params.stiffness, params.max_push, params.skirt_bias], [0.0, 0.0, 1.0, 0.0]],
        capsules=np.array([[0, 0, 0, 0.1, 0, 0.1, 0, 0.1]], np.float32),
    )
    return o1[:, 1]


#: Tight-look preset name -> ``KISEKAE_TIGHT_*`` id of the core (names of kisekae.fit.pressure.PRESETS).
TIGHT_PRESETS = {"seed": 0, "anime": 1, "realistic": 2}


def gpu_tight_look(normals, ao, sss, pressure_values, preset="seed", *, tightness=None, dent_dir=None):
    """``KisekaeTightLook`` on the GPU, called like :func:`kisekae.fit.pressure.tight_look`.

    Parameters
    ----------
    normals : (N, 3) array_like
        Shading normals (need not be unit; the core normalises them).
    ao, sss : (N,) array_like
        AO visibility and SSS amount, 0..1.
    pressure_values : (N,) array_like
        Body pressure, 0..1 (values outside are clamped, as the core does).
    preset : {'seed', 'anime', 'realistic'} or dict
        A name runs the core's own preset table (``KisekaeTightPreset``); a dict passes
        ``normal_strength``, ``ao_strength``, ``sss_strength`` (0..1) as parameters.
    tightness : (N,) array_like, optional
        Static tightness, 0..1 (default 0).
    dent_dir : (N, 3) array_like, optional
        Direction up the dent's slope (default zero: no tilt).

    Returns
    -------
    normals : (N, 3) float32 (unit); ao : (N,) float32; sss : (N,) float32
    """
    nrm = as_points(normals, "normals", dtype=np.float32)
    n = len(nrm)
    dent = np.zeros((n, 3), np.float32) if dent_dir is None else as_points(dent_dir, "dent_dir", dtype=np.float32)
    if dent.shape != nrm.shape:
        raise KisekaeError(f"expected shape {nrm.shape}, got {dent.shape}", "dent_dir")
    tight = np.zeros(n) if tightness is None else _mask(tightness, n, "tightness")
    pres = np.asarray(pressure_values, np.float64).reshape(-1)
    if pres.shape != (n,) or not np.all(np.isfinite(pres)):
        raise KisekaeError(f"expected {n} finite values, got shape {pres.shape}", "pressure")
    ins = dict(in0=_vec4(n, nrm, ao), in1=_vec4(n, dent, sss))
    if isinstance(preset, str):
        if preset not in TIGHT_PRESETS:
            raise KisekaeError(f"unknown preset {preset!r}; choose one of {sorted(TIGHT_PRESETS)}", "preset")
        o0, o1 = _run("tight_look_preset", "constants", n, in2=_vec4(n, tight, pres, np.full(n, TIGHT_PRESETS[preset])),
                              **ins)
    elif isinstance(preset, dict):
        try:
            st = [float(preset[k]) for k in ("normal_strength", "ao_strength", "sss_strength")]
        except KeyError as exc:
            raise KisekaeError(f"missing {exc.args[0]!r}", "preset") from None
        o0, o1 = _run("tight_look", "constants", n, in2=_vec4(n, tight, pres), params=[[*st, 0.0]], **ins)
    else:
        raise KisekaeError("must be a preset name or a dict of strengths", "preset")
    return o0[:, :3], o0[:, 3], o1[:, 0]


def _push_params(params: PushParams | None, up, smooth_k: bool = True) -> list:
    """The core's two parameter rows ``[margin, stiffness, max_push, skirt_bias], [smooth_k, up]``.

    ``params`` are validated by :class:`~kisekae.fit.pushout.PushParams` (the one place of the
    defaults and of the margin-against-max_push rule); ``smooth_k=False`` sends 0 (the bound
    push-out has no capsule field).
    """
    p = (params or PushParams()).validate()
    return [[p.margin, p.stiffness, p.max_push, p.skirt_bias],
            [p.smooth_k if smooth_k else 0.0, *np.asarray(up, np.float32).reshape(3)]]


def _binding_inputs(points, corners, bary, body_positions, body_normals, tightness, softness, width):
    pts = as_points(points, "points", dtype=np.float32)
    n = len(pts)
    body = as_points(body_positions, "body_positions", dtype=np.float32)
    bn = as_points(body_normals, "body_normals", dtype=np.float32)
    if bn.shape != body.shape:
        raise KisekaeError(f"expected shape {body.shape}, got {bn.shape}", "body_normals")
    cor = np.asarray(corners)
    if cor.shape != (n, 3) or not np.issubdtype(cor.dtype, np.integer):
        raise KisekaeError(f"expected ({n}, 3) integer body vertex ids, got {cor.shape} {cor.dtype}", "corners")
    if cor.size and (cor.min() < 0 or cor.max() >= len(body)):
        raise KisekaeError(f"ids must be in 0..{len(body) - 1}", "corners")
    if len(body) >= 1 << 24:
        raise KisekaeError("more than 2^24 body vertices do not pass through float32 ids exactly", "body_positions")
    bc = np.asarray(bary, np.float64)
    if bc.shape != (n, 3) or not np.all(np.isfinite(bc)):
        raise KisekaeError(f"expected ({n}, 3) finite barycentrics, got {bc.shape}", "bary")
    ins = dict(in0=_vec4(n, pts), in1=_vec4(n, bc, _mask(tightness, n, "tightness")),
               in2=_vec4(n, cor.astype(np.float32), _mask(softness, n, "softness")))
    tex = {"body_position": vertex_texture(np.column_stack([body, np.ones(len(body), np.float32)]), width),
           "body_normal": vertex_texture(np.column_stack([bn, np.zeros(len(bn), np.float32)]), width)}
    return n, ins, tex


def gpu_bound_push_out(points, corners, bary, body_positions, body_normals, params: PushParams | None = None, *,
                       tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0), texture_width: int = 256):
    """``KisekaeBoundPushOutLoad`` on the GPU: the skin-bound push-out of :func:`kisekae.fit.bound.push_out_bound`.

    Parameters
    ----------
    points : (N, 3) array_like
        Posed garment vertices (m).
    corners : (N, 3) int array_like
        Body vertex ids of each vertex's bound triangle (``SkinBinding.corners``).
    bary : (N, 3) array_like
        Barycentrics of the bound point (``SkinBinding.bary``).
    body_positions, body_normals : (Nb, 3) array_like
        Posed body vertices (m) and their unit normals; uploaded as the RGBA32F textures
        ``_KisekaeBodyPositionTex`` / ``_KisekaeBodyNormalTex`` (:func:`vertex_texture` layout).
    params : PushParams, optional
        margin, stiffness, max_push and skirt_bias (defaults: ``PushParams()``).
    tightness, softness : float or (N,) array_like
        Masks, 0..1.
    up : (3,) array_like
        World up.
    texture_width : int
        Width of the body textures (any; the core reads it with GetDimensions).

    Returns
    -------
    new_points : (N, 3) float32; push : (N,) float32 metres; clearance : (N,) float32 metres (before the push)
    """
    n, ins, tex = _binding_inputs(points, corners, bary, body_positions, body_normals, tightness, softness,
                                  texture_width)
    o0, o1 = _run("bound_push_out", "constants", n, params=_push_params(params, up, smooth_k=False), textures=tex,
                  **ins)
    return o0[:, :3], o0[:, 3], o1[:, 0]


def gpu_skin_push_out(points, capsules, corners, bary, body_positions, body_normals, params: PushParams | None = None,
                      *, tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0), texture_width: int = 256,
                      source: str = "constants"):
    """``KisekaeSkinPushOut`` on the GPU (:func:`kisekae.fit.bound.push_out_runtime`): capsule push-out first,
    then the skin-bound clearance, the total displacement capped at ``max_push``.

    Parameters are those of :func:`gpu_push_out` and :func:`gpu_bound_push_out`.

    Returns
    -------
    new_points : (N, 3) float32
    push : (N,) float32
        Total displacement length after the cap (m).
    push_capsule, push_bound : (N,) float32
        Push lengths of the two steps (m).
    d : (N,) float32
        Capsule field distance before the push (m).
    clearance : (N,) float32
        Bound clearance after the capsule push (m).
    """
    caps = as_capsules(capsules)
    n, ins, tex = _binding_inputs(points, corners, bary, body_positions, body_normals, tightness, softness,
                                  texture_width)
    o0, o1 = _run("skin_push_out", source, n, params=_push_params(params, up), capsules=caps, textures=tex, **ins)
    return o0[:, :3], o1[:, 3], o0[:, 3], o1[:, 2], o1[:, 0], o1[:, 1]


#: Candidate triangles per vertex that the harness's surface push reads (``KISEKAE_SURFACE_CANDIDATES``).
SURFACE_CANDIDATES = 32
#: Largest id that passes through a float32 harness row exactly.
_MAX_FLOAT_ID = 1 << 24


def _surface_corners(triangles, faces, n: int, n_body: int) -> np.ndarray:
    """(n, SURFACE_CANDIDATES, 3) body vertex ids of each vertex's candidates; fewer than
    :data:`SURFACE_CANDIDATES` candidates are padded with the first (which never changes the nearest)."""
    tri = np.asarray(triangles)
    if not np.issubdtype(tri.dtype, np.integer):
        raise KisekaeError(f"expected integer ids, got {tri.dtype}", "triangles")
    if faces is not None:
        f = np.asarray(faces)
        if tri.ndim != 2 or f.ndim != 2 or f.shape[1] != 3 or not np.issubdtype(f.dtype, np.integer):
            raise KisekaeError(f"expected (N, K) triangle ids and (F, 3) faces, got {tri.shape} and {f.shape}",
                               "triangles")
        if tri.size and (tri.min() < 0 or tri.max() >= len(f)):
            raise KisekaeError(f"triangle ids must be in 0..{len(f) - 1}", "triangles")
        tri = f[tri]
    if tri.ndim != 3 or tri.shape[0] != n or tri.shape[2] != 3 or not 1 <= tri.shape[1] <= SURFACE_CANDIDATES:
        raise KisekaeError(f"expected ({n}, K, 3) corner ids with 1 <= K <= {SURFACE_CANDIDATES}, got {tri.shape}",
                           "triangles")
    if tri.size and (tri.min() < 0 or tri.max() >= n_body):
        raise KisekaeError(f"ids must be in 0..{n_body - 1}", "triangles")
    pad = np.repeat(tri[:, :1], SURFACE_CANDIDATES - tri.shape[1], axis=1)
    return np.concatenate([tri, pad], axis=1)


def _body_textures(body, normals, texture_width: int) -> dict:
    """The posed body and its normals as the RGBA32F vertex textures of the harness."""
    return {"body_position": vertex_texture(np.column_stack([body, np.ones(len(body), np.float32)]), texture_width),
            "body_normal": vertex_texture(np.column_stack([normals, np.zeros(len(normals), np.float32)]),
                                          texture_width)}


def _posed_body(body_positions, body_normals):
    body = as_points(body_positions, "body_positions", dtype=np.float32)
    bn = as_points(body_normals, "body_normals", dtype=np.float32)
    if bn.shape != body.shape:
        raise KisekaeError(f"expected shape {body.shape}, got {bn.shape}", "body_normals")
    if len(body) >= _MAX_FLOAT_ID:
        raise KisekaeError("more than 2^24 body vertices do not pass through float32 ids exactly", "body_positions")
    return body, bn


def _chord_inputs(chord, curvature, n: int, n_body: int):
    """``(chord (n,), curvature (n_body,))`` float32 of :func:`gpu_surface_push`; zeros without a chord."""
    if chord is None:
        return np.zeros(n, np.float32), np.zeros(n_body, np.float32)
    c = as_nonnegative(chord, n, "chord")
    if curvature is None:
        raise KisekaeError("a chord needs the body curvature (gpu_body_curvature or "
                           "kisekae.fit.surface.body_curvature)", "curvature")
    k = as_nonnegative(curvature, n_body, "curvature (one per body vertex)", what="values", unit="1/m")
    return c.astype(np.float32), k.astype(np.float32)


def gpu_body_curvature(body_positions, body_normals, faces, *, texture_width: int = 256):
    """``KisekaeBodyCurvature`` on the GPU, one thread per body vertex over the triangles around it:
    :func:`kisekae.fit.surface.body_curvature`.

    Parameters
    ----------
    body_positions, body_normals : (Nb, 3) array_like
        Posed body vertices (m) and their unit normals (uploaded as the harness's vertex textures).
    faces : (F, 3) int array_like
        Body triangles.
    texture_width : int
        Width of the body textures.

    Returns
    -------
    (Nb,) float32, 1/m
    """
    body, bn = _posed_body(body_positions, body_normals)
    nb = len(body)
    f = np.asarray(faces)
    if f.ndim != 2 or f.shape[1] != 3 or not np.issubdtype(f.dtype, np.integer) or (
            f.size and (f.min() < 0 or f.max() >= nb)):
        raise KisekaeError(f"expected (F, 3) integer ids in 0..{nb - 1}, got {f.shape} {f.dtype}", "faces")
    if f.size >= _MAX_FLOAT_ID:
        raise KisekaeError("more than 2^24 triangle corners do not pass through float32 ids exactly", "faces")
    if nb == 0:
        return np.zeros(0, np.float32)
    owners = f.ravel()
    order = np.argsort(owners, kind="stable")
    count = np.bincount(owners, minlength=nb)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    table = np.zeros((max(f.size, nb, 1), 4), np.float32)
    table[: f.size, :3] = f[order // 3]
    o0, _ = _run("body_curvature", "constants", nb, in1=_vec4(nb, start, count), in2=table,
                 textures=_body_textures(body, bn, texture_width))
    return o0[:, 0]


def gpu_surface_push(points, triangles, body_positions, body_normals, params: PushParams | None = None, *,
                     faces=None, tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0), reach: float | None = None,
                     chord=None, curvature=None, texture_width: int = 256, sample: bool = False, depth_bound=None):
    """``KisekaeSurfacePush`` on the GPU: one surface push of :func:`kisekae.fit.surface.surface_push_numpy`.
    With ``sample``, ``KisekaeSamplePush`` (the same push of edge samples against their own candidates,
    :mod:`kisekae.fit.edge_lift`): ``points`` are then sample points and ``triangles`` their candidates.

    Parameters
    ----------
    points : (N, 3) array_like
        Posed garment vertices (m).
    triangles : (N, K, 3) int array_like
        Body vertex ids of each vertex's K candidate triangles (``faces[SurfaceCandidates.triangles]``), the
        most frequent first; or (N, K) triangle ids with ``faces``. K <= :data:`SURFACE_CANDIDATES` (fewer are
        padded with the first).
    body_positions, body_normals : (Nb, 3) array_like
        Posed body vertices (m) and their unit normals; uploaded as the RGBA32F textures
        ``_KisekaeBodyPositionTex`` / ``_KisekaeBodyNormalTex`` (:func:`vertex_texture` layout).
    params : PushParams, optional
        margin, stiffness, max_push and skirt_bias (defaults: ``PushParams()``).
    faces : (F, 3) int array_like, optional
        Body triangles, when ``triangles`` holds triangle ids.
    tightness, softness : float or (N,) array_like
        Masks, 0..1.
    up : (3,) array_like
        World up.
    reach : float, optional
        Metres; candidates farther than this are ignored (default ``max_push``).
    chord : (N,) array_like, optional
        Each vertex's longest rest edge (m, :func:`kisekae.fit.surface.garment_chords`): the chord allowance
        ``min(kappa L^2 / 8, KISEKAE_CHORD_CAP)``; None: no allowance.
    curvature : (Nb,) array_like, optional
        Body curvature per body vertex (1/m, :func:`gpu_body_curvature` or
        :func:`kisekae.fit.surface.body_curvature`), read through ``KISEKAE_LOAD_BODY_CURVATURE``; needed with
        ``chord``.
    texture_width : int
        Width of the body textures.
    depth_bound : (Nb,) array_like, optional
        The body's depth bound per vertex (m, :func:`kisekae.fit.depth_bound.body_depth_bound`; ``inf``: none), read
        through ``KISEKAE_LOAD_BODY_DEPTH_BOUND``; None: no bound (every candidate is trusted)

    Returns
    -------
    new_points : (N, 3) float32; push : (N,) float32 metres; clearance : (N,) float32 metres before the push, less
    the chord allowance (``inf`` where no candidate is within reach or the nearest is beyond the depth bound, which
    the core reports as 1e30)
    """
    pts = as_points(points, "points", dtype=np.float32)
    n = len(pts)
    body, bn = _posed_body(body_positions, body_normals)
    if n * SURFACE_CANDIDATES >= _MAX_FLOAT_ID:
        raise KisekaeError(f"at most {_MAX_FLOAT_ID // SURFACE_CANDIDATES - 1} vertices a dispatch", "points")
    corners = _surface_corners(triangles, faces, n, len(body))
    p = (params or PushParams()).validate()
    reach = p.max_push if reach is None else float(reach)
    if not (np.isfinite(reach) and reach >= 0):
        raise KisekaeError(f"must be finite and >= 0, got {reach!r}", "reach")
    ch, kv = _chord_inputs(chord, curvature, n, len(body))
    table = np.zeros((max(n * SURFACE_CANDIDATES, 1), 4), np.float32)
    table[: n * SURFACE_CANDIDATES, :3] = corners.reshape(-1, 3)
    kappa = np.zeros((max(n, len(body)), 4), np.float32)
    kappa[: len(body), 0] = kv
    kappa[:, 1] = NO_DEPTH_BOUND
    kappa[: len(body), 1] = as_depth_bound(depth_bound, len(body))  # float32 holds 1e30 ("no bound") as it is
    o0, o1 = _run("sample_push" if sample else "surface_push", "constants", n,
                  in0=_vec4(n, pts, _mask(tightness, n, "tightness")),
                  in1=_vec4(n, _mask(softness, n, "softness"), ch), in2=table, in3=kappa,
                  params=_push_params(p, up, smooth_k=False) + [[reach, 0.0, 0.0, 0.0]],
                  textures=_body_textures(body, bn, texture_width))
    clear = np.where(o1[:, 0] >= np.float32(1e30), np.float32(np.inf), o1[:, 0])
    return o0[:, :3], o0[:, 3], clear


def _ring_rows(ring, n: int):
    """The one-ring ``(ptr, idx)`` of ``n`` vertices, checked, as the harness's rows: ranges (n, 4) and neighbours."""
    ranges, idx = _csr_rows(ring, n, n, "ring")
    neighbours = np.zeros((max(len(idx), n), 4), np.float32)
    neighbours[: len(idx), 0] = idx
    return ranges, neighbours


def _garment_pair(points, skinned):
    """``(points, skinned)`` as float32 (N, 3) garment vertices of the same count, or KisekaeError."""
    x = as_points(skinned, "skinned garment vertices", dtype=np.float32)
    p = as_points(points, "garment vertices", dtype=np.float32)
    if p.shape != x.shape:
        raise KisekaeError(f"{len(p)} points for {len(x)} skinned vertices", "points")
    return p, x


def gpu_stretch_limit(points, skinned, ring, stretch: float = STRETCH_LIMIT, shortest=None):
    """``KisekaeStretchLimit`` on the GPU, one pass: :func:`kisekae.fit.surface.stretch_limit_numpy`.

    Parameters
    ----------
    points : (N, 3) array_like, garment vertices after the push (m)
    skinned : (N, 3) array_like, the same vertices skinned (m)
    ring : (ptr (N+1,), idx (E,)), the one-ring in CSR form (:func:`kisekae.fit.surface.one_ring`)
    stretch : float, allowed relative stretch (>= 0; default :data:`kisekae.fit.surface.STRETCH_LIMIT`)
    shortest : (N,) fractions in [0, 1) or None, the floor per vertex (``KISEKAE_LOAD_SHORTEST``,
        :func:`kisekae.fit.surface.shortest_lengths`); None: edges shrink freely

    Returns
    -------
    new_points : (N, 3) float32; moved : (N,) bool
    """
    p, x = _garment_pair(points, skinned)
    floor = np.zeros(len(p)) if shortest is None else as_shortest(shortest, len(p))
    if not (np.isfinite(stretch) and stretch >= 0):
        raise KisekaeError(f"must be a finite number >= 0, got {stretch!r}", "stretch")
    n = len(p)
    ranges, neighbours = _ring_rows(ring, n)
    if not n:
        return p.copy(), np.zeros(0, bool)
    o0, _ = _run("stretch_limit", "constants", n, in0=_vec4(n, p - x), in1=ranges, in2=neighbours, in3=_vec4(n, x, floor),
                 params=[[float(stretch), 0.0, 0.0, 0.0]])
    return x + o0[:, :3], o0[:, 3] > 0.5


def _csr_rows(table, n: int, n_values: int, label: str):
    """A CSR table ``(ptr (n+1,), idx)`` of ``n`` lists of ids below ``n_values``, checked, as the harness's rows:
    ranges (n, 4) and the list."""
    ptr, idx = (np.asarray(a) for a in table)
    if ptr.shape != (n + 1,) or idx.ndim != 1 or not (np.issubdtype(ptr.dtype, np.integer)
                                                    and np.issubdtype(idx.dtype, np.integer)):
        raise KisekaeError(f"expected integer ptr ({n + 1},) and idx (E,), got {ptr.shape} and {idx.shape}", label)
    if ptr[0] != 0 or ptr[-1] != len(idx) or np.any(np.diff(ptr) < 0):
        raise KisekaeError("ptr must start at 0, not decrease and end at len(idx)", label)
    if idx.size and (idx.min() < 0 or idx.max() >= n_values):
        raise KisekaeError(f"ids must be in 0..{n_values - 1}", label)
    if max(n, len(idx), n_values) >= _MAX_FLOAT_ID:
        raise KisekaeError("more than 2^24 ids or entries do not pass through float32 ids exactly", label)
    return _vec4(n, ptr[:-1], np.diff(ptr)), idx


def gpu_sample_point(skinned, displacement, samples):
    """``KisekaeSamplePoint`` on the GPU: :meth:`kisekae.fit.edge_lift.EdgeSamples.points` of skinned plus
    displacement.

    Parameters
    ----------
    skinned, displacement : (N, 3) array_like, metres
    samples : :class:`kisekae.fit.edge_lift.EdgeSamples`

    Returns
    -------
    (S, 3) float32
    """
    x = as_points(skinned, "skinned garment vertices", dtype=np.float32)
    d = as_points(displacement, "displacement", dtype=np.float32)
    if d.shape != x.shape or samples.n_vertices != len(x):
        raise KisekaeError(f"{len(d)} displacements, {samples.n_vertices} sampled vertices for {len(x)}", "samples")
    m = len(samples)
    if not m:
        return np.zeros((0, 3), np.float32)
    rows = max(m, len(x))
    ends = np.zeros((rows, 4), np.float32)
    ends[:m, :3] = samples.ends
    w = np.zeros((rows, 4), np.float32)
    w[:m, :3] = samples.bary
    o0, _ = _run("sample_point", "constants", m, in0=_vec4(rows, np.pad(d, ((0, rows - len(d)), (0, 0)))),
                 in1=ends, in3=_vec4(rows, np.pad(x, ((0, rows - len(x)), (0, 0)))), in5=w)
    return o0[:, :3]


def gpu_edge_lift(lift, samples, table):
    """``KisekaeEdgeLift`` on the GPU: each vertex's blended lift from its samples' lifts (the gather of
    :func:`kisekae.fit.edge_lift.edge_lift_numpy`).

    Parameters
    ----------
    lift : (S, 3) array_like, each sample's lift (pushed minus sample point), metres
    samples : :class:`kisekae.fit.edge_lift.EdgeSamples`
    table : :func:`kisekae.fit.edge_lift.vertex_samples`

    Returns
    -------
    (N, 3) float32 lifts
    """
    d = as_points(lift, "sample lifts", dtype=np.float32)
    m, n = len(samples), samples.n_vertices
    if len(d) != m:
        raise KisekaeError(f"{len(d)} lifts for {m} samples", "sample lifts")
    ranges, idx = _csr_rows(table, n, 3 * m, "vertex samples")
    if not n:
        return np.zeros((0, 3), np.float32)
    rows = max(m, 1)
    lt = np.zeros((rows, 4), np.float32)
    lt[:m, :3] = d
    w = np.zeros((rows, 4), np.float32)
    w[:m, :3] = samples.bary
    entries = np.zeros((max(len(idx), 1), 4), np.float32)
    entries[: len(idx), 0] = idx
    o0, _ = _run("edge_lift", "constants", n, in1=ranges, in2=entries, in4=lt, in5=w)
    return o0[:, :3]


def gpu_unflip(points, skinned, faces, table, turn_start: float):
    """``KisekaeUnflip`` on the GPU, one pass: :func:`kisekae.fit.unflip.unflip_numpy` (with ``turn_start`` in place of
    :data:`kisekae.fit.unflip.TURN_START`).

    Parameters
    ----------
    points, skinned : (N, 3) array_like, corrected and skinned garment vertices (m)
    faces : (F, 3) int garment triangles
    table : :func:`kisekae.fit.unflip.vertex_faces`
    turn_start : float >= 0

    Returns
    -------
    new_points : (N, 3) float32; moved : (N,) bool
    """
    p, x = _garment_pair(points, skinned)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if f.size and (f.min() < 0 or f.max() >= len(p)):
        raise KisekaeError(f"face corner ids must lie in 0..{len(p) - 1}", "garment faces")
    if not (np.isfinite(turn_start) and turn_start >= 0):
        raise KisekaeError(f"must be a finite number >= 0, got {turn_start!r}", "turn start")
    n = len(p)
    ranges, idx = _csr_rows(table, n, len(f), "vertex faces")
    if not n:
        return p.copy(), np.zeros(0, bool)
    corners = np.zeros((max(len(idx), 1), 4), np.float32)
    corners[: len(idx), :3] = f[idx]
    o0, _ = _run("unflip", "constants", n, in0=_vec4(n, p - x), in1=ranges, in2=corners, in3=_vec4(n, x),
                 params=[[float(turn_start), 0.0, 0.0, 0.0]])
    return x + o0[:, :3], o0[:, 3] > 0.5


def gpu_self_layer_push(points, skinned, layers, faces):
    """``KisekaeSelfLayerPush`` on the GPU, one pass: :func:`kisekae.fit.self_layers.self_layer_push_numpy`.

    Parameters
    ----------
    points, skinned : (N, 3) array_like, corrected and skinned garment vertices (m)
    layers : :class:`kisekae.fit.self_layers.SelfLayers` of the garment (at most ``KISEKAE_SELF_CANDIDATES`` = 4 a
        vertex)
    faces : (F, 3) int garment triangles

    Returns
    -------
    new_points : (N, 3) float32; moved : (N,) bool
    """
    p, x = _garment_pair(points, skinned)
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    layers.check(len(p), f)
    k = layers.triangles.shape[1]
    if k > 4:
        raise KisekaeError(f"the core reads 4 candidates a vertex (KISEKAE_SELF_CANDIDATES), got {k}", "self layers")
    n = len(p)
    if not n:
        return p.copy(), np.zeros(0, bool)
    rows = np.zeros((n, 4, 4), np.float32)
    tri = layers.triangles
    has = tri >= 0
    rows[:, :k, :3][has] = f[tri[has]]
    rows[:, :k, 3][has] = layers.sides[has]
    o0, _ = _run("self_layers", "constants", n, in0=_vec4(n, p - x), in1=rows.reshape(-1, 4), in3=_vec4(n, x),
                 in4=_vec4(n, layers.gap))
    return x + o0[:, :3], o0[:, 3] > 0.5


def gpu_carry_start(skinned, previous_correction, keep: float):
    """``KisekaeCarryStart`` on the GPU: :func:`kisekae.fit.carry.carry_start`.

    Parameters
    ----------
    skinned : (N, 3) array_like, garment vertices skinned this frame (m)
    previous_correction : (N, 3) array_like, last frame's corrected minus skinned positions (m)
    keep : float in [0, 1]

    Returns
    -------
    (N, 3) float32 start positions
    """
    from ..fit.carry import check_keep

    x = as_points(skinned, "skinned garment vertices", dtype=np.float32)
    c = as_points(previous_correction, "previous correction", dtype=np.float32)
    if c.shape != x.shape:
        raise KisekaeError(f"{len(c)} corrections for {len(x)} garment vertices", "previous correction")
    n = len(x)
    if not n:
        return x.copy()
    o0, _ = _run("carry_start", "constants", n, in0=_vec4(n, x), in1=_vec4(n, c),
                 params=[[check_keep(keep), 0.0, 0.0, 0.0]])
    return o0[:, :3]


def gpu_clamp_step(step, budget):
    """``KisekaeClampStep`` on the GPU: :func:`kisekae.fit.surface.clamp_step` for one round.

    Parameters
    ----------
    step : (N, 3) array_like, what a lift round or unflip pass asks of each vertex (m)
    budget : (N,) array_like, what is left of each vertex's finish step (m, >= 0)

    Returns
    -------
    (capped steps (N, 3) float32, budgets left (N,) float32)
    """
    d = as_points(step, "finish steps", dtype=np.float32)
    b = np.asarray(budget, dtype=np.float32).reshape(-1)
    if b.shape != (len(d),) or not np.all(np.isfinite(b)) or np.any(b < 0):
        raise KisekaeError(f"expected {len(d)} finite budgets >= 0, got shape {b.shape}", "finish budget")
    n = len(d)
    if not n:
        return d.copy(), b.copy()
    x = _vec4(n, d)
    x[:, 3] = b
    o0, _ = _run("clamp_step", "constants", n, in0=x)
    return o0[:, :3], o0[:, 3]


#: Basis functions per joint in the conformance harness (``KISEKAE_CORRECTIVE_CENTRES``); bakes with fewer are padded.
HARNESS_CENTRES = 16


def gpu_corrective_features(quats, centres, sigma):
    """``KisekaeCorrectiveFeature`` on the GPU for every (joint, centre): :func:`kisekae.avatar.correctives.joint_features`.

    Parameters
    ----------
    quats : (J, 4) unit quaternions (x, y, z, w) of the joints' local rotations
    centres : (J, K, 4) unit quaternions
    sigma : (J,) radians

    Returns
    -------
    (J, K) float32 features
    """
    q = np.asarray(quats, dtype=np.float32).reshape(-1, 4)
    c = np.asarray(centres, dtype=np.float32)
    w = np.asarray(sigma, dtype=np.float32).reshape(-1)
    if c.ndim != 3 or c.shape[0] != len(q) or c.shape[2] != 4 or len(w) != len(q):
        raise KisekaeError(f"expected (J, K, 4) centres and (J,) widths for {len(q)} joints", "corrective centres")
    j, k = c.shape[:2]
    n = j * k
    if not n:
        return np.zeros((j, k), np.float32)
    sig = np.zeros((n, 4), np.float32)
    sig[:, 0] = np.repeat(w, k)
    o0, _ = _run("corrective_feature", "constants", n, in0=np.repeat(q, k, axis=0), in1=c.reshape(n, 4), in2=sig)
    return o0[:, 0].reshape(j, k)


def _rows(a, n: int) -> np.ndarray:
    """``a`` as float4 rows, padded with zero rows to at least ``n``: the harness reads at least ``n`` rows of every
    input."""
    a = np.asarray(a, np.float32).reshape(-1, 4)
    return np.concatenate([a, np.zeros((max(n - len(a), 0), 4), np.float32)])


def gpu_corrective_offsets(correctives, features):
    """``KisekaeCorrectiveOffset`` on the GPU: :func:`kisekae.avatar.correctives.corrective_offsets_numpy` for one
    frame's ``features (J, K)``; bakes with fewer than :data:`HARNESS_CENTRES` centres are padded with zeros.

    Returns
    -------
    (N, 3) float32 rest-space offsets, metres
    """
    c = correctives
    f = np.asarray(features, dtype=np.float32)
    j, k = c.centres.shape[:2]
    if f.shape != (j, k) or k > HARNESS_CENTRES:
        raise KisekaeError(f"expected ({j}, {k}) features and at most {HARNESS_CENTRES} centres", "corrective features")
    n, e = c.n_vertices, len(c.entry_joint)
    if not n:
        return np.zeros((0, 3), np.float32)
    ranges, _ = _csr_rows((c.vertex_ptr, c.entry_joint), n, max(j, 1), "corrective entries")
    entries = np.zeros((max(e, 1), 4), np.float32)
    entries[:e, 0] = c.entry_joint
    coef = np.zeros((max(e, 1), HARNESS_CENTRES, 4), np.float32)
    coef[:e, :k, :3] = c.coefficients
    feat = np.zeros((max(j, 1), HARNESS_CENTRES, 4), np.float32)
    feat[:j, :k, 0] = f
    o0, _ = _run("corrective_offset", "constants", n, in1=ranges, in2=_rows(entries, n), in3=_rows(coef, n),
                 in4=_rows(feat, n))
    return o0[:, :3]


def gpu_skinned_offsets(rest_offsets, skin_indices, skin_weights, skin_matrices):
    """``KisekaeSkinnedOffset`` on the GPU: rest-space offsets carried by each vertex's blended skinning rotation,
    :func:`kisekae.avatar.correctives.skinned_offsets` (up to :data:`SKIN_INFLUENCES` a vertex; fewer are padded
    with weight 0).

    Parameters
    ----------
    rest_offsets : (N, 3) metres; skin_indices, skin_weights : (N, <= 8); skin_matrices : (B, 4, 4)

    Returns
    -------
    (N, 3) float32 posed offsets, metres
    """
    d = np.asarray(rest_offsets, dtype=np.float32).reshape(-1, 3)
    n = len(d)
    idx = np.asarray(skin_indices).reshape(n, -1)
    w = np.asarray(skin_weights, dtype=np.float32).reshape(n, -1)
    m = np.asarray(skin_matrices, dtype=np.float32).reshape(-1, 4, 4)
    if idx.shape[1] > SKIN_INFLUENCES or w.shape != idx.shape or (idx.size and (idx.min() < 0 or idx.max() >= len(m))):
        raise KisekaeError(f"expected at most {SKIN_INFLUENCES} influences a vertex with bone ids in range", "skin")
    if not n:
        return np.zeros((0, 3), np.float32)
    bones = np.zeros((n, SKIN_INFLUENCES), np.float32)
    weights = np.zeros((n, SKIN_INFLUENCES), np.float32)
    bones[:, :idx.shape[1]] = idx
    weights[:, :w.shape[1]] = w
    offsets = np.zeros((n, 4), np.float32)
    offsets[:, :3] = d
    o0, _ = _run("skinned_offset", "constants", n, in0=offsets, in1=_rows(bones, n), in2=_rows(weights, n),
                 in5=_rows(m[:, :3, :], n))
    return o0[:, :3]


def gpu_body_follow(corners, bary, shares, body, skinned, normals):
    """``KisekaeBodyFollow`` on the GPU: :func:`kisekae.fit.body_follow.body_follow` per garment vertex, the corners'
    displacements (``body - skinned``, formed here in float64 and rounded once) and normals gathered on the CPU.

    Parameters
    ----------
    corners : (N, 3) int body vertex ids; bary : (N, 3); shares : (N,)
    body, skinned, normals : (M, 3) posed body, the same by plain skinning (m), posed unit normals

    Returns
    -------
    (N, 3) float32 displacements, metres
    """
    from ..fit.body_follow import follow_inputs

    corners, bary, shares, body, skinned, normals = follow_inputs(corners, bary, shares, body, skinned, normals)
    n = len(corners)
    if not n:
        return np.zeros((0, 3), np.float32)
    d = body - skinned
    ins = {}
    for k in range(3):
        a = np.zeros((n, 4), np.float32)
        a[:, :3] = d[corners[:, k]]
        a[:, 3] = bary[:, k]
        ins[f"in{k}"] = a
        b = np.zeros((n, 4), np.float32)
        b[:, :3] = normals[corners[:, k]]
        ins[f"in{k + 3}"] = b
    ins["in3"][:, 3] = shares
    o0, _ = _run("body_follow", "constants", n, **ins)
    return o0[:, :3]


def gpu_guarded_vertex_normals(vertices, faces, reference):
    """``KisekaeGuardedFace`` on the GPU, one triangle per thread, its results summed per vertex here (face by face,
    corner by corner) and normalised, a zero sum taking the reference: as an engine's body normals pass does with it,
    :func:`kisekae.geom.guarded_normals.guarded_vertex_normals_numpy` with the default guard.

    Parameters
    ----------
    vertices : (N, 3) posed positions, metres; faces : (F, 3) int; reference : (N, 3) reference normals

    Returns
    -------
    ((N, 3) float64 unit normals, (F, 3) float32 the kernel's weighted area vectors)
    """
    from ..geom.guarded_normals import _reference, sum_and_normalise
    from ..geom.normals import _checked_inputs

    v, f = _checked_inputs(vertices, faces)
    r = _reference(reference, len(v))
    ins = {}
    for k in range(3):
        ins[f"in{k}"] = np.c_[v[f[:, k]], np.zeros(len(f))].astype(np.float32)
        ins[f"in{k + 3}"] = np.c_[r[f[:, k]], np.zeros(len(f))].astype(np.float32)
    o0, _ = _run("guarded_face", "constants", len(f), **ins) if len(f) else (np.zeros((0, 4), np.float32), None)
    return sum_and_normalise(o0[:, :3], f, r), o0[:, :3]


def gpu_smooth_push(displacement, ring, passes: int = 10):
    """``KisekaeSmoothPush`` on the GPU, one dispatch per pass (Jacobi, as an engine ping-pongs two buffers):
    :func:`kisekae.fit.surface.smooth_push_numpy`.

    Parameters
    ----------
    displacement : (N, 3) array_like
        Corrected minus skinned positions (m).
    ring : (ptr (N+1,), idx (E,))
        The one-ring in CSR form (:func:`kisekae.fit.surface.one_ring`).
    passes : int
        Smoothing passes (>= 0).

    Returns
    -------
    (N, 3) float32
    """
    d = as_points(displacement, "displacement", dtype=np.float32)
    n = len(d)
    ranges, neighbours = _ring_rows(ring, n)
    passes = int(passes)
    if passes < 0:
        raise KisekaeError(f"must be >= 0, got {passes}", "passes")
    for _ in range(passes if n else 0):
        o0, _ = _run("smooth_push", "constants", n, in0=_vec4(n, d), in1=ranges, in2=neighbours)
        d = o0[:, :3].copy()
    return d


def gpu_wrinkle_weights(compress, stretch, maps, *, normalize: bool = True):
    """``KisekaeWrinkleWeights`` (+ ``KisekaeWrinkleNormalize``/``2``) on the GPU, like
    :func:`kisekae.tension.wrinkle.wrinkle_weights`.

    Parameters
    ----------
    compress, stretch : (N,) array_like
        Tension Map channels, 0..1.
    maps : sequence of kisekae.tension.WrinkleMap
        One to eight maps (two float4 sets).
    normalize : bool
        Scale weights summing above 1 down to sum 1.

    Returns
    -------
    (N, M) float32
    """
    co = np.asarray(compress, np.float64).reshape(-1)
    st = np.asarray(stretch, np.float64).reshape(-1)
    if st.shape != co.shape:
        raise KisekaeError(f"compress {co.shape} and stretch {st.shape} must both be (N,)", "compress")
    maps = list(maps)
    if not 1 <= len(maps) <= 8:
        raise KisekaeError(f"the core blends 1 to 8 maps (two RGBA sets), got {len(maps)}", "maps")
    n = len(co)
    rows = np.zeros((8, 4), np.float32)
    masks = np.zeros((2, n, 4), np.float32)
    for m, wm in enumerate(maps):
        wm.check()
        s, c = divmod(m, 4)
        rows[3 * s + 0, c] = 1.0 if wm.source == "stretch" else 0.0
        rows[3 * s + 1, c] = wm.threshold
        rows[3 * s + 2, c] = wm.gain
        if wm.mask is None:
            masks[s, :, c] = 1.0
        else:
            mk = np.asarray(wm.mask, np.float64)
            if mk.shape != (n,):
                raise KisekaeError(f"mask must have shape ({n},), got {mk.shape}", wm.name)
            masks[s, :, c] = mk
    rows[6, 0] = 1.0 if len(maps) <= 4 else 2.0
    rows[6, 1] = 1.0 if normalize else 0.0
    o0, o1 = _run("wrinkle_weights", "constants", n, in0=_vec4(n, co, st), in1=masks[0], in2=masks[1], params=rows)
    return np.concatenate([o0, o1], axis=1)[:, : len(maps)]


def gpu_blend_wrinkle_normals(base, normals, weights):
    """``KisekaeBlendWrinkleNormals`` on the GPU (reference :func:`kisekae.shaders.reference.blend_wrinkle_normals`).

    Parameters
    ----------
    base : (N, 3) array_like
        Base tangent-space normals (decoded, +Z out of the surface).
    normals : (N, M, 3) array_like
        Decoded wrinkle-map normals, M <= 4.
    weights : (N, M) array_like
        Blend weights.

    Returns
    -------
    (N, 3) float32 unit normals
    """
    b = as_points(base, "base", dtype=np.float32)
    n = len(b)
    nm = np.asarray(normals, np.float32)
    w = np.asarray(weights, np.float32)
    if nm.ndim != 3 or nm.shape[0] != n or nm.shape[2] != 3 or not 1 <= nm.shape[1] <= 4:
        raise KisekaeError(f"expected ({n}, M, 3) with M <= 4, got {nm.shape}", "normals")
    if w.shape != nm.shape[:2]:
        raise KisekaeError(f"expected {nm.shape[:2]}, got {w.shape}", "weights")
    full = np.zeros((n, 4, 3), np.float32)
    full[:, :, 2] = 1.0
    full[:, : nm.shape[1]] = nm
    w4 = np.zeros((n, 4), np.float32)
    w4[:, : w.shape[1]] = w
    o0, _ = _run("wrinkle_normals", "constants", n, in0=_vec4(n, b), in1=w4, in2=_vec4(n, full[:, 0]),
                         in3=_vec4(n, full[:, 1]), in4=_vec4(n, full[:, 2]), in5=_vec4(n, full[:, 3]))
    return o0[:, :3]


#: kisekae.wound encoding name -> ``KISEKAE_WOUND_*`` id of the core.
WOUND_ENCODINGS = {"article8": 0, "delta8": 1, "delta16": 2, "half": 3, "float": 4}


def gpu_wound_decode(encoded, start_vertices):
    """``KisekaeWoundTarget`` on the GPU: decode a :class:`kisekae.wound.Encoded` as an engine would.

    The vertex colours are passed as the unorm floats a vertex attribute delivers (``byte / 255``);
    the textures are uploaded in their own formats (8/16-bit unorm, half, float), ``W x W`` as baked.

    Parameters
    ----------
    encoded : kisekae.wound.Encoded
    start_vertices : (N, 3) array_like
        Start mesh positions (m).

    Returns
    -------
    positions : (N, 3) float32 metres; normals : (N, 3) float32 unit; parts : (N,) int64
    """
    start = as_points(start_vertices, "start_vertices", dtype=np.float32)
    n = len(start)
    if encoded.name not in WOUND_ENCODINGS:
        raise KisekaeError(f"unknown encoding {encoded.name!r}", "encoding")
    vc = np.asarray(encoded.vertex_colors)
    if vc.shape != (n, 4):
        raise KisekaeError(f"expected ({n}, 4) vertex colours, got {vc.shape}", "vertex_colors")
    tex = {"wound_normal": encoded.normal_texture}
    if encoded.position_texture is not None:
        tex["wound_position"] = encoded.position_texture
    lo = np.asarray(encoded.bounds_min, np.float32)
    hi = np.asarray(encoded.bounds_max, np.float32)
    o0, o1 = _run(
        "wound_decode", "constants", n, in0=_vec4(n, start, np.arange(n)), in1=vc.astype(np.float32) / np.float32(255.0),
        params=[[*lo, WOUND_ENCODINGS[encoded.name]], [*hi, 0.0]], textures=tex,
    )
    return o0[:, :3], o1[:, :3], np.rint(o0[:, 3]).astype(np.int64)


def gpu_wound_p(positions, parts, hits, hit_parts, *, hole_size, hole_intensity, part_reach, part_gain,
                source: str = "constants"):
    """``KisekaeWoundP`` (the per-frame hit loop) on the GPU; returns ``(N,)`` float32 morph parameters.

    ``positions`` (N, 3) m, ``parts`` (N,) int, ``hits`` (H, 3) m in the same space, ``hit_parts`` (H,) int,
    ``part_reach`` / ``part_gain`` (P,) per body part (as :func:`kisekae.wound.runtime.wound_p_numpy`).
    """
    pos = as_points(positions, "positions", dtype=np.float32)
    n = len(pos)
    parts = np.asarray(parts, np.int64).reshape(-1)
    hp = as_points(np.asarray(hits).reshape(-1, 3), "hits", dtype=np.float32)
    reach = np.asarray(part_reach, np.float32)[parts]
    gain = np.asarray(part_gain, np.float32)[parts]
    hits4 = np.column_stack([hp, np.asarray(hit_parts, np.float32).reshape(-1)])
    o0, _ = _run(
        "wound_loop", source, n, in0=_vec4(n, pos, parts), in1=_vec4(n, reach, gain),
        params=[[hole_size, hole_intensity, 0, 0]], hits=hits4,
    )
    return o0[:, 0]


def gpu_wound_accumulate(mask, bind_positions, parts, hit, hit_part, *, hole_size, hole_intensity, part_reach,
                         part_gain):
    """``KisekaeAccumulateHit`` (flat-cost mode): the damage mask after adding one hit, ``(N,)`` float32."""
    pos = as_points(bind_positions, "bind_positions", dtype=np.float32)
    n = len(pos)
    parts = np.asarray(parts, np.int64).reshape(-1)
    reach = np.asarray(part_reach, np.float32)[parts]
    gain = np.asarray(part_gain, np.float32)[parts]
    o0, _ = _run(
        "wound_accumulate", "constants", n, in0=_vec4(n, pos, parts), in1=_vec4(n, reach, gain, mask),
        params=[[hole_size, hole_intensity, 0, 0], [*np.asarray(hit, np.float32).reshape(3), float(hit_part)]],
    )
    return o0[:, 0]


def gpu_wound_morph(positions, normals, target_positions, target_normals, p):
    """``KisekaeWoundMorph`` on the GPU; returns morphed ``(positions (N,3), normals (N,3))`` float32."""
    pos = as_points(positions, "positions", dtype=np.float32)
    n = len(pos)
    o0, o1 = _run(
        "wound_morph", "constants", n, in0=_vec4(n, pos, p), in1=_vec4(n, normals), in2=_vec4(n, target_positions),
        in3=_vec4(n, target_normals),
    )
    return o0[:, :3], o1[:, :3]


def _harness_flesh(planes):
    """(J,) the joints' flesh (radial reach, m) for the shader; planes without one (``flesh`` None, no radial
    limit) get 1e30 m, for which the radial fade is 1 as in the reference."""
    radial = planes.radial()
    return np.where(np.isfinite(radial), radial, 1e30)


def gpu_contact_planes(points, planes, skin_matrices, *, gap: float | None = None, band: float | None = None):
    """``KisekaeContactPlane`` on the GPU, slot by slot: the body contact of
    :func:`kisekae.avatar.contact.contact_planes`.

    Parameters
    ----------
    points : (N, 3) array_like, skinned body positions (m)
    planes : kisekae.avatar.contact.JointPlanes
    skin_matrices : (B, 4, 4) the pose's skinning matrices
    gap, band : float, metres (defaults as the reference)

    Returns
    -------
    (N, 3) float32 positions (m).
    """
    from ..avatar.contact import BAND, GAP, REST_SLACK

    gap = GAP if gap is None else float(gap)
    band = BAND if band is None else float(band)
    p = np.asarray(points, np.float64).reshape(-1, 3)
    n = len(p)
    centre, normal, reach = planes.posed(skin_matrices)
    flesh = _harness_flesh(planes)
    params = [[gap, band, planes.ring_factor, REST_SLACK]]
    out = p.astype(np.float32)
    for k in range(planes.slots.shape[1]):
        j = planes.slots[:, k]
        use = j >= 0
        jj = np.where(use, j, 0)
        o0, _ = _run("contact_plane", "constants", n, params=params,
                     in0=_vec4(n, out, np.where(use, planes.side[:, k], 0.0)),
                     in1=_vec4(n, planes.rest, planes.radius[jj]),
                     in2=_vec4(n, centre[jj], reach[jj]),
                     in3=_vec4(n, normal[jj]), in4=_vec4(n, planes.centre[jj], flesh[jj]),
                     in5=_vec4(n, planes.direction[jj]))
        out = o0[:, :3].copy()
    return out


def gpu_contact_planes_loop(points, planes, skin_matrices, *, gap: float | None = None, band: float | None = None):
    """``KisekaeContactPlanes`` on the GPU: every slot of a vertex in one dispatch, the joint table read through
    ``KISEKAE_LOAD_JOINT_PLANE``; same contract as :func:`gpu_contact_planes`."""
    from ..avatar.contact import BAND, GAP, REST_SLACK

    p = np.asarray(points, np.float64).reshape(-1, 3)
    n = len(p)
    centre, normal, reach = planes.posed(skin_matrices)
    nj = len(centre)
    if n < 2 * nj:
        raise KisekaeError(f"the harness packs the joint table into the point rows: need >= {2 * nj} points", "points")
    table4 = np.zeros((n, 4), np.float32)
    table4[0:2 * nj:2] = np.c_[centre, reach]
    table4[1:2 * nj:2] = np.c_[normal, planes.radius]
    table5 = np.zeros((n, 4), np.float32)
    table5[0:2 * nj:2] = np.c_[planes.centre, _harness_flesh(planes)]
    table5[1:2 * nj:2, :3] = planes.direction
    params = [[GAP if gap is None else float(gap), BAND if band is None else float(band), planes.ring_factor,
               REST_SLACK]]
    o0, _ = _run("contact_planes", "constants", n, params=params, in0=_vec4(n, p), in1=_vec4(n, planes.rest),
                 in2=_vec4(n, np.maximum(planes.slots, 0)), in3=_vec4(n, planes.side), in4=table4, in5=table5)
    return o0[:, :3]


def _part_tables(points, fields, skin_matrices, fade=None):
    """The harness inputs of modes 31 and 32: ``(n, in0, in1, in2, samples, header, rows)``."""
    from ..avatar.part_contact import bone_inverses

    p = np.asarray(points, np.float64).reshape(-1, 3)
    n = len(p)
    n_parts = fields.n_parts
    if n_parts > 64:
        raise KisekaeError(f"the harness holds at most 64 parts, got {n_parts}", "part fields")
    inv = bone_inverses(np.asarray(skin_matrices, np.float64)[fields.bone])[:, :3, :]
    header = np.zeros((max(192 + 64 * 64, n), 4), np.float32)
    header[0:3 * n_parts:3] = np.c_[fields.lo, fields.start[:-1]]
    header[1:3 * n_parts:3] = np.c_[fields.dims, fields.part_cell]
    header[2:3 * n_parts:3, 0] = fields.reach
    if fade is not None:
        rows_fade = 192 + 64 * np.arange(n_parts)[:, None] + np.arange(n_parts)[None, :]
        header[rows_fade.ravel(), 0] = np.asarray(fade, np.float64).ravel()
    rows = np.zeros((max(3 * n_parts, n), 4), np.float32)
    rows[:3 * n_parts] = inv.reshape(-1, 4)
    samples = np.zeros((max(len(fields.grid), n), 4), np.float32)
    samples[:len(fields.grid)] = fields.grid
    skip = fields.skip.astype(np.uint64)
    pieces = np.stack([(skip >> np.uint64(16 * k)) & np.uint64(0xFFFF) for k in range(4)], axis=1).astype(np.float32)
    return n, _vec4(n, p, fields.part), pieces, samples, header, rows


def gpu_part_depths(points, fields, skin_matrices):
    """``KisekaePartDepth`` on the GPU, one dispatch per part, reduced per pair as an engine's ``InterlockedMax``
    would: the (P, P) :func:`kisekae.avatar.part_contact.pair_depths_numpy` (m)."""
    n, in0, pieces, samples, header, rows = _part_tables(points, fields, skin_matrices)
    depth = np.zeros((fields.n_parts, fields.n_parts))
    own = fields.part >= 0
    for s in range(fields.n_parts):
        o0, _ = _run("part_depth", "constants", n, in0=in0, in1=_vec4(n, np.zeros((n, 3)), np.full(n, s)), in2=pieces,
                     in3=samples, in4=header, in5=rows)
        np.maximum.at(depth[:, s], fields.part[own], o0[own, 0].astype(np.float64))
    return depth


def gpu_pair_fade(depth_as, depth_sa, deep: float | None = None):
    """``KisekaePairFade`` on the GPU for depths ``(M,)`` each way (m): (M,) float32."""
    from ..avatar.part_contact import DEEP

    d = np.c_[np.asarray(depth_as, np.float64).reshape(-1), np.asarray(depth_sa, np.float64).reshape(-1)]
    n = len(d)
    o0, _ = _run("part_depth", "constants", n, params=[[0.0, 0.0, DEEP if deep is None else float(deep), 0.0]],
                 in0=_vec4(n, np.zeros((n, 3)), np.full(n, -1.0)), in1=_vec4(n, d))
    return o0[:, 1]


def gpu_part_step(points, fields, skin_matrices, *, gap: float | None = None, band: float | None = None,
                  deep: float | None = None, fade=None):
    """``KisekaePartStep`` on the GPU: one step of :func:`kisekae.avatar.part_contact.part_step`.

    Parameters
    ----------
    points : (N, 3) array_like, the posed body (m)
    fields : kisekae.avatar.part_contact.PartFields
    skin_matrices : (B, 4, 4) the pose's skinning matrices
    gap, band, deep : float, metres (defaults as the reference)
    fade : (P, P) or None, the pairs' :func:`kisekae.avatar.part_contact.pair_fade` (None: the reference's of these
        points)

    Returns
    -------
    (N, 3) float32 positions (m).
    """
    from ..avatar import part_contact as pc

    if fade is None:
        fade = pc.pair_fade(pc.pair_depths_numpy(points, fields, skin_matrices), pc.DEEP if deep is None else deep,
                            pc.live_parts(fields, skin_matrices))
    n, in0, pieces, samples, header, rows = _part_tables(points, fields, skin_matrices, fade)
    n_parts = fields.n_parts
    params = [[pc.GAP if gap is None else float(gap), pc.BAND if band is None else float(band),
               pc.DEEP if deep is None else float(deep), 0.0], [pc.MIN_SPREAD, pc.REST_SLACK, n_parts, 0.0]]
    o0, _ = _run("part_step", "constants", n, params=params, in0=in0, in1=_vec4(n, fields.rest), in2=pieces,
                 in3=samples, in4=header, in5=rows)
    return o0[:, :3]


def gpu_part_guard(start, moved, faces, table, *, cos_min: float | None = None, halvings: int | None = None,
                   reverts: int | None = None):
    """``KisekaePartGuard`` on the GPU, pass after pass as an engine runs it (every pass, also after one that turned
    nothing): :func:`kisekae.avatar.flip_guard.flip_guard_numpy`.

    Parameters
    ----------
    start, moved : (N, 3) array_like, the body before and after the step (m)
    faces : (F, 3) int triangles
    table : :func:`kisekae.geom.ring.vertex_faces`
    cos_min : float or None (:data:`kisekae.avatar.flip_guard.GUARD_COS`)
    halvings, reverts : int or None (:data:`~kisekae.avatar.flip_guard.GUARD_HALVINGS`,
        :data:`~kisekae.avatar.flip_guard.GUARD_REVERTS`)

    Returns
    -------
    (N, 3) float32 positions (m).
    """
    from ..avatar import flip_guard as fg

    x = as_points(start, "start body", dtype=np.float32)
    y = as_points(moved, "moved body", dtype=np.float32)
    if x.shape != y.shape:
        raise KisekaeError(f"{len(y)} moved vertices for {len(x)} start vertices", "points")
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if f.size and (f.min() < 0 or f.max() >= len(x)):
        raise KisekaeError(f"face corner ids must lie in 0..{len(x) - 1}", "body faces")
    n = len(x)
    ranges, idx = _csr_rows(table, n, len(f), "vertex faces")
    if not n:
        return y.copy()
    corners = np.zeros((max(len(idx), 1), 4), np.float32)
    corners[: len(idx), :3] = f[idx]
    cos_min = fg.GUARD_COS if cos_min is None else float(cos_min)
    halvings = fg.GUARD_HALVINGS if halvings is None else int(halvings)
    reverts = fg.GUARD_REVERTS if reverts is None else int(reverts)
    move = y - x
    for r in range(halvings + reverts):
        o0, _ = _run("part_guard", "constants", n, in0=_vec4(n, move), in1=ranges, in2=corners, in3=_vec4(n, x),
                     params=[[cos_min, 0.5 if r < halvings else 0.0, 0.0, 0.0]])
        move = o0[:, :3]
    return x + move

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
from ..validate import as_points
from . import toolchain

SOURCES = {"constants": 0, "texture": 1, "structured": 2}

#: Harness modes (the ``gMode`` switch of the conformance kernel).
MODES = {
    "capsule_field": 0,
    "capsule_distance": 1,
    "tension": 2,
    "pushout": 3,
    "tight_look": 4,
    "wound_loop": 6,
    "wound_accumulate": 7,
    "wound_morph": 8,
}

_LOCAL_SIZE = 64
_lock = threading.Lock()
_ctx = None
_programs: dict[str, object] = {}


def gl_context():
    """The process-wide standalone moderngl context used to execute the core (EGL, GL >= 4.3)."""
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
        Array sizes of the constant-array source (``KISEKAE_MAX_CAPSULES``, ``KISEKAE_MAX_HITS``).
    """

    def __init__(self, source: str = "constants", *, core_dir=None, max_capsules: int = 64, max_hits: int = 32):
        if source not in SOURCES:
            raise KisekaeError(f"must be one of {sorted(SOURCES)}, got {source!r}", "source")
        self.source = source
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
            if ncap > self.max_capsules or nhit > self.max_hits:
                raise KisekaeError(
                    f"at most {self.max_capsules} capsules and {self.max_hits} hits fit the constant arrays, "
                    f"got {ncap} and {nhit}",
                    "capsules",
                )
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
    def run(self, mode: str, n: int, *, in0=None, in1=None, in2=None, in3=None, params=None, capsules=None, hits=None):
        """Dispatch ``mode`` over ``n`` items and return ``(out0, out1)``, each float32 ``(n, 4)``.

        ``in0..in3`` are ``(n, 4)`` float arrays (missing ones are zeros), ``params`` up to 8 float4
        rows of the harness constant buffer, ``capsules`` ``(C, 8)`` and ``hits`` ``(H, 4)``.
        """
        if mode not in MODES:
            raise KisekaeError(f"must be one of {sorted(MODES)}, got {mode!r}", "mode")
        n = int(n)
        if n <= 0:
            return np.zeros((0, 4), np.float32), np.zeros((0, 4), np.float32)
        caps = np.zeros((0, 8), np.float32) if capsules is None else np.asarray(capsules, np.float32).reshape(-1, 8)
        hts = np.zeros((0, 4), np.float32) if hits is None else np.asarray(hits, np.float32).reshape(-1, 4)
        keep: list = []
        b = self.compiled.bindings
        with _lock:
            self._bind_data(caps, hts, keep)
            header = np.zeros(4, np.uint32)
            header[0], header[1] = MODES[mode], n
            prm = np.zeros((8, 4), np.float32)
            if params is not None:
                p = np.asarray(params, np.float32).reshape(-1, 4)
                prm[: len(p)] = p
            self._uniform(b, "KisekaeHarness", header.tobytes() + prm.tobytes(), keep)
            for name, arr in (("gIn0", in0), ("gIn1", in1), ("gIn2", in2), ("gIn3", in3)):
                data = np.zeros((n, 4), np.float32) if arr is None else np.ascontiguousarray(arr, np.float32).reshape(n, 4)
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


def runner(source: str = "constants") -> CoreRunner:
    """Shared :class:`CoreRunner` for the current core (see :class:`using_core`) and ``source``."""
    key = (source, _core_dir[0])
    if key not in _runners:
        _runners[key] = CoreRunner(source, core_dir=_core_dir[0])
    return _runners[key]


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
    o0, o1 = runner(source).run("capsule_field", len(pts), in0=in0, params=[[smooth_k, 0, 0, 0]], capsules=caps)
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
    o0, _ = runner(source).run("capsule_distance", len(pts), in0=in0, capsules=caps)
    return o0[:, 3], o0[:, :3]


def gpu_tension_from_ratio(ratio, *, falloff=1.0, stretch_area=1.0, compress_area=1.0, weight_limit=1.0):
    """``KisekaeTensionFromRatio`` on the GPU; returns ``(compress, stretch)``, each ``(N,)`` float32 in 0..1."""
    r = np.asarray(ratio, np.float32).reshape(-1)
    if not np.all(np.isfinite(r)):
        raise KisekaeError("non-finite value (NaN or inf)", "ratio")
    in0 = np.zeros((len(r), 4), np.float32)
    in0[:, 0] = r
    o0, _ = runner().run(
        "tension", len(r), in0=in0, params=[[falloff, stretch_area, compress_area, weight_limit]]
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


def gpu_push_out(points, capsules, *, margin=0.002, stiffness=0.5, max_push=0.10, skirt_bias=0.0, smooth_k=0.0,
                 tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0), source: str = "constants"):
    """``KisekaePushOut`` on the GPU (the push law of :mod:`kisekae.fit.pushout`, no smoothing pass).

    Parameters
    ----------
    points : (N, 3) array_like
        Posed garment vertices (m).
    capsules : (C, 8) array_like
        Posed capsules ``[a, r0, b, r1]`` (m).
    margin, max_push, smooth_k : float
        Metres (defaults 0.002, 0.10, 0).
    stiffness, skirt_bias : float
        0..1 (defaults 0.5, 0).
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
    for name, v in (("margin", margin), ("max_push", max_push)):
        if not np.isfinite(v) or v <= 0:
            raise KisekaeError(f"must be > 0 metres, got {v!r}", name)
    if margin > max_push:
        raise KisekaeError(f"margin ({margin:g} m) is greater than max_push ({max_push:g} m)", "margin")
    o0, o1 = runner(source).run(
        "pushout", n, in0=_vec4(n, pts), in1=_vec4(n, t, s),
        params=[[margin, stiffness, max_push, skirt_bias], [smooth_k, *np.asarray(up, np.float32)]],
        capsules=caps,
    )
    return o0[:, :3], o0[:, 3], o1[:, 0]


def gpu_push_amount(d, *, margin=0.002, stiffness=0.5, max_push=0.10, skirt_bias=0.0, tightness=0.0, softness=0.0):
    """``KisekaePushAmount`` (the push law alone) for distances ``d`` (m); returns ``(N,)`` float32 metres."""
    dd = np.asarray(d, np.float32).reshape(-1)
    n = len(dd)
    o0, o1 = runner().run(
        "pushout", n, in0=_vec4(n, np.full((n, 3), 1e3)),  # far point: the field part is inert
        in1=_vec4(n, _mask(tightness, n, "tightness"), _mask(softness, n, "softness"), dd),
        params=[[margin, stiffness, max_push, skirt_bias], [0.0, 0.0, 1.0, 0.0]],
        capsules=np.array([[0, 0, 0, 0.1, 0, 0.1, 0, 0.1]], np.float32),
    )
    return o1[:, 1]


def gpu_tight_look(normals, ao, sss, dent_dir, tightness, pressure, *, normal_strength=0.15, ao_strength=0.3,
                   sss_strength=0.25):
    """``KisekaeTightLook`` on the GPU; returns ``(normals (N,3), ao (N,), sss (N,))`` float32."""
    nrm = as_points(normals, "normals", dtype=np.float32)
    n = len(nrm)
    dent = as_points(dent_dir, "dent_dir", dtype=np.float32)
    o0, o1 = runner().run(
        "tight_look", n, in0=_vec4(n, nrm, ao), in1=_vec4(n, dent, sss), in2=_vec4(n, tightness, pressure),
        params=[[normal_strength, ao_strength, sss_strength, 0.0]],
    )
    return o0[:, :3], o0[:, 3], o1[:, 0]


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
    o0, _ = runner(source).run(
        "wound_loop", n, in0=_vec4(n, pos, parts), in1=_vec4(n, reach, gain),
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
    o0, _ = runner().run(
        "wound_accumulate", n, in0=_vec4(n, pos, parts), in1=_vec4(n, reach, gain, mask),
        params=[[hole_size, hole_intensity, 0, 0], [*np.asarray(hit, np.float32).reshape(3), float(hit_part)]],
    )
    return o0[:, 0]


def gpu_wound_morph(positions, normals, target_positions, target_normals, p):
    """``KisekaeWoundMorph`` on the GPU; returns morphed ``(positions (N,3), normals (N,3))`` float32."""
    pos = as_points(positions, "positions", dtype=np.float32)
    n = len(pos)
    o0, o1 = runner().run(
        "wound_morph", n, in0=_vec4(n, pos, p), in1=_vec4(n, normals), in2=_vec4(n, target_positions),
        in3=_vec4(n, target_normals),
    )
    return o0[:, :3], o1[:, :3]

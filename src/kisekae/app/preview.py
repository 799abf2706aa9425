"""Interactive preview: sliders for the push-out, tension and wound parameters over a rendered frame.

The logic (:class:`PreviewModel`: slider values -> effect parameters -> what must be recomputed ->
a frame) is separate from the window (:func:`run_window`, matplotlib widgets), so it runs and is
tested headless. Each slider change recomputes only what depends on it:

* ``fit`` (margin, stiffness, maxPush, skirtBias): the push-out (:func:`kisekae.fit.fix.fix_pose`),
  then the body pressure and the tights' tension ratio;
* ``shading`` (the Tension Map's falloff, stretch area, compress area, weight limit): nothing on the
  CPU; the shader core maps the ratio with the new parameters on the GPU;
* ``wound`` (hits): the hit list; the core's hit loop runs in the vertex stage.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from ..errors import KisekaeError


@dataclass(frozen=True)
class Slider:
    """One slider: ``name`` (key), shown ``label``, range ``lo..hi`` in display units, ``default``,
    ``step`` (0 = continuous), ``scale`` (display unit -> parameter unit, e.g. mm -> m) and the
    ``stage`` it invalidates (``fit``, ``shading`` or ``wound``)."""

    name: str
    label: str
    lo: float
    hi: float
    default: float
    step: float
    scale: float
    stage: str


#: The preview's sliders, in window order (display units in the labels).
SLIDERS: tuple[Slider, ...] = (
    Slider("margin", "margin (mm)", 0.5, 10.0, 2.0, 0.0, 1e-3, "fit"),
    Slider("stiffness", "stiffness", 0.0, 1.0, 0.5, 0.0, 1.0, "fit"),
    Slider("max_push", "maxPush (cm)", 1.0, 15.0, 10.0, 0.0, 1e-2, "fit"),
    Slider("skirt_bias", "skirtBias", 0.0, 0.7, 0.3, 0.0, 1.0, "fit"),
    Slider("falloff", "tension falloff", 0.0, 3.0, 1.0, 0.0, 1.0, "shading"),
    Slider("stretch_area", "stretch area", 0.0, 2.0, 1.0, 0.0, 1.0, "shading"),
    Slider("compress_area", "compress area", 0.0, 2.0, 1.0, 0.0, 1.0, "shading"),
    Slider("weight_limit", "weight limit", 0.0, 1.0, 1.0, 0.0, 1.0, "shading"),
    Slider("hits", "hits", 0, 8, 0, 1, 1.0, "wound"),
)
_BY_NAME = {s.name: s for s in SLIDERS}
#: Garment-name fragments that get the skirt bias (others use 0).
SKIRT_WORDS = ("skirt", "dress")


class PreviewModel:
    """Slider values and the frame they produce (no window).

    Parameters
    ----------
    avatar : kisekae.avatar.Avatar, optional
        Default: the built-in avatar (game_engine rig, tights + skirt) on the joint-plane contact body
        (:meth:`kisekae.avatar.Avatar.with_body_contact`), as ``kisekae preview`` shows it.
    pose : str, default ``"crouch"``
        Named pose (:mod:`kisekae.avatar.poses`).
    view : str, default ``"three_quarter"``
        Named camera (:data:`kisekae.render.ALL_VIEWS`).
    size : (int, int), default (640, 480)
        Frame size, pixels.
    preset : str, default ``"realistic"``
    renderer : Renderer, optional
    cull : bool, default True
        Leave out the body triangles covered by the garments (:func:`kisekae.render.scene.cull_covered`), as the
        engine glue does while they are worn; False draws the whole body under them.
    """

    def __init__(self, avatar=None, *, pose: str = "crouch", view: str = "three_quarter", size=(640, 480),
                 preset: str = "realistic", renderer=None, cull: bool = True):
        from ..avatar.poses import named_pose
        from ..render.camera import ALL_VIEWS, resolution
        from ..render.materials import preset as _preset
        from ..render.renderer import default_renderer

        if avatar is None:
            from ..avatar.builtin import load_builtin_avatar

            avatar = load_builtin_avatar().with_body_contact()
        if view not in ALL_VIEWS:
            raise KisekaeError(f"unknown view {view!r}; known: {', '.join(ALL_VIEWS)}", "view")
        self.avatar = avatar
        self.pose = named_pose(avatar.skeleton, pose)
        self.view = view
        self.size = resolution(size)
        self.preset = _preset(preset).name
        self.renderer = renderer or default_renderer()
        self.cull = bool(cull)
        self.values = {s.name: float(s.default) for s in SLIDERS}
        self.dirty = {"fit", "wound"}
        self.counts = {"fit": 0, "frame": 0}
        self.timings: dict[str, float] = {}
        self._fixed = self._pressure = self._ratio = None
        self._hit_candidates = None

    # ---------------------------------------------------------------- slider -> parameters
    def set(self, name: str, value) -> str:
        """Set a slider (display units); returns the stage it invalidates.

        Raises
        ------
        KisekaeError
            Unknown slider, or a value outside its range.
        """
        s = _BY_NAME.get(name)
        if s is None:
            raise KisekaeError(f"unknown slider {name!r}; known: {', '.join(_BY_NAME)}", "slider")
        v = float(value)
        if not (np.isfinite(v) and s.lo <= v <= s.hi):
            raise KisekaeError(f"{s.label} must be in {s.lo:g}..{s.hi:g}, got {value!r}", name)
        if s.step:
            v = s.lo + round((v - s.lo) / s.step) * s.step
        if v != self.values[name]:
            self.values[name] = v
            self.dirty.add(s.stage)
        return s.stage

    def push_params(self) -> dict:
        """Per-garment :class:`kisekae.fit.PushParams` from the fit sliders (metres)."""
        from ..fit.pushout import PushParams

        v = {k: self.values[k] * _BY_NAME[k].scale for k in ("margin", "stiffness", "max_push", "skirt_bias")}
        out = {}
        for g in self.avatar.garments:
            bias = v["skirt_bias"] if any(w in g.lower() for w in SKIRT_WORDS) else 0.0
            out[g] = PushParams(margin=v["margin"], stiffness=v["stiffness"], max_push=v["max_push"], skirt_bias=bias)
        return out

    def tension_params(self) -> tuple:
        """(falloff, stretch area, compress area, weight limit) for the shader core's Tension Map."""
        return tuple(self.values[k] for k in ("falloff", "stretch_area", "compress_area", "weight_limit"))

    def hits(self) -> np.ndarray:
        """(H,4) posed hit points (metres) and part ids: the first ``hits`` of a fixed candidate list."""
        if self._hit_candidates is None:
            posed = self.avatar.body.posed(self.pose.skinning_matrices(self.avatar.skeleton))
            rng = np.random.default_rng(7)
            # bare skin in view: the front of the head (the built-in garments cover the rest of the body)
            top = np.flatnonzero(posed[:, 1] > np.percentile(posed[:, 1], 95))
            head = top[posed[top, 2] > np.median(posed[top, 2])]
            pick = rng.choice(head, size=int(_BY_NAME["hits"].hi), replace=False)
            self._hit_candidates = np.c_[posed[pick], np.zeros(len(pick))].astype(np.float32)
        return self._hit_candidates[: int(self.values["hits"])]

    # ---------------------------------------------------------------- recomputation
    def _refit(self):
        from ..fit.fix import fix_pose
        from ..fit.pressure import avatar_pressure
        from ..tension import tension_map

        t = time.perf_counter()
        garments = list(self.avatar.garments)
        res = fix_pose(self.avatar, self.pose, garments, self.push_params())
        self._fixed = {k: v.positions for k, v in res.items()}
        tight = {g: 0.5 for g in garments if g == "tights"}
        self._pressure = avatar_pressure(self.avatar, self.pose, self._fixed, tight)
        self._ratio = {}
        for g in garments:
            mesh = self.avatar.part(g).mesh
            polys = mesh.quads if getattr(mesh, "quads", None) is not None else mesh.faces
            self._ratio[g] = np.asarray(tension_map(mesh.vertices, self._fixed[g], polys).ratio)
        self.counts["fit"] += 1
        self.timings["fit_ms"] = (time.perf_counter() - t) * 1e3

    def items(self):
        """Current draw items: body (pressure, wound hits; without the covered skin when ``cull``) and the fixed
        garments (tension ratio)."""
        from ..render import materials as M
        from ..render.renderer import WoundMorph
        from ..render.scene import avatar_items, cull_covered

        if "fit" in self.dirty or self._fixed is None:
            self._refit()
        attrs = {"body": {"pressure": self._pressure}}
        attrs.update({g: {"ratio": r} for g, r in self._ratio.items()})
        mats = {g: M.cloth(c, self.preset, tension_params=self.tension_params())
                for g, c in zip(self.avatar.garments, ((0.22, 0.30, 0.55), (0.55, 0.20, 0.25), (0.25, 0.45, 0.3)))}
        body, gs = avatar_items(self.avatar, self.pose, positions=self._fixed, preset=self.preset,
                                garment_materials=mats, attributes=attrs)
        hits = self.hits()
        if len(hits):
            target = body.positions - 0.012 * body.normals  # a 12 mm deep crater where hits land
            body.wound = WoundMorph(target, hits=hits, hole_size=0.02, hole_intensity=60.0, tint_distance=0.004)
            body.wound.check(len(body.positions), body.faces, "body")
        if self.cull:  # after the wound's target normals, which are over the whole body
            body = cull_covered(body, self.avatar, gs)
        return body, gs

    def frame(self) -> np.ndarray:
        """Render the current state, (H,W,3) uint8; recomputes only what the changed sliders need."""
        from ..render.camera import named_camera
        from ..render.scene import avatar_landmarks

        body, gs = self.items()
        t = time.perf_counter()
        w, h = self.size
        cam = named_camera(self.view, body.positions, w / h, landmarks=avatar_landmarks(self.avatar, self.pose))
        rgb = self.renderer.draw([body, *gs.values()], cam, (w, h)).rgb
        self.timings["render_ms"] = (time.perf_counter() - t) * 1e3
        self.counts["frame"] += 1
        self.dirty.clear()
        return rgb

    def status(self) -> str:
        """One line: the timings of the last frame."""
        return " ".join(f"{k} {v:.0f}" for k, v in self.timings.items())


def display_available() -> tuple[bool, str]:
    """Whether a window can open: ``(ok, reason)``."""
    if sys.platform in ("win32", "darwin"):
        return True, ""
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return True, ""
    return False, "no display (neither DISPLAY nor WAYLAND_DISPLAY is set)"


def run_window(model: PreviewModel) -> None:  # pragma: no cover - needs a display
    """Open the preview window (matplotlib widgets) and block until it is closed."""
    ok, why = display_available()
    if not ok:
        raise KisekaeError(f"{why}; the preview needs a desktop session. Use `kisekae preview --snapshot FILE` "
                           "or `kisekae demo` for pictures without a display", "preview")
    import matplotlib

    if matplotlib.get_backend().lower() == "agg":
        for backend in ("QtAgg", "TkAgg", "GTK3Agg", "MacOSX"):
            try:
                matplotlib.use(backend, force=True)
                break
            except Exception:
                continue
    import matplotlib.pyplot as plt
    from matplotlib.widgets import Slider as MplSlider

    fig = plt.figure(figsize=(10, 8))
    ax = fig.add_axes([0.02, 0.36, 0.96, 0.62])
    ax.set_axis_off()
    image = ax.imshow(model.frame())
    title = ax.set_title(model.status(), fontsize=9)
    widgets = []
    for k, s in enumerate(SLIDERS):
        sax = fig.add_axes([0.2, 0.31 - 0.033 * k, 0.6, 0.022])
        w = MplSlider(sax, s.label, s.lo, s.hi, valinit=s.default, valstep=s.step or None)

        def changed(value, name=s.name):
            model.set(name, value)
            image.set_data(model.frame())
            title.set_text(model.status())
            fig.canvas.draw_idle()

        w.on_changed(changed)
        widgets.append(w)
    plt.show()

"""Materials (skin, cloth, wireframe, heat map, tension) and the anime / realistic look presets.

A :class:`Material` says *what* a surface is; a :class:`Preset` says *how strongly* effects read on
screen. The per-vertex inputs of the effects (tightness, tension, wound weight, a scalar for heat
maps) travel with the mesh, see :class:`kisekae.render.renderer.DrawItem`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import KisekaeError

#: Material kinds and the integer code the shaders use.
KINDS: dict[str, int] = {"skin": 0, "cloth": 1, "wireframe": 2, "heatmap": 3, "tension": 4}

#: Colormaps available for heat maps (matplotlib names).
COLORMAPS = ("inferno", "viridis", "magma", "plasma", "turbo", "coolwarm", "RdYlGn_r")


@dataclass(frozen=True)
class Preset:
    """How the effects read on screen.

    Parameters
    ----------
    name : str
    dent_depth : float
        Apparent depth of the skin dent at tightness 1, metres. The dent direction handed to the
        core's tight look is ``-dent_depth * grad k`` (``k = max(tightness, pressure)``, gradient
        along the surface, 1/m), so the normal tilts as for a height field ``-dent_depth * k``
        (no geometry moves).
    ao_gain : float
        Ambient-occlusion darkening at tightness 1, 0..1 (the core's ``aoStrength``).
    sss : float
        Subsurface-scattering amount of skin (wrap lighting and a warm tint), 0..1.
    sss_loss : float
        Fraction of ``sss`` removed at tightness 1 (pressed skin scatters less), 0..1 (``sssStrength``).
    wrinkle_amp : float
        Height of the wrinkle pattern at compression 1, metres.
    wrinkle_freq : float
        Spatial frequency of wrinkles, ridges per metre.
    bands : int
        Toon shading bands; 0 = smooth (realistic).
    contrast : float
        Exponent on the diffuse term; > 1 darkens mid-tones (harder shadows).
    rim : float
        Rim-light strength, 0..1.
    specular : float
        Blinn-Phong highlight strength, 0..1.
    normal_strength : float, default 1
        The core's ``normalStrength``: scale of the dent's normal tilt at tightness 1.
    """

    name: str
    dent_depth: float
    ao_gain: float
    sss: float
    sss_loss: float
    wrinkle_amp: float
    wrinkle_freq: float
    bands: int
    contrast: float
    rim: float
    specular: float
    normal_strength: float = 1.0


#: The seed note's two looks. Anime: stronger normals, higher shading contrast, little SSS.
#: Realistic: subtle normals, SSS and small AO for a natural dent. The tight-look strengths
#: (``normal_strength``, ``ao_gain``, ``sss_loss``) are those of :data:`kisekae.fit.pressure.PRESETS`
#: and ``dent_depth`` is its splat radius, so the rendered dent is the pressure module's reference
#: tight look (``D = -radius * grad P``).
PRESETS: dict[str, Preset] = {
    "realistic": Preset("realistic", dent_depth=0.02, ao_gain=0.12, sss=0.45, sss_loss=0.30,
                        wrinkle_amp=0.0012, wrinkle_freq=55.0, bands=0, contrast=1.0, rim=0.08, specular=0.12,
                        normal_strength=0.08),
    "anime": Preset("anime", dent_depth=0.02, ao_gain=0.45, sss=0.1, sss_loss=0.40,
                    wrinkle_amp=0.0025, wrinkle_freq=40.0, bands=3, contrast=1.6, rim=0.35, specular=0.3,
                    normal_strength=0.35),
}


def preset(value) -> Preset:
    """Return a :class:`Preset` from a name or a Preset."""
    if isinstance(value, Preset):
        return value
    if value in PRESETS:
        return PRESETS[value]
    raise KisekaeError(f"unknown preset {value!r}; known: {', '.join(PRESETS)}", "preset")


def _rgb(value, name):
    c = np.asarray(value, dtype=np.float64)
    if c.shape != (3,) or not np.all(np.isfinite(c)) or c.min() < 0 or c.max() > 1:
        raise KisekaeError(f"expected an RGB triple in 0..1, got {value!r}", name)
    return tuple(float(x) for x in c)


@dataclass(frozen=True)
class Material:
    """Surface description for :func:`kisekae.render.draw`.

    Parameters
    ----------
    kind : str, default ``"skin"``
        ``skin`` (tight look from the ``tightness`` attribute, wound tint from ``wound``),
        ``cloth`` (wrinkle normal blend from ``compress``), ``wireframe`` (flat base + edges),
        ``heatmap`` (``heat`` attribute through ``colormap`` over ``heat_range``) or ``tension``
        (the Blender Tension Map colour: red = compress, green = stretch).
    color : (3,) float, 0..1
        Base colour (linear RGB).
    preset : str or Preset, default ``"realistic"``
        Look preset, see :data:`PRESETS`.
    heat_range : (2,) float
        Values mapped to the ends of the colormap (``heatmap`` only).
    colormap : str
        One of :data:`COLORMAPS`.
    wire_color : (3,) float
        Edge colour (``wireframe``).
    wound_color : (3,) float
        Colour of the wound at weight 1 (skin).
    wrinkles : bool
        Blend the wrinkle normal pattern by compression (skin and cloth).
    shaded : bool, optional
        Light the ``heatmap`` / ``tension`` colours. Default: shaded heat maps, unshaded tension
        (so that pixel colours are the map's values, as Blender's Tension Map shows them).
    wrinkle_threshold, wrinkle_gain : float, default 0, 1
        The wrinkle map's weight ``saturate(gain * saturate((compress - threshold) / (1 - threshold)))``
        (the shader core's wrinkle weights, as :class:`kisekae.tension.wrinkle.WrinkleMap`).
    tension_params : (4,) float, default (1, 1, 1, 1)
        The Tension Map node group's falloff, stretch area, compress area and weight limit. Used by
        the shader core when a mesh carries the tension ratio ``T`` (attribute ``ratio``).
    """

    kind: str = "skin"
    color: tuple = (0.86, 0.66, 0.55)
    preset: object = "realistic"
    heat_range: tuple = (0.0, 1.0)
    colormap: str = "inferno"
    wire_color: tuple = (0.08, 0.08, 0.1)
    wound_color: tuple = (0.42, 0.04, 0.05)
    wrinkles: bool = True
    shaded: bool | None = None
    tension_params: tuple = (1.0, 1.0, 1.0, 1.0)
    wrinkle_threshold: float = 0.0
    wrinkle_gain: float = 1.0

    def __post_init__(self):
        if self.shaded is None:
            object.__setattr__(self, "shaded", self.kind != "tension")
        if self.kind not in KINDS:
            raise KisekaeError(f"unknown material kind {self.kind!r}; known: {', '.join(KINDS)}", "material.kind")
        object.__setattr__(self, "color", _rgb(self.color, "material.color"))
        object.__setattr__(self, "wire_color", _rgb(self.wire_color, "material.wire_color"))
        object.__setattr__(self, "wound_color", _rgb(self.wound_color, "material.wound_color"))
        object.__setattr__(self, "preset", preset(self.preset))
        lo, hi = (float(v) for v in self.heat_range)
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            raise KisekaeError(f"need finite lo < hi, got {self.heat_range!r}", "material.heat_range")
        object.__setattr__(self, "heat_range", (lo, hi))
        tp = np.asarray(self.tension_params, dtype=np.float64)
        if tp.shape != (4,) or not np.all(np.isfinite(tp)) or tp.min() < 0:
            raise KisekaeError(f"expected 4 finite numbers >= 0 (falloff, stretch area, compress area, weight "
                               f"limit), got {self.tension_params!r}", "material.tension_params")
        object.__setattr__(self, "tension_params", tuple(float(x) for x in tp))
        th, gn = float(self.wrinkle_threshold), float(self.wrinkle_gain)
        if not (0.0 <= th < 1.0 and np.isfinite(gn) and gn >= 0.0):
            raise KisekaeError(f"need 0 <= wrinkle_threshold < 1 and wrinkle_gain >= 0, got {th!r}, {gn!r}",
                               "material.wrinkle_threshold")
        object.__setattr__(self, "wrinkle_threshold", th)
        object.__setattr__(self, "wrinkle_gain", gn)
        if self.colormap not in COLORMAPS:
            raise KisekaeError(f"unknown colormap {self.colormap!r}; known: {', '.join(COLORMAPS)}",
                               "material.colormap")

    def with_preset(self, value) -> "Material":
        """A copy using another look preset."""
        return replace(self, preset=preset(value))


def skin(preset="realistic", **kw) -> Material:
    """Skin material (tight look, wound tint)."""
    return Material(kind="skin", preset=preset, **kw)


def cloth(color=(0.22, 0.3, 0.55), preset="realistic", **kw) -> Material:
    """Cloth material (wrinkle normals from compression)."""
    return Material(kind="cloth", color=color, preset=preset, **kw)


def wireframe(color=(0.8, 0.8, 0.82), **kw) -> Material:
    """Flat-shaded surface with its edges drawn on top."""
    return Material(kind="wireframe", color=color, **kw)


def heatmap(heat_range=(0.0, 1.0), colormap="inferno", **kw) -> Material:
    """Scalar heat map of the per-vertex ``heat`` attribute."""
    return Material(kind="heatmap", heat_range=heat_range, colormap=colormap, **kw)


def tension(**kw) -> Material:
    """Blender Tension Map colours: red = compress, green = stretch (attributes ``compress``, ``stretch``)."""
    return Material(kind="tension", **kw)


def colormap_table(name: str, n: int = 256) -> np.ndarray:
    """A colormap sampled at ``n`` points, (n,3) uint8 (matplotlib)."""
    if name not in COLORMAPS:
        raise KisekaeError(f"unknown colormap {name!r}", "colormap")
    from matplotlib import colormaps

    rgba = colormaps[name](np.linspace(0.0, 1.0, n))
    return np.round(rgba[:, :3] * 255).astype(np.uint8)

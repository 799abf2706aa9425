"""Tension maps: where a deformed mesh is compressed (wrinkles) or stretched.

Compatible with cgvirus's Blender "Tension Map" node group (Blender 4.5+): same inputs (Falloff,
Stretch Area, Compress Area, Weight Limit, Reference) and outputs (Tension Map colour, Compress Map,
Stretch Map), evaluated with Blender's float32 node semantics. Beyond the node group: a strain mode,
blur and temporal smoothing, wrinkle-map weights and animation export. See ``docs/tension.md``.
"""

from .animation import (
    TensionSequence, avatar_frames, avatar_plan, bake_vertex_colors, plot_t_curves, save_npz, t_curves,
    tension_sequence, write_t_curves_json,
)
from .blender import MapParams, MappedRatio, map_params, map_range_smoothstep, map_ratio, safe_divide, smax, smin
from .edge import (
    TensionPlan, TensionResult, cached_plan, clear_plan_cache, empty_result, tension_map, tension_map_numpy,
)
from .smoothing import TemporalSmoother, blur, smooth_sequence
from .strain import FaceStrain, StrainResult, face_strain, strain_tension
from .wrinkle import WrinkleMap, pack_rgba, region_mask, wrinkle_weights

__all__ = [
    "MapParams", "MappedRatio", "map_params", "map_range_smoothstep", "map_ratio", "safe_divide", "smax", "smin",
    "TensionPlan", "TensionResult", "cached_plan", "clear_plan_cache", "empty_result", "tension_map",
    "tension_map_numpy",
    "FaceStrain", "StrainResult", "face_strain", "strain_tension",
    "TemporalSmoother", "blur", "smooth_sequence",
    "WrinkleMap", "pack_rgba", "region_mask", "wrinkle_weights",
    "TensionSequence", "avatar_frames", "avatar_plan", "bake_vertex_colors", "plot_t_curves", "save_npz",
    "t_curves", "tension_sequence", "write_t_curves_json",
]

"""Tension maps: where a deformed mesh is compressed (wrinkles) or stretched.

Compatible with cgvirus's Blender "Tension Map" node group (Blender 4.5+): same inputs (Falloff,
Stretch Area, Compress Area, Weight Limit, Reference) and outputs (Tension Map colour, Compress Map,
Stretch Map), evaluated with Blender's float32 node semantics. See ``docs/tension.md``.
"""

from .blender import MapParams, MappedRatio, map_params, map_range_smoothstep, map_ratio, safe_divide, smax, smin
from .edge import TensionPlan, TensionResult, empty_result, tension_map, tension_map_numpy
from .topology import face_edges, unique_edges, weld_map

__all__ = [
    "MapParams", "MappedRatio", "map_params", "map_range_smoothstep", "map_ratio", "safe_divide", "smax", "smin",
    "TensionPlan", "TensionResult", "empty_result", "tension_map", "tension_map_numpy",
    "face_edges", "unique_edges", "weld_map",
]

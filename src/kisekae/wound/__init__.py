"""Wound morphs: bake a damaged shape into a start mesh and morph it where hits land.

Bake (offline): :func:`bake` matches every start vertex to the target surface (closest point in 3D
or the article's second UV set), encodes target positions and normals (vertex colours, 8/16-bit
and half/float textures) and measures each encoding's error; :func:`write_bake` writes the start
mesh (GLB), PNG/EXR textures and a JSON sidecar.

Runtime (per frame): hits are stored in bone space (:class:`Hit`, :func:`place_hit` ray-casts the
posed mesh), a per-vertex morph parameter ``p`` accumulates over hits (:func:`wound_p_vertex`,
HoleSize/HoleIntensity and a body-part mask), or, in flat-cost mode, each hit is accumulated once
into a per-vertex damage mask (:class:`WoundState`) or a UV-space texture (:class:`UVDamageMask`,
``WoundState.enable_uv_mask``); rays are cast through a refitted BVH (:func:`raycast_bvh`, from
:mod:`kisekae.geom.raycast`);
:func:`morph_numpy` / :func:`morph_numba` morph positions and normals (bit-identical at ``p == 0``).
"""

from ..geom.bvh import refit_boxes
from ..geom.raycast import build_ray_bvh, ray_bvh_numba, raycast_bvh
from .bake import METHODS, BakeResult, bake
from .correspond import Correspondence, Region, correspond_closest, correspond_uv
from .encode import BEST_ENCODING, ENCODINGS, Encoded, decode, encode, encoding_errors, format_error_table, vertex_limit
from .files import read_exr, read_png, write_bake, write_exr, write_glb, write_png
from .runtime import (Hit, WoundState, accumulate_hit_numba, hit_damage, hits_world, make_hit, morph_numba,
                      morph_numpy, morph_vertex, place_hit, raycast, wound_p_numba, wound_p_numpy, wound_p_vertex)
from .uvmask import (UVDamageMask, accumulate_hit_uv_numba, rasterize_uv_positions, sample_uv_mask_numba)

__all__ = [
    "METHODS", "BakeResult", "bake", "Correspondence", "Region", "correspond_closest", "correspond_uv",
    "BEST_ENCODING", "ENCODINGS", "Encoded", "decode", "encode", "encoding_errors", "format_error_table",
    "vertex_limit", "read_exr", "read_png", "write_bake", "write_exr", "write_glb", "write_png",
    "Hit", "WoundState", "accumulate_hit_numba", "hit_damage", "hits_world", "make_hit",
    "morph_numba", "morph_numpy", "morph_vertex", "place_hit", "raycast", "wound_p_numba", "wound_p_numpy",
    "wound_p_vertex", "build_ray_bvh", "ray_bvh_numba", "raycast_bvh", "refit_boxes", "UVDamageMask",
    "accumulate_hit_uv_numba", "rasterize_uv_positions", "sample_uv_mask_numba",
]

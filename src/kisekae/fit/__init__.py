"""Clothes stay outside the body.

- capsule fitting (``fitting``, ``humanoid``; the rig type is :mod:`kisekae.avatar.capsules`),
  signed distance of the capsule field (``sdf``) and the push law with the capsule push-out
  (``pushout``): the runtime path, ported to the shader core;
- skin-bound clearance (``bound``): the per-vertex "exact against my own skin" runtime term;
- the per-frame surface push (``surface``), carried from frame to frame (``carry``), and the per-frame path an
  engine runs on a whole avatar (``runtime``, ``kisekae check --runtime``);
- the exact solver against the real posed body union (``exact``), the shape-preserving solve (``shape_solve``),
  the garment carried from the rest pose (``path_fix``) and ``fix.fix_pose``, which ``kisekae check --fix`` runs; layered outfits and draw order (``layers``);
- body pressure and the skin's tight look (``pressure``), covered skin for culling (``covered``),
  and Blender's Shrinkwrap as a comparison baseline (``shrinkwrap``).
"""

from .bound import SkinBinding, bind_to_skin, bound_clearance, push_out_bound, push_out_runtime
from .covered import avatar_covered, covered_triangles, covered_vertices
from .exact import march_out, push_out_exact, signed_body_distance
from .fitting import fit_capsules, fit_report
from .layers import LayerSurface, draw_order, push_out_layers
from .pressure import avatar_pressure, pressure, tight_look
from .pushout import (CapsulePushPlan, PushParams, push_amount, push_out_capsules, push_out_reference, resolve_mask,
                      smooth_displacement)
from .sdf import capsule_distance, capsule_field, capsule_field_culled, capsule_field_numba, smooth_union

__all__ = ["SkinBinding", "bind_to_skin", "bound_clearance", "push_out_bound", "push_out_runtime",
           "avatar_covered", "covered_triangles", "covered_vertices",
           "march_out", "push_out_exact", "signed_body_distance", "fit_capsules", "fit_report", "LayerSurface",
           "draw_order", "push_out_layers", "avatar_pressure", "pressure", "tight_look", "CapsulePushPlan", "PushParams", "push_amount",
           "push_out_capsules", "push_out_reference", "resolve_mask", "smooth_displacement",
           "capsule_distance", "capsule_field", "capsule_field_culled", "capsule_field_numba", "smooth_union"]

"""Clothes stay outside the body: capsule rig, capsule field, push-out (capsule and exact-skin)."""

from .capsules import CapsuleRig, transform_capsules, validate_capsules
from .exact import push_out_exact, signed_body_distance
from .fitting import fit_capsules, fit_report
from .pushout import (PushParams, push_amount, push_out_capsules, push_out_reference, resolve_mask,
                      smooth_displacement, vertex_normals)
from .sdf import capsule_distance, capsule_field, capsule_field_culled, capsule_field_numba, smooth_union

__all__ = ["CapsuleRig", "transform_capsules", "validate_capsules", "push_out_exact", "signed_body_distance",
           "fit_capsules", "fit_report", "PushParams", "push_amount", "push_out_capsules", "push_out_reference",
           "resolve_mask", "smooth_displacement", "vertex_normals", "capsule_distance", "capsule_field",
           "capsule_field_culled", "capsule_field_numba", "smooth_union"]

"""NumPy references for the parts of the shader core whose specification lives here.

Every other core function is specified by its own package and the conformance tests compare the
core with those directly: the capsule field (:mod:`kisekae.fit.sdf`), capsule and skin-bound push-out
and the runtime chain of both (:mod:`kisekae.fit.pushout`, :mod:`kisekae.fit.bound`), the tight look
(:func:`kisekae.fit.pressure.tight_look`, the reference of record), the tension mapping
(:mod:`kisekae.tension.blender`), wrinkle weights (:mod:`kisekae.tension.wrinkle`) and the wound
(:mod:`kisekae.wound.runtime`, :func:`kisekae.wound.decode`).

Specified here: :func:`blend_wrinkle_normals`, the blend of tangent-space wrinkle normals
(``KisekaeBlendWrinkleNormals``), which no other package defines.
"""

from __future__ import annotations

import numpy as np

from ..errors import KisekaeError
from ..validate import as_points

#: Floor of a tangent-space normal's z in :func:`blend_wrinkle_normals` (1/64; keeps slopes finite).
MIN_NORMAL_Z = 1.0 / 64.0


def tight_look(normals, ao, sss, dent_dir, tightness, pressure, *, normal_strength=0.15, ao_strength=0.3,
               sss_strength=0.25):
    """The skin's tight look with explicit strengths; delegates to :func:`kisekae.fit.pressure.tight_look`.

    Kept for callers of the earlier signature. ``tightness`` is clamped to 0..1 first (the core clamps
    ``max(tightness, pressure)``). Returns float64 ``(normals (N, 3), ao (N,), sss (N,))``.
    """
    from ..fit.pressure import tight_look as fit_tight_look

    t = np.clip(np.asarray(tightness, np.float64), 0.0, 1.0)
    strengths = {"normal_strength": normal_strength, "ao_strength": ao_strength, "sss_strength": sss_strength}
    return fit_tight_look(normals, ao, sss, pressure, strengths, tightness=t, dent_dir=dent_dir)


def normal_slope(normals, min_z: float = MIN_NORMAL_Z) -> np.ndarray:
    """Slope ``n.xy / max(n.z, min_z)`` of tangent-space normals ``(..., 3)`` (the negated height gradient)."""
    n = np.asarray(normals, np.float64)
    return n[..., :2] / np.maximum(n[..., 2:3], min_z)


def blend_wrinkle_normals(base, normals, weights, *, min_z: float = MIN_NORMAL_Z) -> np.ndarray:
    """Blend tangent-space wrinkle normals onto a base normal by weights (reference of ``KisekaeBlendWrinkleNormals``).

    Method: a normal map encodes the slope of a height field, ``n ∝ (-dh/dx, -dh/dy, 1)``. Wrinkle
    maps are meant to add their relief to the base surface in proportion to their weight, and
    heights add linearly, so slopes do too:

    ``N = normalize([slope(base) + sum_m w_m slope(n_m), 1])`` with ``slope(n) = n.xy / max(n.z, min_z)``.

    Unlike a linear blend of the normals (which flattens the relief where maps overlap and depends on
    how the vectors are scaled) this keeps each map's full relief at weight 1, and weight 0 leaves
    the base unchanged.

    Parameters
    ----------
    base : (N, 3) array_like
        Base tangent-space normals (decoded from the map, +Z out of the surface).
    normals : (N, M, 3) array_like
        Decoded wrinkle normals.
    weights : (N, M) array_like
        Blend weights (:func:`kisekae.tension.wrinkle_weights`).
    min_z : float
        Floor of z (default 1/64): a grazing normal counts as a slope of at most 64.

    Returns
    -------
    (N, 3) float64 unit normals
    """
    b = as_points(base, "base")
    nm = np.asarray(normals, np.float64)
    w = np.asarray(weights, np.float64)
    if nm.ndim != 3 or nm.shape[0] != len(b) or nm.shape[2] != 3:
        raise KisekaeError(f"expected shape ({len(b)}, M, 3), got {nm.shape}", "normals")
    if w.shape != nm.shape[:2]:
        raise KisekaeError(f"expected shape {nm.shape[:2]}, got {w.shape}", "weights")
    if not (np.all(np.isfinite(nm)) and np.all(np.isfinite(w))):
        raise KisekaeError("non-finite value (NaN or inf)", "normals")
    slope = normal_slope(b, min_z) + np.einsum("nm,nmk->nk", w, normal_slope(nm, min_z))
    out = np.column_stack([slope, np.ones(len(b))])
    return out / np.linalg.norm(out, axis=1, keepdims=True)

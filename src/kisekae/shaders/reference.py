"""NumPy references for the parts of the shader core whose specification lives here.

The capsule field, push-out, tension mapping and wound functions are specified by their own
packages (:mod:`kisekae.fit.sdf`, :mod:`kisekae.fit.pushout`, :mod:`kisekae.tension.blender`,
:mod:`kisekae.wound.runtime`) and the conformance tests compare the core with those. The skin's tight
look is specified here.
"""

from __future__ import annotations

import numpy as np

from ..errors import KisekaeError

#: Defaults of :func:`tight_look` (dimensionless, 0..1).
TIGHT_LOOK_DEFAULTS = {"normal_strength": 0.15, "ao_strength": 0.3, "sss_strength": 0.25}


def tight_look(normals, ao, sss, dent_dir, tightness, pressure, *, normal_strength=0.15, ao_strength=0.3,
               sss_strength=0.25):
    """The skin's tight look where a garment presses on it (reference of ``KisekaeTightLook``).

    Parameters
    ----------
    normals : (N, 3) array_like
        Unit shading normals.
    ao, sss : (N,) array_like
        Ambient-occlusion visibility (1 = unoccluded) and subsurface-scattering amount, 0..1.
    dent_dir : (N, 3) array_like
        Direction up the dent's slope (for example the pressure gradient); only its tangential part
        is used; zero gives no tilt.
    tightness, pressure : (N,) array_like
        Garment tightness mask and body pressure map, 0..1.
    normal_strength, ao_strength, sss_strength : float
        Effect at full tightness, 0..1 (defaults 0.15, 0.3, 0.25).

    Returns
    -------
    normals : (N, 3) float64
        ``normalize(N - normal_strength k (D - (D.N) N))`` with ``k = clip(max(tightness, pressure), 0, 1)``.
    ao : (N,) float64
        ``clip(ao (1 - ao_strength k), 0, 1)``.
    sss : (N,) float64
        ``clip(sss (1 - sss_strength k), 0, 1)``.
    """
    n = np.asarray(normals, np.float64)
    dd = np.asarray(dent_dir, np.float64)
    if n.ndim != 2 or n.shape[1] != 3 or dd.shape != n.shape:
        raise KisekaeError(f"normals and dent_dir must both have shape (N, 3), got {n.shape} and {dd.shape}", "normals")
    k = np.clip(np.maximum(np.asarray(tightness, np.float64), np.asarray(pressure, np.float64)), 0.0, 1.0)
    tangential = dd - np.sum(dd * n, axis=1, keepdims=True) * n
    m = n - (normal_strength * k)[:, None] * tangential
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    ao2 = np.clip(np.asarray(ao, np.float64) * (1.0 - ao_strength * k), 0.0, 1.0)
    sss2 = np.clip(np.asarray(sss, np.float64) * (1.0 - sss_strength * k), 0.0, 1.0)
    return m, ao2, sss2

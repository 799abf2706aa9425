"""Body pressure from garments, and the skin's tight look it drives.

The seed note's phase 3 asks for a "pressure mask": where a garment presses on the skin, the
skin should look pressed (a slight dent in the shading, more occlusion, less subsurface glow).
This module computes that mask per body vertex from what the push-out actually did, and gives
the NumPy reference of the shading change.

Pressure (per body vertex, 0..1)
--------------------------------
1. Each garment vertex ``i`` gets a pressure value ``v_i`` in 0..1, the larger of

   * the *push* term ``q_i = clip(|after_i - before_i| / full_push, 0, 1)``: how far the push-out
     had to move the vertex, relative to the push that counts as full pressure
     (default 5 mm);
   * the *static* term ``s_i = tightness_i * (1 - smoothstep(0, contact, gap_i))``: tight fabric
     that rests on the skin presses even when nothing had to move. ``gap_i`` is the height of the
     (pushed) garment vertex above the tangent plane of its nearest body vertex,
     ``(after_i - b_j) . n_j``, so fabric touching the skin (``gap <= 0``) transfers its full
     tightness and fabric ``contact`` (default 3 mm) or more away transfers none.

2. The values are splatted onto body vertices with a smooth compact kernel of radius ``R``
   (default 2 cm) over the distance ``r_ij`` between body vertex ``j`` and garment vertex ``i``,
   ``K(r) = (1 - (r/R)^2)^3``:

   ``P_j = F_j * sum_i K(r_ij) v_i / sum_i K(r_ij)``, with the coverage factor
   ``F_j = 1 - smoothstep(R/2, R, min_i r_ij)``.

   Garment vertices lying more than ``contact`` behind the body vertex's tangent plane (fabric on
   another body part, e.g. the other thigh) are ignored. The kernel-weighted mean makes ``P``
   independent of the garment's vertex density (a uniform push gives exactly the same pressure
   everywhere under the garment), and ``F`` fades it to zero where the garment ends, so ``P`` is
   continuous in the positions.

Tight look (reference of the skin shader's ``KisekaeTightLook``)
----------------------------------------------------------------
The seed's sketch bends the normal with ``normalize(lerp(n, -n, 0.15 k))``. That vector is
``(1 - 0.3 k) n``, which normalises back to ``n`` for every ``k < 3.3``, so literally it changes
nothing. A dent changes the shading normal by tilting it along the dent's slope: for a skin
height ``h = -c P`` the normal is ``normalize(n + c grad P)``. So the tilt uses a per-vertex
direction ``D`` pointing up the dent's slope (``-grad P`` scaled by the splat radius, see
:func:`dent_directions`), and with ``k = clip(max(tightness, pressure), 0, 1)``:

* ``n' = normalize(n - normal_strength * k * (D - (D . n) n))``;
* ``ao' = clip(ao * (1 - ao_strength * k), 0, 1)`` (``ao`` is visibility, 1 = unoccluded, so
  "more AO" darkens);
* ``sss' = clip(sss * (1 - sss_strength * k), 0, 1)``.

This is the same rule as :func:`kisekae.shaders.reference.tight_look`, which the HLSL core
already implements; the presets below only choose the three strengths.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from ..errors import KisekaeError
from ..validate import as_faces, as_per_vertex, as_points, positive

#: Tight-look strengths (normal tilt, AO darkening, SSS reduction) at full pressure, 0..1.
#: ``seed`` is the design note's numbers. ``anime``: stronger normal tilt and shading contrast,
#: low SSS. ``realistic``: a restrained normal tilt, small AO, the dent carried mostly by a
#: drop in subsurface scattering (pressed skin blanches).
PRESETS = {
    "seed": {"normal_strength": 0.15, "ao_strength": 0.30, "sss_strength": 0.25},
    "anime": {"normal_strength": 0.35, "ao_strength": 0.45, "sss_strength": 0.40},
    "realistic": {"normal_strength": 0.08, "ao_strength": 0.12, "sss_strength": 0.30},
}

#: Defaults (metres).
FULL_PUSH = 0.005
CONTACT = 0.003
RADIUS = 0.02


def _smoothstep(e0, e1, x):
    t = np.clip((np.asarray(x, dtype=np.float64) - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def _unit_rows(a, name):
    ln = np.linalg.norm(a, axis=1)
    if np.any(ln < 1e-6):
        raise KisekaeError(f"zero-length normal at row {int(np.argmax(ln < 1e-6))}", name)
    return a / ln[:, None]


def _mask01(m, n, name):
    if m is None:
        return np.zeros(n)
    if np.isscalar(m):
        v = float(m)
        if not np.isfinite(v) or v < 0 or v > 1:
            raise KisekaeError(f"must be in [0, 1], got {m!r}", name)
        return np.full(n, v)
    a = as_per_vertex(m, n, name)
    if a.ndim != 1:
        raise KisekaeError(f"expected shape ({n},), got {a.shape}", name)
    if a.size and (a.min() < 0 or a.max() > 1):
        raise KisekaeError(f"values must be in [0, 1], found {a.min():g}..{a.max():g}", name)
    return a


def garment_pressure_values(body_vertices, body_normals, garment_before, garment_after, tightness=None, *,
                            full_push: float = FULL_PUSH, contact: float = CONTACT):
    """Per-garment-vertex pressure ``v_i`` (step 1 of the module docstring).

    Parameters
    ----------
    body_vertices : array_like (Nb, 3)
        Posed body vertices, metres.
    body_normals : array_like (Nb, 3)
        Their outward normals (normalised here; zero rows are an error).
    garment_before, garment_after : array_like (Ng, 3)
        Posed garment vertices before and after the push-out, metres.
    tightness : None, float or array_like (Ng,)
        Garment tightness mask, 0..1 (default 0).
    full_push : float
        Push (metres) that counts as full pressure; default 5 mm.
    contact : float
        Gap (metres) at which resting fabric stops pressing; default 3 mm.

    Returns
    -------
    values : ndarray float64 (Ng,)
        ``max(push term, static term)``, 0..1.
    gap : ndarray float64 (Ng,)
        Height of each pushed garment vertex above its nearest body vertex's tangent plane, metres.
    """
    b = as_points(body_vertices, "body_vertices")
    nb = _unit_rows(as_points(body_normals, "body_normals"), "body_normals")
    if nb.shape != b.shape:
        raise KisekaeError(f"expected {len(b)} normals (one per body vertex), got {len(nb)}", "body_normals")
    g0 = as_points(garment_before, "garment_before")
    g1 = as_points(garment_after, "garment_after")
    if g0.shape != g1.shape:
        raise KisekaeError(f"garment_after has {len(g1)} vertices, garment_before has {len(g0)}", "garment_after")
    if len(b) == 0:
        raise KisekaeError("the body has no vertices", "body_vertices")
    full_push = positive(full_push, "full_push")
    contact = positive(contact, "contact")
    t = _mask01(tightness, len(g0), "tightness")
    push = np.linalg.norm(g1 - g0, axis=1)
    q = np.clip(push / full_push, 0.0, 1.0)
    _, j = cKDTree(b).query(g1)
    gap = np.einsum("ij,ij->i", g1 - b[j], nb[j])
    s = t * (1.0 - _smoothstep(0.0, contact, gap))
    return np.maximum(q, s), gap


def splat_to_body(body_vertices, body_normals, garment_vertices, values, *, radius: float = RADIUS,
                  contact: float = CONTACT):
    """Splat per-garment-vertex values onto body vertices (step 2 of the module docstring).

    Parameters
    ----------
    body_vertices, body_normals : array_like (Nb, 3)
        Posed body, metres, outward normals.
    garment_vertices : array_like (Ng, 3)
        Garment vertices (after the push), metres.
    values : array_like (Ng,)
        Values to splat, 0..1.
    radius : float
        Kernel radius ``R``, metres (default 2 cm).
    contact : float
        Garment vertices more than this far behind a body vertex's tangent plane are ignored
        for that body vertex, metres.

    Returns
    -------
    ndarray float64 (Nb,)
        Kernel-weighted mean times the coverage factor; 0 where no garment vertex is within
        ``radius``.
    """
    b = as_points(body_vertices, "body_vertices")
    nb = _unit_rows(as_points(body_normals, "body_normals"), "body_normals")
    if nb.shape != b.shape:
        raise KisekaeError(f"expected {len(b)} normals (one per body vertex), got {len(nb)}", "body_normals")
    g = as_points(garment_vertices, "garment_vertices")
    v = as_per_vertex(values, len(g), "values")
    R = positive(radius, "radius")
    contact = positive(contact, "contact")
    out = np.zeros(len(b))
    if len(g) == 0 or len(b) == 0:
        return out
    pairs = cKDTree(b).sparse_distance_matrix(cKDTree(g), R, output_type="ndarray")
    if pairs.size == 0:
        return out
    bj = pairs["i"].astype(np.int64)
    gi = pairs["j"].astype(np.int64)
    r = pairs["v"]
    keep = np.einsum("ij,ij->i", g[gi] - b[bj], nb[bj]) >= -contact
    bj, gi, r = bj[keep], gi[keep], r[keep]
    if bj.size == 0:
        return out
    k = (1.0 - (r / R) ** 2) ** 3
    wsum = np.bincount(bj, weights=k, minlength=len(b))
    vsum = np.bincount(bj, weights=k * v[gi], minlength=len(b))
    near = np.full(len(b), np.inf)
    np.minimum.at(near, bj, r)
    has = wsum > 0
    out[has] = vsum[has] / wsum[has]
    out *= 1.0 - _smoothstep(0.5 * R, R, near)
    return np.clip(out, 0.0, 1.0)


def pressure(body_vertices, body_normals, garment_before, garment_after, tightness=None, *,
             full_push: float = FULL_PUSH, contact: float = CONTACT, radius: float = RADIUS):
    """Per-body-vertex pressure in 0..1 from a garment's push-out and tightness.

    Parameters
    ----------
    body_vertices : array_like (Nb, 3)
        Posed body vertices, metres.
    body_normals : array_like (Nb, 3)
        Outward body normals.
    garment_before : array_like (Ng, 3)
        Posed garment vertices before the push-out, metres.
    garment_after : array_like (Ng, 3)
        The same vertices after the push-out, metres.
    tightness : None, float or array_like (Ng,)
        Garment tightness mask 0..1 (default 0: only the push counts).
    full_push : float
        Push that counts as full pressure, metres (default 0.005).
    contact : float
        Gap at which resting tight fabric stops pressing, metres (default 0.003).
    radius : float
        Splat kernel radius, metres (default 0.02).

    Returns
    -------
    ndarray float64 (Nb,)
        Pressure, 0..1 (see the module docstring for the formula).

    Notes
    -----
    Several garments: take ``np.maximum`` of their pressures.
    """
    v, _ = garment_pressure_values(body_vertices, body_normals, garment_before, garment_after, tightness,
                                   full_push=full_push, contact=contact)
    return splat_to_body(body_vertices, body_normals, garment_after, v, radius=radius, contact=contact)


def static_pressure(body_vertices, body_normals, garment_vertices, tightness, *, contact: float = CONTACT,
                    radius: float = RADIUS):
    """Pressure from tightness alone (the seed's phase-1 "static" tight look), 0..1 per body vertex.

    Same as :func:`pressure` with nothing pushed: fabric within ``contact`` of the skin transfers
    its tightness. Parameters as :func:`pressure`; ``garment_vertices`` (Ng, 3) are the posed
    (or rest) garment vertices, metres.
    """
    return pressure(body_vertices, body_normals, garment_vertices, garment_vertices, tightness,
                    contact=contact, radius=radius)


def dent_directions(vertices, faces, pressure_values, *, scale: float = RADIUS):
    """Direction up the dent's slope per vertex: ``-scale * grad P`` (tangential), length <= 1.

    Parameters
    ----------
    vertices : array_like (N, 3)
        Body vertices, metres.
    faces : array_like int (F, 3)
        Body triangles.
    pressure_values : array_like (N,)
        Pressure per vertex, 0..1.
    scale : float
        Length (metres) that turns the gradient (1/m) into a dimensionless tilt; default the
        splat radius, so a dent that rises from 0 to 1 over one radius gives length about 1.

    Returns
    -------
    ndarray float64 (N, 3)
        The gradient of the piecewise-linear interpolant of ``P`` on each triangle, averaged over
        a vertex's triangles weighted by area, negated, times ``scale``, clipped to length 1.
    """
    v = as_points(vertices, "vertices")
    f = as_faces(faces, len(v), "faces").astype(np.int64)
    p = as_per_vertex(pressure_values, len(v), "pressure")
    scale = positive(scale, "scale")
    x0, x1, x2 = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    nrm = np.cross(x1 - x0, x2 - x0)  # length = 2 * area
    a2 = np.linalg.norm(nrm, axis=1)
    ok = a2 > 1e-18
    nh = np.zeros_like(nrm)
    nh[ok] = nrm[ok] / a2[ok, None]
    # grad of the linear interpolant: sum_i P_i (n x e_i) / (2A), e_i the edge opposite corner i (ccw)
    g = (p[f[:, 0], None] * np.cross(nh, x2 - x1) + p[f[:, 1], None] * np.cross(nh, x0 - x2)
         + p[f[:, 2], None] * np.cross(nh, x1 - x0))
    g[ok] /= a2[ok, None]
    g[~ok] = 0.0
    acc = np.zeros_like(v)
    area = np.zeros(len(v))
    for c in range(3):
        np.add.at(acc, f[:, c], g * a2[:, None])
        np.add.at(area, f[:, c], a2)
    has = area > 0
    acc[has] /= area[has, None]
    d = -scale * acc
    ln = np.linalg.norm(d, axis=1)
    big = ln > 1.0
    d[big] /= ln[big, None]
    return d


def tight_look(normals, ao, sss, pressure_values, preset: str = "seed", *, tightness=None, dent_dir=None):
    """The skin's pressed look (NumPy reference; the formula is in the module docstring).

    Parameters
    ----------
    normals : array_like (N, 3)
        Unit shading normals.
    ao : array_like (N,)
        Ambient-occlusion visibility, 0..1 (1 = unoccluded).
    sss : array_like (N,)
        Subsurface-scattering amount, 0..1.
    pressure_values : array_like (N,)
        Body pressure, 0..1 (:func:`pressure`).
    preset : {"seed", "anime", "realistic"} or dict
        Strengths (see :data:`PRESETS`); a dict gives ``normal_strength``, ``ao_strength`` and
        ``sss_strength`` (each 0..1) directly.
    tightness : None or array_like (N,)
        Optional static tightness already mapped onto the skin; the effect uses
        ``k = max(tightness, pressure)``.
    dent_dir : None or array_like (N, 3)
        Direction up the dent's slope (:func:`dent_directions`); ``None`` means no tilt.

    Returns
    -------
    normals : ndarray float64 (N, 3)
    ao : ndarray float64 (N,)
    sss : ndarray float64 (N,)
    """
    if isinstance(preset, str):
        if preset not in PRESETS:
            raise KisekaeError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}", "preset")
        st = PRESETS[preset]
    elif isinstance(preset, dict):
        st = {}
        for key in ("normal_strength", "ao_strength", "sss_strength"):
            if key not in preset:
                raise KisekaeError(f"missing {key!r}", "preset")
            val = float(preset[key])
            if not np.isfinite(val) or val < 0 or val > 1:
                raise KisekaeError(f"{key} must be in [0, 1], got {preset[key]!r}", "preset")
            st[key] = val
    else:
        raise KisekaeError("must be a preset name or a dict of strengths", "preset")
    n = _unit_rows(as_points(normals, "normals"), "normals")
    count = len(n)
    ao = as_per_vertex(ao, count, "ao")
    sss = as_per_vertex(sss, count, "sss")
    k = np.clip(as_per_vertex(pressure_values, count, "pressure"), 0.0, 1.0)
    if tightness is not None:
        k = np.maximum(k, _mask01(tightness, count, "tightness"))
    if dent_dir is None:
        tilted = n
    else:
        d = as_points(dent_dir, "dent_dir")
        if d.shape != n.shape:
            raise KisekaeError(f"expected shape {n.shape}, got {d.shape}", "dent_dir")
        tangential = d - np.einsum("ij,ij->i", d, n)[:, None] * n
        tilted = n - (st["normal_strength"] * k)[:, None] * tangential
        tilted = tilted / np.linalg.norm(tilted, axis=1, keepdims=True)
    ao2 = np.clip(ao * (1.0 - st["ao_strength"] * k), 0.0, 1.0)
    sss2 = np.clip(sss * (1.0 - st["sss_strength"] * k), 0.0, 1.0)
    return tilted, ao2, sss2


def avatar_pressure(avatar, pose, after: dict, tightness: dict | None = None, **kwargs):
    """Body pressure of an avatar in a pose from fixed garments (the max over garments).

    Parameters
    ----------
    avatar : kisekae.avatar.Avatar
    pose : kisekae.avatar.Pose
    after : dict str -> array_like (Ng, 3)
        Pushed positions of each garment (by garment name) in ``pose``, metres.
    tightness : dict str -> float or (Ng,), optional
        Tightness mask per garment (default 0).
    **kwargs
        ``full_push``, ``contact``, ``radius`` as :func:`pressure`.

    Returns
    -------
    ndarray float64 (Nb,)
        Pressure per body vertex, 0..1.
    """
    from ..geom.normals import vertex_normals as _vn

    m = pose.skinning_matrices(avatar.skeleton)
    body = avatar.body.posed(m)
    normals = _vn(body, avatar.body.mesh.faces, avatar.body.mesh.weld).astype(np.float64)
    out = np.zeros(len(body))
    for name, pos in after.items():
        before = avatar.part(name).posed(m)
        t = None if tightness is None else tightness.get(name)
        out = np.maximum(out, pressure(body, normals, before, pos, t, **kwargs))
    return out

"""Strain-mode tension from per-triangle deformation gradients.

The edge mean of the node group is blind to area-preserving shear: scale a quad grid by 1.1 in x
and 0.9 in y and every interior vertex keeps its mean edge length (T = 1). Strain mode looks at
each triangle's deformation gradient F (3x2, from the rest triangle's tangent plane to the
deformed triangle) instead. Its singular values are the principal stretches
``lambda_min <= lambda_max`` (1 = unchanged, < 1 compressed), their product is the area ratio,
and the right singular vector of ``lambda_min`` mapped through F is the direction of strongest
compression in the deformed tangent plane (where wrinkles run across).

Per vertex, values are rest-area weighted means over the incident triangles (welded by position,
so seams do not show). The direction is the dominant eigenvector of the area- and anisotropy-
weighted sum of ``d d^T`` (directions have no sign, so they are averaged as tensors).

Compress and stretch reuse the node group's mapping with ``T = 1 / lambda_min`` for compress and
``T = 1 / lambda_max`` for stretch, so a uniform scale gives exactly the edge mode's answer.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import KisekaeError
from ..geom.weld import weld_map
from ..validate import as_faces, as_points
from .blender import map_params, map_ratio_params


class FaceStrain(NamedTuple):
    """Per-triangle strain (float64, one row per triangle).

    Attributes
    ----------
    lambda_min, lambda_max : (F,)
        Principal stretches (deformed length / rest length along the principal directions).
    area_ratio : (F,)
        Deformed area / rest area (0 for degenerate rest triangles).
    direction : (F, 3)
        Unit direction of strongest compression in the deformed triangle's plane; zero where the
        strain is isotropic (no preferred direction) or the triangle is degenerate.
    rest_area : (F,)
        Rest area in square metres.
    """

    lambda_min: np.ndarray
    lambda_max: np.ndarray
    area_ratio: np.ndarray
    direction: np.ndarray
    rest_area: np.ndarray


class StrainResult(NamedTuple):
    """Per-vertex strain tension (float32, one row per vertex).

    Attributes
    ----------
    lambda_min, lambda_max : (N,)
        Area-weighted principal stretches (1 = unchanged).
    area_ratio : (N,)
        Area-weighted deformed / rest area.
    direction : (N, 3)
        Unit direction of strongest compression (deformed space), zero where undefined.
    compress, stretch : (N,)
        The node group's mapping of ``1 / lambda_min`` and ``1 / lambda_max``, in [0, 1].
    color : (N, 3)
        RGB = (compress, stretch, 0).
    """

    lambda_min: np.ndarray
    lambda_max: np.ndarray
    area_ratio: np.ndarray
    direction: np.ndarray
    compress: np.ndarray
    stretch: np.ndarray
    color: np.ndarray


def _triangles(faces, n):
    arr = np.asarray(faces)
    if arr.ndim != 2 or arr.shape[1] not in (3, 4):
        raise KisekaeError(f"expected shape (F, 3) triangles or (F, 4) quads, got {arr.shape}", "faces")
    f = as_faces(arr, n, "faces", corners=arr.shape[1])
    if f.shape[1] == 4:
        f = np.concatenate([f[:, [0, 1, 2]], f[:, [0, 2, 3]]])
    return f


def face_strain(rest, deformed, triangles) -> FaceStrain:
    """Principal stretches, area ratio and compression direction of each triangle.

    Parameters
    ----------
    rest, deformed : (N, 3) float arrays
        Positions in metres, same vertex order.
    triangles : (F, 3) int array

    Returns
    -------
    FaceStrain
    """
    X = as_points(rest, "rest")
    Y = as_points(deformed, "deformed")
    if len(X) != len(Y):
        raise KisekaeError(f"has {len(Y)} vertices but rest has {len(X)}", "deformed")
    t = _triangles(triangles, len(X))
    e1, e2 = X[t[:, 1]] - X[t[:, 0]], X[t[:, 2]] - X[t[:, 0]]
    d1, d2 = Y[t[:, 1]] - Y[t[:, 0]], Y[t[:, 2]] - Y[t[:, 0]]
    nrm = np.cross(e1, e2)
    a2 = np.linalg.norm(nrm, axis=1)
    l1 = np.linalg.norm(e1, axis=1)
    ok = (a2 > 1e-14 * np.maximum(l1, 1e-30) ** 2) & (l1 > 0)
    safe_l1 = np.where(ok, l1, 1.0)
    u = e1 / safe_l1[:, None]
    m00 = l1
    m01 = np.einsum("ij,ij->i", e2, u)
    m11 = np.where(ok, a2, 1.0) / safe_l1  # height of the triangle over e1
    # F = [d1, d2] @ inv([[m00, m01], [0, m11]])
    f0 = d1 / np.where(ok, m00, 1.0)[:, None]
    f1 = (d2 - f0 * m01[:, None]) / np.where(ok, m11, 1.0)[:, None]
    c00 = np.einsum("ij,ij->i", f0, f0)
    c01 = np.einsum("ij,ij->i", f0, f1)
    c11 = np.einsum("ij,ij->i", f1, f1)
    half_tr = 0.5 * (c00 + c11)
    disc = np.sqrt(np.maximum((0.5 * (c00 - c11)) ** 2 + c01**2, 0.0))
    mu_min = np.maximum(half_tr - disc, 0.0)
    mu_max = half_tr + disc
    # eigenvector of C for mu_min (two algebraically equal forms; take the better conditioned)
    va = np.stack([c01, mu_min - c00], axis=1)
    vb = np.stack([mu_min - c11, c01], axis=1)
    v = np.where((np.linalg.norm(va, axis=1) >= np.linalg.norm(vb, axis=1))[:, None], va, vb)
    dvec = f0 * v[:, :1] + f1 * v[:, 1:]
    dn = np.linalg.norm(dvec, axis=1)
    aniso = disc > 1e-9 * np.maximum(half_tr, 1e-30)
    good = ok & aniso & (dn > 0)
    direction = np.where(good[:, None], dvec / np.where(good, dn, 1.0)[:, None], 0.0)
    lam_min = np.where(ok, np.sqrt(mu_min), 1.0)
    lam_max = np.where(ok, np.sqrt(mu_max), 1.0)
    area_ratio = np.where(ok, np.linalg.norm(np.cross(d1, d2), axis=1) / np.where(ok, a2, 1.0), 0.0)
    return FaceStrain(lam_min, lam_max, area_ratio, direction, np.where(ok, 0.5 * a2, 0.0))


def strain_tension(
    rest,
    deformed,
    faces,
    *,
    falloff: float = 1.0,
    stretch_area: float = 1.0,
    compress_area: float = 1.0,
    weight_limit: float = 1.0,
    weld=True,
) -> StrainResult:
    """Per-vertex strain tension (sees shear that the edge mean misses).

    Parameters
    ----------
    rest, deformed : (N, 3) float arrays
        Positions in metres.
    faces : (F, 3) or (F, 4) int array
        Triangles, or quads (split along their 0-2 diagonal).
    falloff, stretch_area, compress_area, weight_limit : float
        As in :func:`kisekae.tension.tension_map`.
    weld : bool or (N,) int array, default True
        Average over triangles welded by rest position (or with this weld map).

    Returns
    -------
    StrainResult
        Vertices without a non-degenerate incident triangle read lambda = 1 (unstrained).
    """
    X = as_points(rest, "rest")
    Y = as_points(deformed, "deformed")
    if len(X) != len(Y):
        raise KisekaeError(f"has {len(Y)} vertices but rest has {len(X)}", "deformed")
    p = map_params(falloff, stretch_area, compress_area, weight_limit)
    n = len(X)
    t = _triangles(faces, n)
    fs = face_strain(X, Y, t)
    if weld is True:
        w = weld_map(X)
    elif weld is False or weld is None:
        w = np.arange(n)
    else:
        w = np.asarray(weld, dtype=np.int64)
        if w.shape != (n,) or (n and (w.min() < 0 or w.max() >= n)):
            raise KisekaeError(f"expected ({n},) indices in range", "weld")
    corners = w[t].ravel()
    wt = np.repeat(fs.rest_area / 3.0, 3)
    tot = np.bincount(corners, wt, minlength=n)
    has = tot > 0
    denom = np.where(has, tot, 1.0)

    def avg(x):
        return np.where(has, np.bincount(corners, np.repeat(x, 3) * wt, minlength=n) / denom, 1.0)

    lam_min = avg(fs.lambda_min)[w]
    lam_max = avg(fs.lambda_max)[w]
    area = avg(fs.area_ratio)[w]
    # direction: dominant eigenvector of sum of weight * anisotropy * d d^T
    k = (fs.rest_area * (fs.lambda_max - fs.lambda_min))[:, None, None] * (
        fs.direction[:, :, None] * fs.direction[:, None, :]
    )
    M = np.zeros((n, 3, 3))
    np.add.at(M, w[t[:, 0]], k)
    np.add.at(M, w[t[:, 1]], k)
    np.add.at(M, w[t[:, 2]], k)
    vals, vecs = np.linalg.eigh(M)
    d = vecs[:, :, 2]
    big = np.argmax(np.abs(d), axis=1)
    d *= np.sign(d[np.arange(n), big])[:, None]  # deterministic sign
    d[vals[:, 2] <= 1e-12 * np.maximum(tot, 1e-30)] = 0.0
    d = d[w]
    with np.errstate(divide="ignore"):
        t_c = np.where(lam_min > 0, 1.0 / np.maximum(lam_min, 1e-300), np.inf)
        t_s = 1.0 / lam_max
    comp = map_ratio_params(t_c, p).compress
    stre = map_ratio_params(t_s, p).stretch
    color = np.stack([comp, stre, np.zeros_like(comp)], axis=1)
    f32 = np.float32
    return StrainResult(lam_min.astype(f32), lam_max.astype(f32), area.astype(f32), d.astype(f32), comp, stre, color)

"""Analytic test shapes and an independent CPU ray caster shared by the render tests (no tests here)."""

from __future__ import annotations

import numpy as np


def sphere(center=(0.0, 0.0, 0.0), radius=0.5, nu=32, nv=16):
    """UV sphere with outward counter-clockwise triangles: (N,3) float32, (F,3) int32."""
    u = np.linspace(0.0, 2.0 * np.pi, nu, endpoint=False)
    v = np.linspace(0.0, np.pi, nv + 1)
    vv, uu = np.meshgrid(v, u, indexing="ij")
    p = np.stack([np.sin(vv) * np.sin(uu), np.cos(vv), np.sin(vv) * np.cos(uu)], -1).reshape(-1, 3)
    p = p * radius + np.asarray(center, dtype=np.float64)
    faces = []
    for i in range(nv):
        for j in range(nu):
            a, b = i * nu + j, i * nu + (j + 1) % nu
            c, d = (i + 1) * nu + j, (i + 1) * nu + (j + 1) % nu
            faces += [[a, c, b], [b, c, d]]
    f = np.array(faces, np.int32)
    return p.astype(np.float32), _drop_degenerate(p, f)


def tube(radius=0.3, y0=-0.5, y1=0.5, nu=48, nv=8, bulge=0.0):
    """Open cylinder about +Y (no caps), outward triangles. ``bulge`` adds radius in the middle (metres)."""
    u = np.linspace(0.0, 2.0 * np.pi, nu, endpoint=False)
    y = np.linspace(y0, y1, nv + 1)
    yy, uu = np.meshgrid(y, u, indexing="ij")
    t = (yy - y0) / (y1 - y0)
    r = radius + bulge * np.sin(np.pi * t)
    p = np.stack([r * np.sin(uu), yy, r * np.cos(uu)], -1).reshape(-1, 3)
    faces = []
    for i in range(nv):
        for j in range(nu):
            a, b = i * nu + j, i * nu + (j + 1) % nu
            c, d = (i + 1) * nu + j, (i + 1) * nu + (j + 1) % nu
            faces += [[a, b, c], [b, d, c]]
    return p.astype(np.float32), np.array(faces, np.int32)


def _drop_degenerate(p, f):
    n = np.cross(p[f[:, 1]] - p[f[:, 0]], p[f[:, 2]] - p[f[:, 0]])
    return f[np.linalg.norm(n, axis=1) > 1e-12]


def outward_fraction(p, f, center):
    """Fraction of faces whose normal points away from ``center`` (orientation check)."""
    n = np.cross(p[f[:, 1]] - p[f[:, 0]], p[f[:, 2]] - p[f[:, 0]])
    c = p[f].mean(axis=1) - np.asarray(center)
    return float(np.mean(np.einsum("ij,ij->i", n, c) > 0))


def pixel_rays(camera, width, height):
    """World-space ray origins (3,) and unit directions (H,W,3) through pixel centres, row 0 at top."""
    r, u, f = camera.basis()
    t = np.tan(np.radians(camera.fov_y) / 2.0)
    x = (2.0 * (np.arange(width) + 0.5) / width - 1.0) * t * width / height
    y = (1.0 - 2.0 * (np.arange(height) + 0.5) / height) * t
    d = f[None, None] + x[None, :, None] * r[None, None] + y[:, None, None] * u[None, None]
    return np.asarray(camera.eye, dtype=np.float64), d  # not normalised: t along it = linear view depth


def raycast(camera, width, height, p, f):
    """Nearest hit per pixel (Moller-Trumbore): (linear depth (H,W) inf on miss, front-facing (H,W) bool)."""
    o, d = pixel_rays(camera, width, height)
    d = d.reshape(-1, 3)
    p = np.asarray(p, np.float64)
    v0, v1, v2 = p[f[:, 0]], p[f[:, 1]], p[f[:, 2]]
    e1, e2 = v1 - v0, v2 - v0
    nrm = np.cross(e1, e2)
    best = np.full(len(d), np.inf)
    front = np.zeros(len(d), bool)
    for s in range(0, len(d), 512):
        dd = d[s:s + 512]
        pv = np.cross(dd[:, None, :], e2[None])
        det = np.einsum("fk,rfk->rf", e1, pv)
        ok = np.abs(det) > 1e-14
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        tv = o - v0
        uu = np.einsum("fk,rfk->rf", tv, pv) * inv
        qv = np.cross(tv, e1)
        vv = np.einsum("rk,fk->rf", dd, qv) * inv
        tt = np.einsum("fk,fk->f", e2, qv)[None] * inv
        hit = ok & (uu >= 0) & (vv >= 0) & (uu + vv <= 1) & (tt > 0)
        tt = np.where(hit, tt, np.inf)
        k = np.argmin(tt, axis=1)
        tmin = tt[np.arange(len(dd)), k]
        best[s:s + 512] = tmin
        front[s:s + 512] = np.einsum("rk,rk->r", dd, nrm[k]) < 0
    return best.reshape(height, width), front.reshape(height, width) & np.isfinite(best.reshape(height, width))

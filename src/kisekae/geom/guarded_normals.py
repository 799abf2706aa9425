"""Vertex normals that leave out the faces a pose has turned inside out.

Where skinning and the body contact fold the skin (a belly fan pinched by the hip's joint plane, a groin under a
raised thigh), some triangles around a vertex turn their backs: their normal points into the body. Summed into the
vertex normal they tilt it sideways or even inward, and a push that reads a point's side of the skin through that
normal takes cloth that lies outside for cloth inside, and drives it into the body (docs/fit.md, "Body normals
without the faces a pose turns inside out").

A *reference* normal says which way each vertex faced before the fold: the skinned vertex normal, the rest normal
carried by the vertex's blended skinning rotation (what an engine's skinned mesh already writes next to the skinned
position). Each triangle is weighted by how far its own normal agrees with the sum of its corners' reference
normals:

    w = clip((cos − off) / (full − off), 0, 1),   cos = n̂_face · normalise(r_a + r_b + r_c)

so a triangle at most ``acos(full)`` from the reference counts fully, one turned past ``acos(off)`` not at all, and
one between fades linearly. The vertex normal is the sum of ``w (b − a) × (c − a)`` over its triangles (area
weighted, as :func:`kisekae.geom.normals.vertex_normals`), normalised; a vertex whose sum is zero (every triangle
left out) takes its own reference normal.

The defaults were chosen by measurement over the per-frame path's cells and motions (docs/fit.md): a threshold at
0 (every triangle past 90 degrees left out) also dropped triangles that a raised thigh only stretches sideways,
and made a skirt pop 27 mm. :func:`guarded_vertex_normals_numpy` is the reference, :func:`guarded_vertex_normals`
the Numba version (the same sums in the same order: equal within 1e-12, tested), and ``KisekaeGuardedFace``
in the HLSL core the shader's (conformance: ``guarded_normal_checks``).
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import KisekaeError
from .normals import _checked_inputs

#: Cosine to the reference below which a triangle is left out of its corners' normals.
GUARD_OFF = -0.3
#: Cosine to the reference from which a triangle counts fully.
GUARD_FULL = 0.0


def check_guard(off: float, full: float) -> tuple:
    """``(off, full)`` as floats, or :class:`KisekaeError` unless ``-1 <= off < full <= 1``."""
    off, full = float(off), float(full)
    if not (-1.0 <= off < full <= 1.0):
        raise KisekaeError(f"needs -1 <= off < full <= 1, got off {off}, full {full}", "normal guard")
    return off, full


def _reference(reference, n: int) -> np.ndarray:
    r = np.ascontiguousarray(reference, dtype=np.float64)
    if r.shape != (n, 3) or not np.isfinite(r).all():
        raise KisekaeError(f"expected finite ({n}, 3) reference normals, got {r.shape}", "reference normals")
    return r


def face_guard_weights(vertices, faces, reference, *, off: float = GUARD_OFF, full: float = GUARD_FULL) -> np.ndarray:
    """(F,) float64 weight in [0, 1] of each triangle (module docstring); 0 for a triangle of zero area or whose
    corners' reference normals sum to zero.

    Parameters
    ----------
    vertices : (N, 3) posed positions, metres
    faces : (F, 3) int, counter-clockwise seen from outside
    reference : (N, 3) reference normals (need not be unit)
    off, full : float, cosines (:data:`GUARD_OFF`, :data:`GUARD_FULL`)
    """
    v, f = _checked_inputs(vertices, faces)
    r = _reference(reference, len(v))
    off, full = check_guard(off, full)
    fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    rs = r[f[:, 0]] + r[f[:, 1]] + r[f[:, 2]]
    cos = _cosine(fn, rs)
    return np.clip((cos - off) / (full - off), 0.0, 1.0)


def _cosine(fn, rs) -> np.ndarray:
    """Cosine between rows of ``fn`` and ``rs`` ((F, 3) each); -3 where either has zero length."""
    ln = np.sqrt(np.einsum("ij,ij->i", fn, fn) * np.einsum("ij,ij->i", rs, rs))
    return np.divide(np.einsum("ij,ij->i", fn, rs), ln, out=np.full(len(fn), -3.0), where=ln > 0.0)


def guarded_vertex_normals_numpy(vertices, faces, reference, *, off: float = GUARD_OFF,
                                 full: float = GUARD_FULL) -> np.ndarray:
    """(N, 3) float64 unit vertex normals from the guarded triangles (module docstring), NumPy reference.

    Parameters
    ----------
    vertices : (N, 3) posed positions, metres
    faces : (F, 3) int, counter-clockwise seen from outside
    reference : (N, 3) reference normals, e.g. :func:`kisekae.fit.fix.skinned_normals` of the body
    off, full : float, cosines (:data:`GUARD_OFF`, :data:`GUARD_FULL`)
    """
    v, f = _checked_inputs(vertices, faces)
    w = face_guard_weights(v, f, reference, off=off, full=full)
    r = _reference(reference, len(v))
    fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]) * w[:, None]
    return sum_and_normalise(fn, f, r)


def sum_and_normalise(face_vectors, faces, reference) -> np.ndarray:
    """(N, 3) float64: ``face_vectors`` (F, 3) summed into their corners (face by face, corner by corner) and
    normalised; a vertex whose sum is zero takes its ``reference`` (N, 3) normalised (0 where that is zero too)."""
    r = np.asarray(reference, dtype=np.float64)
    f = np.asarray(faces).reshape(-1, 3)
    acc = np.zeros((len(r), 3))
    np.add.at(acc, f.ravel(), np.repeat(np.asarray(face_vectors, dtype=np.float64), 3, axis=0))
    ln = np.linalg.norm(acc, axis=1, keepdims=True)
    rl = np.linalg.norm(r, axis=1, keepdims=True)
    unit_r = np.divide(r, rl, out=np.zeros_like(r), where=rl > 0.0)
    return np.where(ln > 0.0, np.multiply(acc, np.divide(1.0, ln, out=np.zeros_like(ln), where=ln > 0.0)), unit_r)


@numba.njit(cache=True)
def _guarded_kernel(v, f, r, off, full, acc, out):  # pragma: no cover - compiled
    inv = 1.0 / (full - off)
    for t in range(f.shape[0]):
        a, b, c = f[t, 0], f[t, 1], f[t, 2]
        e1x, e1y, e1z = v[b, 0] - v[a, 0], v[b, 1] - v[a, 1], v[b, 2] - v[a, 2]
        e2x, e2y, e2z = v[c, 0] - v[a, 0], v[c, 1] - v[a, 1], v[c, 2] - v[a, 2]
        nx = e1y * e2z - e1z * e2y
        ny = e1z * e2x - e1x * e2z
        nz = e1x * e2y - e1y * e2x
        rx, ry, rz = r[a, 0] + r[b, 0] + r[c, 0], r[a, 1] + r[b, 1] + r[c, 1], r[a, 2] + r[b, 2] + r[c, 2]
        ln = np.sqrt((nx * nx + ny * ny + nz * nz) * (rx * rx + ry * ry + rz * rz))
        if not ln > 0.0:
            continue
        w = min(max(((nx * rx + ny * ry + nz * rz) / ln - off) * inv, 0.0), 1.0)
        for k in (a, b, c):
            acc[k, 0] += nx * w
            acc[k, 1] += ny * w
            acc[k, 2] += nz * w
    for i in range(out.shape[0]):
        ln = np.sqrt(acc[i, 0] ** 2 + acc[i, 1] ** 2 + acc[i, 2] ** 2)
        if ln > 0.0:
            s = 1.0 / ln
            out[i, 0], out[i, 1], out[i, 2] = acc[i, 0] * s, acc[i, 1] * s, acc[i, 2] * s
        else:
            rl = np.sqrt(r[i, 0] ** 2 + r[i, 1] ** 2 + r[i, 2] ** 2)
            s = 1.0 / rl if rl > 0.0 else 0.0
            out[i, 0], out[i, 1], out[i, 2] = r[i, 0] * s, r[i, 1] * s, r[i, 2] * s


def guarded_vertex_normals(vertices, faces, reference, *, off: float = GUARD_OFF,
                           full: float = GUARD_FULL) -> np.ndarray:
    """:func:`guarded_vertex_normals_numpy` in Numba, for every frame: (N, 3) float64, equal within 1e-12."""
    v, f = _checked_inputs(vertices, faces)
    r = _reference(reference, len(v))
    off, full = check_guard(off, full)
    out = np.empty((len(v), 3))
    _guarded_kernel(v, f, r, off, full, np.zeros((len(v), 3)), out)
    return out

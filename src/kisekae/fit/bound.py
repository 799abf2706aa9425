"""Skin-bound push-out: each garment vertex keeps its clearance from its own rest-pose skin point.

This is the per-vertex, shader-friendly candidate for "exact against the real skin":

1. **Bind** (once, rest pose): every garment vertex g gets its closest point on the body
   surface, stored as a body triangle ``(i, j, k)`` and barycentrics ``(u, v, w)``.
2. **Per frame**: the bound point ``b = u·V[i] + v·V[j] + w·V[k]`` and normal ``n_b`` (the same
   blend of posed body vertex normals) come from the *posed body itself*, so they follow every
   skinning artefact of the skin underneath (a collapsing knee, a bulging buttock). The signed
   clearance ``s = (x − b)·n_b`` drives the same push law as the capsule field
   (:func:`kisekae.fit.pushout.push_amount`): vertices with ``s < margin`` move along ``n_b``.
3. Contacts between *different* body parts (the thigh against the belly) are not seen by the
   binding; the capsule field of the other bones handles those (see :func:`push_out_bound`).

In a vertex shader this costs three body-vertex fetches (from a texture the body's skinning pass
writes, or by skinning the three vertices again) plus a few multiply-adds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..errors import KisekaeError
from ..geom.bvh import build_bvh, refit
from ..geom.closest import closest_point_triangles_numpy, surface_distance
from ..geom.normals import vertex_normals
from ..validate import as_faces, as_points
from .pushout import UP, PushParams, _block_push, bias_direction, block_buffers, cap_displacement, push_amount, resolve_mask


@dataclass
class SkinBinding:
    """Rest-pose binding of garment vertices to body surface points.

    corners : (N, 3) int32 body vertex ids of the bound triangle
    bary : (N, 3) float32 barycentric weights (sum to 1)
    rest_offset : (N,) float32 signed rest clearance along the rest normal, metres
    """

    corners: np.ndarray
    bary: np.ndarray
    rest_offset: np.ndarray


def barycentric(points, tri) -> np.ndarray:
    """(P, 3) barycentric coordinates of points (on or near) triangles ``tri (P, 3, 3)``."""
    p = np.asarray(points, dtype=np.float64)
    a, b, c = (np.asarray(tri, dtype=np.float64)[:, i] for i in range(3))
    v0, v1, v2 = b - a, c - a, p - a
    d00 = np.einsum("ij,ij->i", v0, v0)
    d01 = np.einsum("ij,ij->i", v0, v1)
    d11 = np.einsum("ij,ij->i", v1, v1)
    d20 = np.einsum("ij,ij->i", v2, v0)
    d21 = np.einsum("ij,ij->i", v2, v1)
    den = d00 * d11 - d01 * d01
    safe = np.where(np.abs(den) > 1e-30, den, 1.0)
    v = np.where(np.abs(den) > 1e-30, (d11 * d20 - d01 * d21) / safe, 0.0)
    w = np.where(np.abs(den) > 1e-30, (d00 * d21 - d01 * d20) / safe, 0.0)
    out = np.stack([1.0 - v - w, v, w], axis=1)
    out = np.clip(out, 0.0, 1.0)
    return out / np.maximum(out.sum(axis=1, keepdims=True), 1e-30)


def bind_to_skin(garment_rest, body_rest, body_faces) -> SkinBinding:
    """Bind rest-pose garment vertices to their closest rest-pose body points.

    Parameters
    ----------
    garment_rest : (N, 3) metres
    body_rest : (Nb, 3) metres, a closed outward-oriented surface
    body_faces : (F, 3)
    """
    g = as_points(garment_rest, "garment rest vertices")
    v = as_points(body_rest, "body rest vertices")
    f = as_faces(body_faces, len(v), "body faces")
    bvh = build_bvh(v, f)
    state = refit(bvh, v, f)
    _, tri = surface_distance(g, bvh, state)
    corners = f[tri]
    q = closest_point_triangles_numpy(g, *v[corners].transpose(1, 0, 2))[0]
    bary = barycentric(q, v[corners])
    n = _blend_normals(vertex_normals(v, f), corners, bary)
    offset = np.einsum("ij,ij->i", g - q, n)
    return SkinBinding(corners.astype(np.int32), bary.astype(np.float32), offset.astype(np.float32))


def _blend_normals(normals, corners, bary):
    n = np.einsum("nk,nkd->nd", np.asarray(bary, dtype=np.float64), np.asarray(normals, dtype=np.float64)[corners])
    return n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)


def bound_clearance(binding: SkinBinding, points, body_posed, body_normals):
    """Signed clearance (m) of posed garment vertices from their posed bound skin points, and ``n_b``.

    Parameters
    ----------
    points : (N, 3) posed garment vertices
    body_posed : (Nb, 3) posed body vertices
    body_normals : (Nb, 3) posed body vertex normals (unit, outward)

    Returns
    -------
    s : (N,) metres; n : (N, 3) unit outward normals at the bound points
    """
    p = np.asarray(points, dtype=np.float64)
    if len(p) != len(binding.corners):
        raise KisekaeError(f"binding has {len(binding.corners)} vertices, got {len(p)}", "points")
    vb = np.asarray(body_posed, dtype=np.float64)
    b = np.einsum("nk,nkd->nd", binding.bary.astype(np.float64), vb[binding.corners])
    n = _blend_normals(body_normals, binding.corners, binding.bary)
    return np.einsum("ij,ij->i", p - b, n), n


def push_out_bound(binding: SkinBinding, points, body_posed, body_faces, params: PushParams | None = None,
                   tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0)):
    """Skin-bound push-out (NumPy reference; the shader core ports it).

    Parameters
    ----------
    binding : SkinBinding from :func:`bind_to_skin`
    points : (N, 3) posed (skinned) garment vertices, metres
    body_posed : (Nb, 3) posed body vertices
    body_faces : (F, 3) body triangles (for the posed normals)
    params : PushParams
    tightness, softness : float or (N,)

    Returns
    -------
    new_points : (N, 3) float64
    push : (N,) displacement length, metres
    clearance : (N,) signed clearance before the push, metres
    """
    params = params or PushParams()
    p = as_points(points, "garment vertices")
    nb = vertex_normals(np.asarray(body_posed, dtype=np.float64), body_faces)
    s, n = bound_clearance(binding, p, body_posed, nb)
    amount = push_amount(s, params.margin, params.stiffness, params.max_push, tightness, softness, params.skirt_bias)
    direction = bias_direction(n, params.skirt_bias, np.asarray(up, dtype=np.float64))
    return p + amount[:, None] * direction, amount, s


def push_out_runtime(binding: SkinBinding, points, capsules, body_posed, body_faces,
                     params: PushParams | None = None, tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0), plan=None):
    """The runtime (vertex-shader) push-out: capsule field, then skin-bound clearance, total capped.

    Parameters
    ----------
    binding : SkinBinding
    points : (N, 3) posed garment vertices, metres
    capsules : tuple ``(a, b, ra, rb)`` of posed world-space capsules (see ``CapsuleRig.posed``)
    body_posed, body_faces : posed body vertices and triangles
    params, tightness, softness, up : as :func:`push_out_bound`
    plan : kisekae.fit.pushout.CapsulePushPlan, optional
        The garment's capsule push-out prepared once (same ``params``, masks and ``up``); a clip
        reuses it every frame. Built here when not given.

    Returns
    -------
    new_points : (N, 3) float64, with ``|new − points| <= max_push`` for every vertex
    push : (N,) total displacement length, metres
    """
    from .pushout import CapsulePushPlan

    params = params or PushParams()
    p = as_points(points, "garment vertices")
    a, b, ra, rb = capsules
    if plan is None:
        plan = CapsulePushPlan(p, params, tightness, softness, up=up)
    after_caps = np.array(plan.run(p, a, b, ra, rb, diagnostics=False)[0])
    new, _, _ = push_out_bound(binding, after_caps, body_posed, body_faces, params, tightness, softness, up)
    cap_displacement(new, p, params.max_push)
    return new, np.linalg.norm(new - p, axis=1)


#: Vertices per block of the Numba kernel (gathered, then the push law runs over the block).
BLOCK = 64


@numba.njit(cache=True, error_model="numpy")
def _bound_kernel(points, corners, bary, body, body_normals, tight, soft, prm, start, cap, out, s_out):
    margin, stiffness, max_push, skirt_bias, upx, upy, upz = prm[0], prm[1], prm[2], prm[3], prm[4], prm[5], prm[6]
    n = points.shape[0]
    dd, gx, gy, gz, ct, cs, amt = block_buffers(BLOCK)
    for s0 in range(0, n, BLOCK):
        m = min(BLOCK, n - s0)
        for i in range(m):
            v = s0 + i
            bx = 0.0
            by = 0.0
            bz = 0.0
            nx = 0.0
            ny = 0.0
            nz = 0.0
            for k in range(3):
                c = corners[v, k]
                w = np.float64(bary[v, k])
                bx += w * body[c, 0]
                by += w * body[c, 1]
                bz += w * body[c, 2]
                nx += w * np.float64(body_normals[c, 0])
                ny += w * np.float64(body_normals[c, 1])
                nz += w * np.float64(body_normals[c, 2])
            nl = np.sqrt(nx * nx + ny * ny + nz * nz)
            nl = nl if nl > 1e-12 else 1e-12
            nx /= nl
            ny /= nl
            nz /= nl
            dd[i] = (points[v, 0] - bx) * nx + (points[v, 1] - by) * ny + (points[v, 2] - bz) * nz
            gx[i] = nx
            gy[i] = ny
            gz[i] = nz
            ct[i] = tight[v]
            cs[i] = soft[v]
        _block_push(dd, gx, gy, gz, ct, cs, m, margin, stiffness, max_push, skirt_bias, upx, upy, upz, True, amt)
        for i in range(m):
            v = s0 + i
            ox = points[v, 0] + amt[i] * gx[i]
            oy = points[v, 1] + amt[i] * gy[i]
            oz = points[v, 2] + amt[i] * gz[i]
            if cap:
                dx, dy, dz = ox - start[v, 0], oy - start[v, 1], oz - start[v, 2]
                ln = np.sqrt(dx * dx + dy * dy + dz * dz)
                if ln > max_push:
                    f = max_push / ln
                    ox, oy, oz = start[v, 0] + dx * f, start[v, 1] + dy * f, start[v, 2] + dz * f
            out[v, 0] = ox
            out[v, 1] = oy
            out[v, 2] = oz
            s_out[v] = dd[i]


def _f64(x, shape, name):
    ok = type(x) is np.ndarray and x.dtype == np.float64 and x.flags.c_contiguous and x.shape == shape
    arr = x if ok else as_points(x, name)
    if arr.shape != shape:
        raise KisekaeError(f"expected shape {shape}, got {arr.shape}", name)
    return arr


def push_out_bound_numba(binding: SkinBinding, points, body_posed, body_normals, params: PushParams | None = None,
                         tightness=None, softness=None, up=UP, start=None, out=None):
    """Skin-bound push-out, Numba, one core: :func:`push_out_bound` for per-frame use.

    Unlike :func:`push_out_bound` it takes the posed body normals (one
    :func:`kisekae.geom.normals.vertex_normals` per frame serves every garment) and, with
    ``start``, also applies the maxPush cap of :func:`push_out_runtime` (``|new - start| <= max_push``).

    Parameters
    ----------
    binding : SkinBinding from :func:`bind_to_skin`
    points : (N, 3) garment vertices, metres (after the capsule push in the runtime path)
    body_posed : (Nb, 3) posed body vertices, metres
    body_normals : (Nb, 3) posed body vertex normals (unit, outward), e.g. float32 from ``kisekae.geom.normals.vertex_normals``
    params : PushParams, optional
    tightness, softness : None, float or (N,), 0..1 (default: the params' values)
    up : (3,) world up, for the skirt bias
    start : (N, 3), optional; the skinned positions the cap is measured from (no cap when None)
    out : (N, 3) float64 C-contiguous array to write into, optional

    Returns
    -------
    new_points : (N, 3) float64
    clearance : (N,) float64 signed clearance before the push, metres
    """
    params = params or PushParams()
    n = len(binding.corners)
    p = _f64(points, (n, 3), "garment vertices")
    vb = body_posed if (type(body_posed) is np.ndarray and body_posed.dtype == np.float64
                        and body_posed.flags.c_contiguous) else as_points(body_posed, "body vertices")
    nb = np.ascontiguousarray(body_normals)
    if vb.ndim != 2 or vb.shape[1] != 3 or nb.shape != vb.shape or nb.dtype not in (np.float32, np.float64):
        raise KisekaeError(f"body vertices {vb.shape} and normals {nb.shape} {nb.dtype} must both be (Nb, 3) floats",
                           "body normals")
    if n and int(binding.corners.max()) >= len(vb):
        raise KisekaeError(f"binding refers to body vertex {int(binding.corners.max())}, the body has {len(vb)}",
                           "body vertices")
    t = resolve_mask(tightness, n, "tightness", default=params.tightness)
    s = resolve_mask(softness, n, "softness", default=params.softness)
    up = np.asarray(up, dtype=np.float64).reshape(3)
    prm = np.array([params.margin, params.stiffness, params.max_push, params.skirt_bias, up[0], up[1], up[2]])
    st = p if start is None else _f64(start, (n, 3), "start")
    if out is None:
        out = np.empty((n, 3))
    elif not (type(out) is np.ndarray and out.dtype == np.float64 and out.flags.c_contiguous
              and out.flags.writeable and out.shape == (n, 3)):
        raise KisekaeError(f"must be a writeable C-contiguous float64 array of shape ({n}, 3)", "out")
    clearance = np.empty(n)
    if n:
        _bound_kernel(p, binding.corners, binding.bary, vb, nb, t, s, prm, st, start is not None, out, clearance)
    return out, clearance

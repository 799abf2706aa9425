"""The garment follows what the body does beyond skinning.

The default body is not plain linear blend skinning: pose-space correctives, the joint planes and, with a
``--keep-volume`` bake, a volume bulge move its surface away from where skinning puts it (up to 8 cm in the crouch).
A garment skinned with its own weights knows nothing of that: where the body grew (a thigh given its volume back)
the skinned cloth lies under the skin, and the per-frame push moves its vertices out but leaves the faces between
them inside. Here each garment vertex takes the outward part of the body's own displacement at the point it is
bound to at rest (:class:`kisekae.fit.bound.SkinBinding`: three corners and barycentric weights), faded out with the
rest clearance, so fabric that lies on the skin moves out with it and loose fabric (a skirt's hem) barely does:

    d_i = f(|c_i|) Σ_k b_ik max(0, (body_k − skinned_k) · n_k) n_k
    f(c) = clip((far − c) / (far − near), 0, 1)

with ``body`` the frame's posed body, ``skinned`` the same body by plain skinning, ``n`` the posed body's unit
vertex normals and ``c_i`` the vertex's rest clearance. Only the outward part: where the body moves in (the joint
planes flatten a thigh against its calf, by up to 8 cm) the cloth has no reason to follow, and following it sheared
the cloth (crouch skirt strain p99 0.26 -> 0.51, tights 10 flipped faces). It is a gather of three body vertices
per garment vertex (a vertex or compute shader reads the body buffers the frame has already made), and it is smooth
wherever the body's displacement is.

:func:`follow_weights` gives ``f``, :func:`body_follow` the displacement (Numba), :func:`body_follow_numpy` its
reference, :func:`follow_inputs` their checked arguments.
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import KisekaeError

#: Rest clearance up to which a garment vertex follows the body fully, metres.
FOLLOW_NEAR = 0.02
#: Rest clearance from which a garment vertex does not follow the body at all, metres.
FOLLOW_FAR = 0.06


def follow_weights(rest_offset, near: float = FOLLOW_NEAR, far: float = FOLLOW_FAR) -> np.ndarray:
    """(N,) float64 share of the body's displacement each garment vertex takes, from its rest clearance (metres,
    signed; its magnitude is used): 1 up to ``near``, 0 from ``far``, linear between."""
    near, far = float(near), float(far)
    if not (np.isfinite(near) and np.isfinite(far) and 0.0 <= near < far):
        raise KisekaeError(f"need 0 <= near < far, got near={near!r}, far={far!r}", "body follow")
    c = np.abs(np.asarray(rest_offset, dtype=np.float64))
    if c.ndim != 1 or not np.all(np.isfinite(c)):
        raise KisekaeError("rest clearances must be a finite (N,) array", "body follow")
    return np.clip((far - c) / (far - near), 0.0, 1.0)


def follow_inputs(corners, bary, weights, body, skinned, normals) -> tuple:
    """The arguments of :func:`body_follow` checked and converted (int64 corners, float64 arrays), or a
    :class:`KisekaeError` naming what disagrees."""
    corners = np.ascontiguousarray(corners, dtype=np.int64)
    bary, weights, body, skinned, normals = (np.ascontiguousarray(a, dtype=np.float64)
                                             for a in (bary, weights, body, skinned, normals))
    n = len(corners)
    if corners.shape != (n, 3) or bary.shape != (n, 3) or weights.shape != (n,):
        raise KisekaeError(f"binding of {corners.shape} corners, {bary.shape} weights and {weights.shape} shares do "
                           "not agree", "body follow")
    if body.ndim != 2 or body.shape[1] != 3 or skinned.shape != body.shape or normals.shape != body.shape:
        raise KisekaeError(f"posed body {body.shape}, skinned body {skinned.shape} and normals {normals.shape} must "
                           "be the same (M, 3)", "body follow")
    if n and (corners.min() < 0 or corners.max() >= len(body)):
        raise KisekaeError(f"binding corners must lie in [0, {len(body)})", "body follow")
    if not (np.all(np.isfinite(body)) and np.all(np.isfinite(skinned)) and np.all(np.isfinite(normals))):
        raise KisekaeError("the posed or skinned body or its normals hold NaN or infinite values", "body follow")
    return corners, bary, weights, body, skinned, normals


@numba.njit(cache=True, nogil=True)
def _follow_kernel(corners, bary, weights, body, skinned, normals, out):  # pragma: no cover - compiled
    for i in range(corners.shape[0]):
        s = weights[i]
        x = 0.0
        y = 0.0
        z = 0.0
        if s != 0.0:
            for k in range(3):
                c = corners[i, k]
                nx, ny, nz = normals[c, 0], normals[c, 1], normals[c, 2]
                out_k = bary[i, k] * max(0.0, (body[c, 0] - skinned[c, 0]) * nx + (body[c, 1] - skinned[c, 1]) * ny
                                         + (body[c, 2] - skinned[c, 2]) * nz)
                x += out_k * nx
                y += out_k * ny
                z += out_k * nz
        out[i, 0] = s * x
        out[i, 1] = s * y
        out[i, 2] = s * z


def body_follow(corners, bary, weights, body, skinned, normals) -> np.ndarray:
    """(N, 3) float64 displacement of each garment vertex (module docstring), Numba.

    Parameters
    ----------
    corners : (N, 3) int body vertex ids of each garment vertex's bound triangle
    bary : (N, 3) float barycentric weights on them
    weights : (N,) float share of the displacement (:func:`follow_weights`)
    body : (M, 3) float the frame's posed body, metres
    skinned : (M, 3) float the same body by plain skinning, metres
    normals : (M, 3) float unit outward vertex normals of ``body``
    """
    args = follow_inputs(corners, bary, weights, body, skinned, normals)
    out = np.empty((len(args[0]), 3))
    _follow_kernel(*args, out)
    return out


def body_follow_numpy(corners, bary, weights, body, skinned, normals) -> np.ndarray:
    """:func:`body_follow` in NumPy (the reference)."""
    corners, bary, weights, body, skinned, normals = follow_inputs(corners, bary, weights, body, skinned, normals)
    outward = np.maximum(np.einsum("mc,mc->m", body - skinned, normals), 0.0)[:, None] * normals
    return weights[:, None] * np.einsum("nk,nkc->nc", bary, outward[corners])

"""Skin weights and linear blend skinning (NumPy reference and Numba kernel).

Linear blend skinning: ``v' = Σ_k w_k · (M[j_k] @ [v, 1])`` with skinning matrices
``M = posed_world @ inv(rest_world)``, ``(B, 4, 4)`` on column vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..errors import KisekaeError


@dataclass
class Skin:
    """Sparse top-k skin weights.

    Parameters
    ----------
    indices : (N, K) int32 bone ids (0 where the weight is 0)
    weights : (N, K) float32, rows sum to 1
    """

    indices: np.ndarray
    weights: np.ndarray

    def __post_init__(self):
        self.indices = np.ascontiguousarray(self.indices, dtype=np.int32)
        self.weights = np.ascontiguousarray(self.weights, dtype=np.float32)
        if self.indices.shape != self.weights.shape or self.indices.ndim != 2:
            raise KisekaeError(f"indices {self.indices.shape} and weights {self.weights.shape} differ", "skin")

    @property
    def n_vertices(self) -> int:
        return len(self.indices)

    def dense(self, n_bones: int) -> np.ndarray:
        """(N, B) float32 dense weight matrix."""
        d = np.zeros((len(self.indices), n_bones), np.float32)
        np.add.at(d, (np.arange(len(self.indices))[:, None], self.indices), self.weights)
        return d

    def take(self, rows: np.ndarray) -> "Skin":
        return Skin(self.indices[rows], self.weights[rows])


def top_k_weights(dense: np.ndarray, k: int = 4, *, source: str = "weights") -> Skin:
    """Keep the ``k`` largest weights per vertex and renormalise them to sum to 1.

    Parameters
    ----------
    dense : (N, B) array of non-negative weights
    k : int, influences kept per vertex

    Raises
    ------
    KisekaeError
        If a vertex has no positive weight, or weights are negative or non-finite.
    """
    d = np.asarray(dense, dtype=np.float64)
    if d.ndim != 2:
        raise KisekaeError(f"expected (N, B) weights, got {d.shape}", source)
    if not np.all(np.isfinite(d)) or np.any(d < 0):
        raise KisekaeError("weights must be finite and non-negative", source)
    k = min(k, d.shape[1])
    idx = np.argsort(-d, axis=1, kind="stable")[:, :k]
    w = np.take_along_axis(d, idx, axis=1)
    s = w.sum(axis=1)
    if np.any(s <= 0):
        bad = np.nonzero(s <= 0)[0]
        raise KisekaeError(f"{len(bad)} vertices have no skin weight (first: {bad[0]})", source)
    w = w / s[:, None]
    idx = np.where(w > 0, idx, 0)
    return Skin(idx.astype(np.int32), w.astype(np.float32))


def lbs_numpy(vertices, indices, weights, skin_matrices, *, dtype=np.float32) -> np.ndarray:
    """Linear blend skinning, NumPy reference (computed in float64).

    Parameters
    ----------
    vertices : (N, 3) rest positions, metres
    indices, weights : (N, K) bone ids and weights
    skin_matrices : (B, 4, 4) ``posed @ inv(rest)``
    dtype : numpy dtype of the result (float32, as vertex data, by default)

    Returns
    -------
    (N, 3) posed positions, metres.
    """
    v = np.asarray(vertices, dtype=np.float64)
    m = np.asarray(skin_matrices, dtype=np.float64)[np.asarray(indices)]  # (N, K, 4, 4)
    blended = np.einsum("nk,nkij->nij", np.asarray(weights, dtype=np.float64), m)
    return (np.einsum("nij,nj->ni", blended[:, :3, :3], v) + blended[:, :3, 3]).astype(dtype)


@numba.njit(cache=True, nogil=True, inline="always")
def lbs_point(x, y, z, i, idx, w, m):  # pragma: no cover - compiled
    """Point ``(x, y, z)`` skinned with the weights of vertex ``i`` (Numba; the kernels' one body)."""
    ox = 0.0
    oy = 0.0
    oz = 0.0
    for j in range(idx.shape[1]):
        wj = w[i, j]
        if wj == 0.0:
            continue
        b = idx[i, j]
        ox += wj * (m[b, 0, 0] * x + m[b, 0, 1] * y + m[b, 0, 2] * z + m[b, 0, 3])
        oy += wj * (m[b, 1, 0] * x + m[b, 1, 1] * y + m[b, 1, 2] * z + m[b, 1, 3])
        oz += wj * (m[b, 2, 0] * x + m[b, 2, 1] * y + m[b, 2, 2] * z + m[b, 2, 3])
    return ox, oy, oz


@numba.njit(cache=True, fastmath=False, parallel=False)
def _lbs_kernel(v, idx, w, m, out):
    for i in range(idx.shape[0]):
        out[i, 0], out[i, 1], out[i, 2] = lbs_point(v[i, 0], v[i, 1], v[i, 2], i, idx, w, m)


def lbs(vertices, indices, weights, skin_matrices) -> np.ndarray:
    """Linear blend skinning, Numba kernel; same contract as :func:`lbs_numpy`."""
    v = np.ascontiguousarray(vertices, dtype=np.float64)
    idx = np.ascontiguousarray(indices, dtype=np.int32)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    m = np.ascontiguousarray(skin_matrices, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 3 or idx.shape != w.shape or len(idx) != len(v):
        raise KisekaeError(f"shape mismatch: vertices {v.shape}, indices {idx.shape}, weights {w.shape}", "lbs")
    if idx.size and (idx.min() < 0 or idx.max() >= len(m)):
        raise KisekaeError(f"bone index out of range 0..{len(m) - 1}", "lbs")
    out = np.empty((len(v), 3), dtype=np.float64)
    _lbs_kernel(v, idx, w, m, out)
    return out.astype(np.float32)


@numba.njit(cache=True)
def lbs_with_normals(vertices, normals, indices, weights, mats, out_pos, out_nrm):
    """Linear blend skinning of positions and normals in float32, as a vertex shader does (Numba).

    Normals go through the blended 3x3 and are renormalised (a zero result leaves ``out_nrm`` as it
    was). :func:`lbs_with_normals_numpy` is the reference.

    Parameters
    ----------
    vertices, normals : (N, 3) float32, metres and unit
    indices : (N, K) int32; weights : (N, K) float32
    mats : (B, 4, 4) float32 skinning matrices acting on column vectors
    out_pos, out_nrm : (N, 3) float32, written

    Returns
    -------
    ``(out_pos, out_nrm)``
    """
    for v in range(vertices.shape[0]):
        m = np.zeros((3, 4), np.float32)
        for k in range(indices.shape[1]):
            w = weights[v, k]
            if w == 0:
                continue
            b = indices[v, k]
            for r in range(3):
                for c in range(4):
                    m[r, c] += w * mats[b, r, c]
        x, y, z = vertices[v, 0], vertices[v, 1], vertices[v, 2]
        nx, ny, nz = normals[v, 0], normals[v, 1], normals[v, 2]
        for r in range(3):
            out_pos[v, r] = m[r, 0] * x + m[r, 1] * y + m[r, 2] * z + m[r, 3]
        ax = m[0, 0] * nx + m[0, 1] * ny + m[0, 2] * nz
        ay = m[1, 0] * nx + m[1, 1] * ny + m[1, 2] * nz
        az = m[2, 0] * nx + m[2, 1] * ny + m[2, 2] * nz
        ln = np.sqrt(ax * ax + ay * ay + az * az)
        if ln > 0:
            out_nrm[v, 0] = ax / ln
            out_nrm[v, 1] = ay / ln
            out_nrm[v, 2] = az / ln
    return out_pos, out_nrm


def lbs_with_normals_numpy(vertices, normals, indices, weights, mats):
    """NumPy reference of :func:`lbs_with_normals`: ``(positions, normals)`` (N, 3) float32."""
    m = np.einsum("nk,nkij->nij", np.asarray(weights, np.float32), np.asarray(mats, np.float32)[np.asarray(indices)])
    v = np.asarray(vertices, np.float32)
    pos = np.einsum("nij,nj->ni", m[:, :3, :3], v) + m[:, :3, 3]
    nrm = np.einsum("nij,nj->ni", m[:, :3, :3], np.asarray(normals, np.float32))
    ln = np.linalg.norm(nrm, axis=1, keepdims=True)
    return pos.astype(np.float32), np.divide(nrm, ln, out=np.zeros_like(nrm), where=ln > 0).astype(np.float32)


@numba.njit(cache=True, nogil=True)
def _normals_kernel(n, idx, w, m, out):  # pragma: no cover - compiled
    for i in range(n.shape[0]):
        x = y = z = 0.0
        for k in range(idx.shape[1]):
            wk = w[i, k]
            if wk == 0.0:
                continue
            b = idx[i, k]
            x += wk * (m[b, 0, 0] * n[i, 0] + m[b, 0, 1] * n[i, 1] + m[b, 0, 2] * n[i, 2])
            y += wk * (m[b, 1, 0] * n[i, 0] + m[b, 1, 1] * n[i, 1] + m[b, 1, 2] * n[i, 2])
            z += wk * (m[b, 2, 0] * n[i, 0] + m[b, 2, 1] * n[i, 1] + m[b, 2, 2] * n[i, 2])
        ln = np.sqrt(x * x + y * y + z * z)
        s = 1.0 / ln if ln > 0.0 else 0.0
        out[i, 0], out[i, 1], out[i, 2] = x * s, y * s, z * s


def lbs_normals(normals, indices, weights, skin_matrices) -> np.ndarray:
    """(N, 3) float64 rest ``normals`` (N, 3) carried by each vertex's blended skinning rotation ``Σ_k w_k R[j_k]``
    and normalised (0 where the result is 0): the skinned normals a vertex shader writes, in float64 (Numba). Its
    reference is ``kisekae.fit.fix.blended_normals`` of :func:`lbs_numpy`'s blend (tested)."""
    n = np.ascontiguousarray(normals, dtype=np.float64)
    m = np.ascontiguousarray(skin_matrices, dtype=np.float64)
    idx = np.ascontiguousarray(indices, dtype=np.int32)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    if n.ndim != 2 or n.shape[1] != 3 or idx.shape != w.shape or len(idx) != len(n) or m.ndim != 3 \
            or m.shape[1:] != (4, 4) or (idx.size and (idx.min() < 0 or idx.max() >= len(m))):
        raise KisekaeError(f"normals {n.shape}, skin {idx.shape} / {w.shape} and matrices {m.shape} do not fit",
                           "skinned normals")
    out = np.empty((len(n), 3))
    _normals_kernel(n, idx, w, m, out)
    return out

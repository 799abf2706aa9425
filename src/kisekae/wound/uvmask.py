"""UV-space damage mask: each hit is accumulated once into a small texture, each frame only samples it.

This is the second flat-cost variant (the first is the per-vertex mask of
:class:`~kisekae.wound.WoundState`). It suits engines that would rather keep one small texture per
character than a per-vertex buffer, and it does not care about the vertex count or order.

How it works
------------
1. **Position map** (once per mesh, :func:`rasterize_uv_positions`): the mesh's uv0 triangles are
   rasterised into an ``S x S`` texture; every texel centre covered by a UV triangle gets the
   bind-pose 3D point that maps to it (barycentric interpolation of the triangle's corners).
   Texel ``(row j, column i)`` has its centre at ``uv = ((i + 0.5) / S, (j + 0.5) / S)``, so row 0
   is ``v = 0`` (glTF's top row). Texels up to ``padding`` texels outside the islands copy the
   nearest covered texel (a gutter), so bilinear taps at island borders read sensible values.
2. **Accumulate** (once per hit, :func:`accumulate_hit_uv_numba`): for every valid texel and every
   body part ``q`` (one channel per part), ``mask[j, i, q] = saturate(mask + part_gain[q] *
   damage(|X(texel) - hit|, size_q))`` with ``size_q = HoleSize * (q == hit part ? part_reach[q] :
   1)``. That is exactly the per-vertex rule evaluated at the texel's bind-pose point as if it
   belonged to part ``q``. One channel per part keeps the texture smooth across part borders, so
   bilinear filtering never mixes an arm's damage into the chest (a shader with up to 4 parts
   reads one RGBA texel: ``p = tex2Dlod(mask, uv)[part]``).
3. **Sample** (per frame, :func:`sample_uv_mask_numba`): ``p[v] = bilinear(mask[..., part[v]],
   uv0[v])`` with clamp-to-edge; the cost is four texel reads per vertex, whatever the hit count.

Resolution error: ``|p_uv - p_vertex| <= L * max_k |X(tap_k) - x_v|``, where ``L`` bounds the
Lipschitz constant of the accumulated mask (``HoleIntensity * max part_gain`` per hit) and ``tap_k``
are the four bilinear taps of the vertex (:meth:`UVDamageMask.tap_distance` returns the distance).
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import KisekaeError
from ..validate import as_faces, as_points

#: Barycentric tolerance for "the texel centre is inside the UV triangle" (shared edges are covered).
_INSIDE_EPS = 1e-9


def _check_uv(uv, n, name):
    try:
        arr = np.ascontiguousarray(uv, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise KisekaeError(f"cannot read as numbers: {exc}", name) from None
    if arr.ndim != 2 or arr.shape[1] != 2 or (n is not None and len(arr) != n):
        want = f"({n}, 2)" if n is not None else "(T, 2)"
        raise KisekaeError(f"expected UVs of shape {want}, got {arr.shape}", name)
    if not np.all(np.isfinite(arr)):
        raise KisekaeError("UVs have NaN or infinite values", name)
    return arr


def _check_size(size):
    s = int(size)
    if s != size or not 2 <= s <= 8192:
        raise KisekaeError(f"texture side must be an integer in 2..8192, got {size!r}", "size")
    return s


# --------------------------------------------------------------------------------------------
# 1. position map
# --------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def rasterize_uv_numba(uv, uv_faces, positions, faces, size, out_pos, covered):
    """Rasterise UV triangles: every covered texel centre gets the interpolated 3D position.

    Parameters
    ----------
    uv : (T, 2) float64 UV coordinates; uv_faces : (F, 3) int64 indices into ``uv``.
    positions : (N, 3) float64 metres; faces : (F, 3) int64 indices into ``positions``.
    size : int, texture side S.
    out_pos : (S, S, 3) float64, written where covered; covered : (S, S) bool, set where covered.
    Triangles are drawn in order; a texel on a shared edge keeps the last triangle's value.
    """
    for t in range(faces.shape[0]):
        x0 = uv[uv_faces[t, 0], 0] * size - 0.5
        y0 = uv[uv_faces[t, 0], 1] * size - 0.5
        x1 = uv[uv_faces[t, 1], 0] * size - 0.5
        y1 = uv[uv_faces[t, 1], 1] * size - 0.5
        x2 = uv[uv_faces[t, 2], 0] * size - 0.5
        y2 = uv[uv_faces[t, 2], 1] * size - 0.5
        area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
        if area == 0.0:
            continue
        i0 = max(0, int(np.ceil(min(x0, x1, x2) - 1e-6)))
        i1 = min(size - 1, int(np.floor(max(x0, x1, x2) + 1e-6)))
        j0 = max(0, int(np.ceil(min(y0, y1, y2) - 1e-6)))
        j1 = min(size - 1, int(np.floor(max(y0, y1, y2) + 1e-6)))
        for j in range(j0, j1 + 1):
            for i in range(i0, i1 + 1):
                w0 = ((x1 - i) * (y2 - j) - (x2 - i) * (y1 - j)) / area
                w1 = ((x2 - i) * (y0 - j) - (x0 - i) * (y2 - j)) / area
                w2 = 1.0 - w0 - w1
                if w0 < -_INSIDE_EPS or w1 < -_INSIDE_EPS or w2 < -_INSIDE_EPS:
                    continue
                a, b, c = faces[t, 0], faces[t, 1], faces[t, 2]
                for k in range(3):
                    out_pos[j, i, k] = w0 * positions[a, k] + w1 * positions[b, k] + w2 * positions[c, k]
                covered[j, i] = True
    return out_pos, covered


def rasterize_uv_numpy(uv, uv_faces, positions, faces, size):
    """NumPy reference of :func:`rasterize_uv_numba` (per triangle, vectorised over its texel box).

    Barycentrics here come from solving the 2x2 system ``[e1 e2] (w1, w2) = p - c0`` rather than
    from edge functions. Returns ``(out_pos (S, S, 3) float64, covered (S, S) bool)``.
    """
    uvp = np.asarray(uv, dtype=np.float64) * size - 0.5
    pos = np.asarray(positions, dtype=np.float64)
    out = np.zeros((size, size, 3))
    cov = np.zeros((size, size), bool)
    for t in range(len(faces)):
        c = uvp[uv_faces[t]]
        m = np.array([c[1] - c[0], c[2] - c[0]]).T  # columns e1, e2
        det = np.linalg.det(m)
        if det == 0.0:
            continue
        lo = np.maximum(np.ceil(c.min(0) - 1e-6), 0).astype(int)
        hi = np.minimum(np.floor(c.max(0) + 1e-6), size - 1).astype(int)
        if np.any(hi < lo):
            continue
        ii, jj = np.meshgrid(np.arange(lo[0], hi[0] + 1), np.arange(lo[1], hi[1] + 1))
        rhs = np.stack([ii.ravel() - c[0, 0], jj.ravel() - c[0, 1]], 0)
        w12 = np.linalg.solve(m, rhs)
        w = np.stack([1.0 - w12[0] - w12[1], w12[0], w12[1]], 1)
        inside = np.all(w >= -_INSIDE_EPS, axis=1)
        if not inside.any():
            continue
        pts = w[inside] @ pos[faces[t]]
        out[jj.ravel()[inside], ii.ravel()[inside]] = pts
        cov[jj.ravel()[inside], ii.ravel()[inside]] = True
    return out, cov


def rasterize_uv_positions(positions, faces, uv, uv_faces=None, *, size: int = 512, padding: int = 2):
    """Bind-pose position map of a mesh in its UV layout, with a gutter of ``padding`` texels.

    Parameters
    ----------
    positions : (N, 3) float, bind-pose positions, metres.
    faces : (F, 3) int, triangles.
    uv : (T, 2) float UVs; per corner through ``uv_faces``, or per vertex (T = N) when
        ``uv_faces`` is None.
    uv_faces : (F, 3) int, optional, indices into ``uv`` per triangle corner.
    size : int, default 512, texture side S (texels).
    padding : int, default 2, gutter width in texels around the UV islands.

    Returns
    -------
    texel_positions : (S, S, 3) float64 metres (0 where not valid).
    valid : (S, S) bool, covered or within the gutter.
    covered : (S, S) bool, texel centre inside a UV triangle.
    """
    pos = as_points(positions, "positions")
    f = as_faces(faces, len(pos), "faces").astype(np.int64)
    if uv_faces is None:
        uvs = _check_uv(uv, len(pos), "uv")
        uf = f
    else:
        uvs = _check_uv(uv, None, "uv")
        uf = as_faces(uv_faces, len(uvs), "uv_faces").astype(np.int64)
        if len(uf) != len(f):
            raise KisekaeError(f"expected {len(f)} UV triangles (one per face), got {len(uf)}", "uv_faces")
    s = _check_size(size)
    pad = int(padding)
    if pad != padding or pad < 0:
        raise KisekaeError(f"must be an integer >= 0, got {padding!r}", "padding")
    out = np.zeros((s, s, 3))
    cov = np.zeros((s, s), bool)
    rasterize_uv_numba(uvs, uf, pos, f, s, out, cov)
    if not cov.any():
        raise KisekaeError(f"no texel centre of a {s}x{s} texture lies inside any UV triangle (UVs outside "
                           "[0, 1] or degenerate?)", "uv")
    valid = cov.copy()
    if pad > 0:
        from scipy.ndimage import distance_transform_edt
        dist, (rj, ri) = distance_transform_edt(~cov, return_indices=True)
        gutter = (~cov) & (dist <= pad)
        out[gutter] = out[rj[gutter], ri[gutter]]
        valid |= gutter
    return out, valid, cov


# --------------------------------------------------------------------------------------------
# 2. accumulate a hit
# --------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def accumulate_hit_uv_numba(mask, texel_positions, texel_ids, hit_position, hit_part, hole_size, hole_intensity,
                            part_reach, part_gain):
    """Add one hit into a UV damage mask in place.

    Parameters
    ----------
    mask : (S*S, P) float32, the mask's texels in row-major order, one channel per body part.
    texel_positions : (K, 3) float64 bind-pose points of the valid texels; texel_ids : (K,) int64
        their row-major ids.
    hit_position : (3,) float64 bind-pose hit point, metres; hit_part : int.
    hole_size : float metres; hole_intensity : float 1/metres; part_reach, part_gain : (P,) float.
    """
    n_parts = mask.shape[1]
    for k in range(texel_ids.shape[0]):
        dx = texel_positions[k, 0] - hit_position[0]
        dy = texel_positions[k, 1] - hit_position[1]
        dz = texel_positions[k, 2] - hit_position[2]
        d = np.sqrt(dx * dx + dy * dy + dz * dz)
        t = texel_ids[k]
        for q in range(n_parts):
            size = hole_size * (part_reach[q] if hit_part == q else 1.0)
            dmg = min(max(1.0 - (d - size) * hole_intensity, 0.0), 1.0)
            if dmg == 0.0:
                continue
            mask[t, q] = min(max(mask[t, q] + part_gain[q] * dmg, 0.0), 1.0)
    return mask


def accumulate_hit_uv_numpy(mask, texel_positions, valid, hit_position, hit_part, hole_size, hole_intensity,
                            part_reach, part_gain):
    """NumPy reference: ``mask`` (S, S, P) float, ``texel_positions`` (S, S, 3), ``valid`` (S, S). Returns a new mask."""
    out = np.array(mask, dtype=np.float64)
    d = np.linalg.norm(np.asarray(texel_positions, np.float64) - np.asarray(hit_position, np.float64), axis=2)
    for q in range(out.shape[2]):
        size = hole_size * (part_reach[q] if hit_part == q else 1.0)
        dmg = np.clip(1.0 - (d - size) * hole_intensity, 0.0, 1.0)
        out[..., q] = np.where(valid, np.clip(out[..., q] + part_gain[q] * dmg, 0.0, 1.0), out[..., q])
    return out


# --------------------------------------------------------------------------------------------
# 3. sample per vertex
# --------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def sample_uv_mask_numba(mask, vertex_uv, parts, out):
    """Bilinear read of channel ``parts[v]`` of ``mask`` (S, S, P) at ``vertex_uv[v]``, clamp to edge.

    Writes ``out`` (N,) and returns it. Texel centres are at ``(i + 0.5) / S``.
    """
    s = mask.shape[0]
    for v in range(vertex_uv.shape[0]):
        x = vertex_uv[v, 0] * s - 0.5
        y = vertex_uv[v, 1] * s - 0.5
        fx = np.floor(x)
        fy = np.floor(y)
        ax = x - fx
        ay = y - fy
        i0 = min(max(int(fx), 0), s - 1)
        i1 = min(max(int(fx) + 1, 0), s - 1)
        j0 = min(max(int(fy), 0), s - 1)
        j1 = min(max(int(fy) + 1, 0), s - 1)
        q = parts[v]
        top = mask[j0, i0, q] + ax * (mask[j0, i1, q] - mask[j0, i0, q])
        bot = mask[j1, i0, q] + ax * (mask[j1, i1, q] - mask[j1, i0, q])
        out[v] = top + ay * (bot - top)
    return out


def bilinear_taps(vertex_uv, size: int):
    """The four texels and weights a bilinear read at ``vertex_uv`` (N, 2) uses (clamp to edge).

    Returns
    -------
    rows, cols : (N, 4) int64; weights : (N, 4) float64 (summing to 1).
    """
    uv = np.asarray(vertex_uv, dtype=np.float64)
    x = uv[:, 0] * size - 0.5
    y = uv[:, 1] * size - 0.5
    fx, fy = np.floor(x), np.floor(y)
    ax, ay = x - fx, y - fy
    i0 = np.clip(fx.astype(np.int64), 0, size - 1)
    i1 = np.clip(fx.astype(np.int64) + 1, 0, size - 1)
    j0 = np.clip(fy.astype(np.int64), 0, size - 1)
    j1 = np.clip(fy.astype(np.int64) + 1, 0, size - 1)
    rows = np.stack([j0, j0, j1, j1], 1)
    cols = np.stack([i0, i1, i0, i1], 1)
    w = np.stack([(1 - ax) * (1 - ay), ax * (1 - ay), (1 - ax) * ay, ax * ay], 1)
    return rows, cols, w


def sample_uv_mask_numpy(mask, vertex_uv, parts):
    """NumPy reference of :func:`sample_uv_mask_numba` (weighted sum over :func:`bilinear_taps`)."""
    m = np.asarray(mask, dtype=np.float64)
    rows, cols, w = bilinear_taps(vertex_uv, m.shape[0])
    q = np.asarray(parts, dtype=np.int64)[:, None]
    return np.sum(w * m[rows, cols, np.broadcast_to(q, rows.shape)], axis=1)


# --------------------------------------------------------------------------------------------
# the mask object
# --------------------------------------------------------------------------------------------


class UVDamageMask:
    """A UV-space damage mask of one mesh (flat-cost mode, texture variant).

    Parameters
    ----------
    bind_vertices : (N, 3) float, bind-pose positions, metres.
    faces : (F, 3) int.
    vertex_uv : (N, 2) float, the UV each vertex reads the mask at (its uv0; for a seam vertex any of
        its corners' UVs).
    uv_coords, uv_faces : optional per-corner UV layout ((T, 2) and (F, 3)); default: ``vertex_uv``
        indexed by ``faces``.
    n_parts : int, default 1, body parts (texture channels).
    size : int, default 512, texture side in texels.
    padding : int, default 2, gutter in texels.

    Attributes
    ----------
    mask : (S, S, P) float32, the damage per texel and part, 0..1.
    texel_positions : (S, S, 3) float64; valid, covered : (S, S) bool (see :func:`rasterize_uv_positions`).
    """

    def __init__(self, bind_vertices, faces, vertex_uv, *, uv_coords=None, uv_faces=None, n_parts: int = 1,
                 size: int = 512, padding: int = 2):
        v = as_points(bind_vertices, "bind_vertices")
        self.vertex_uv = _check_uv(vertex_uv, len(v), "vertex_uv")
        if (uv_coords is None) != (uv_faces is None):
            raise KisekaeError("give both uv_coords and uv_faces, or neither", "uv_faces")
        if int(n_parts) != n_parts or not 1 <= int(n_parts) <= 256:
            raise KisekaeError(f"must be an integer in 1..256, got {n_parts!r}", "n_parts")
        uv, uf = (self.vertex_uv, None) if uv_coords is None else (uv_coords, uv_faces)
        self.texel_positions, self.valid, self.covered = rasterize_uv_positions(v, faces, uv, uf, size=size,
                                                                                padding=padding)
        self.size = self.texel_positions.shape[0]
        self.n_parts = int(n_parts)
        self.bind_vertices = v
        ids = np.flatnonzero(self.valid.ravel())
        self._ids = ids.astype(np.int64)
        self._pos = np.ascontiguousarray(self.texel_positions.reshape(-1, 3)[ids])
        self.mask = np.zeros((self.size, self.size, self.n_parts), np.float32)

    def clear(self) -> None:
        """Set every texel back to 0 (no damage)."""
        self.mask[...] = 0.0

    def accumulate(self, hit_position, hit_part: int, hole_size: float, hole_intensity: float, part_reach,
                   part_gain) -> None:
        """Add one hit (bind-pose point, metres) into the mask; cost O(valid texels x parts), once."""
        x = np.asarray(hit_position, dtype=np.float64).reshape(-1)
        if x.shape != (3,) or not np.all(np.isfinite(x)):
            raise KisekaeError(f"hit position must be 3 finite numbers, got {hit_position!r}", "hit")
        reach = np.asarray(part_reach, dtype=np.float64).reshape(-1)
        gain = np.asarray(part_gain, dtype=np.float64).reshape(-1)
        if reach.size < self.n_parts or gain.size < self.n_parts:
            raise KisekaeError(f"need {self.n_parts} values per part, got {reach.size} and {gain.size}",
                               "part_reach/part_gain")
        flat = self.mask.reshape(-1, self.n_parts)
        accumulate_hit_uv_numba(flat, self._pos, self._ids, x, int(hit_part), float(hole_size),
                                float(hole_intensity), reach, gain)

    def sample(self, parts, out=None) -> np.ndarray:
        """Per-vertex morph parameter ``p`` (N,) float32: bilinear read at each vertex's UV, its part's channel."""
        n = len(self.vertex_uv)
        q = np.ascontiguousarray(parts, dtype=np.int64).reshape(-1)
        if q.shape != (n,):
            raise KisekaeError(f"expected ({n},) part ids, got {q.shape}", "parts")
        if n and (q.min() < 0 or q.max() >= self.n_parts):
            raise KisekaeError(f"part ids must be in 0..{self.n_parts - 1}", "parts")
        if out is None:
            out = np.empty(n, np.float32)
        return sample_uv_mask_numba(self.mask, self.vertex_uv, q, out)

    def tap_distance(self) -> np.ndarray:
        """Per vertex, the largest distance (metres) from its bind position to the bind points of its
        four bilinear taps; ``inf`` where a tap is not a valid texel. This is the resolution error in
        metres that bounds ``|p_uv - p_vertex|`` (see the module docstring)."""
        rows, cols, w = bilinear_taps(self.vertex_uv, self.size)
        tp = self.texel_positions[rows, cols]  # (N, 4, 3)
        d = np.linalg.norm(tp - self.bind_vertices[:, None, :], axis=2)
        d = np.where(self.valid[rows, cols] | (w == 0), d, np.inf)
        d = np.where(w == 0, 0.0, d)
        return d.max(axis=1)

"""Edge-mean tension, compatible with cgvirus's Blender "Tension Map" node group.

For vertex i with welded incident edges N(i)::

    l_i = mean_{j in N(i)} |v_i - v_j|          (Blender: edge length captured on edges, read on points)
    T_i = safe_divide(l_rest_i, l_deformed_i)    (Blender: Divide node, 0 for a zero divisor)

and then :func:`kisekae.tension.blender.map_ratio` turns T into Compress / Stretch / Tension maps.

Degenerate cases (all follow Blender's evaluation of the graph):

* isolated vertex (no edge): both means are 0 (Blender's domain interpolation default), T = 0,
  so stretch = clamp(F) * W' when a > 0 (the vertex reads as fully stretched) and compress = 0;
* zero-length edges count as length 0 in the mean. If every deformed incident edge has length 0
  (the vertex's neighbourhood collapsed to a point) T = 0, not infinity, exactly like the Divide
  node; a zero rest mean with a non-zero deformed mean gives T = 0 too;
* S >= 2 and large C (about C > 141): the ramp collapses and that channel is clamp(F) * W' at
  every vertex; see :func:`kisekae.tension.blender.map_params`.

The per-frame work is one pass over the unique welded edges plus one pass over the vertices
(:class:`TensionPlan`); everything that depends only on the rest pose is computed once.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import NamedTuple

import numba
import numpy as np

from ..errors import KisekaeError
from ..geom.edges import check_edges, face_edges, unique_pairs
from ..geom.weld import as_weld, weld_map
from ..validate import as_points
from .blender import MapParams, map_params, map_ratio_params, safe_divide


class TensionResult(NamedTuple):
    """Per-vertex tension. All arrays float32, one row per vertex of the input mesh.

    Attributes
    ----------
    ratio : (N,) float32
        T = mean rest edge length / mean deformed edge length (dimensionless; > 1 compressed).
    compress : (N,) float32
        Compress Map in [0, 1] (the red channel of ``color``).
    stretch : (N,) float32
        Stretch Map in [0, 1] (the green channel of ``color``).
    color : (N, 3) float32
        Tension Map, RGB = (compress, stretch, 0).
    """

    ratio: np.ndarray
    compress: np.ndarray
    stretch: np.ndarray
    color: np.ndarray


def empty_result(n: int) -> TensionResult:
    """Allocate a :class:`TensionResult` for ``n`` vertices (to pass as ``out=``)."""
    return TensionResult(
        np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros((n, 3), np.float32)
    )


# --------------------------------------------------------------------------------------------
# Numba kernels (float32 arithmetic in Blender's operation order)
# --------------------------------------------------------------------------------------------


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _edge_length_sums(pos, edges, sums):
    """sums[i] = sum of |pos[i] - pos[j]| over edges (i, j); float32 like Blender."""
    for k in range(sums.shape[0]):
        sums[k] = np.float32(0.0)
    for e in range(edges.shape[0]):
        i = edges[e, 0]
        j = edges[e, 1]
        dx = pos[i, 0] - pos[j, 0]
        dy = pos[i, 1] - pos[j, 1]
        dz = pos[i, 2] - pos[j, 2]
        d = np.sqrt(dx * dx + dy * dy + dz * dz)
        sums[i] += d
        sums[j] += d


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _count_nonfinite(flat):
    n = 0
    for k in range(flat.shape[0]):
        x = flat[k]
        n += x - x != np.float32(0.0)
    return n


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _map_vertices(sums, inv_count, rest_mean, a, b, falloff, weight, ratio, compress, stretch):
    """T and the node group's mapping for every index of ``sums`` (branch-free, vectorizes).

    Blender's order of operations in float32: mean = sum * (1/n); T = safe_divide(rest, mean);
    Map Range smoothstep with safe_divide; F * ...; clamp; * clamp(W, 0, 1).
    """
    zero = np.float32(0.0)
    one = np.float32(1.0)
    two = np.float32(2.0)
    three = np.float32(3.0)
    den_s = one - a
    den_c = one - b
    use_s = den_s != zero
    use_c = den_c != zero
    ds = den_s if use_s else one
    dc = den_c if use_c else one
    for v in range(sums.shape[0]):
        mean = sums[v] * inv_count[v]
        nz = mean != zero
        t = rest_mean[v] / (mean if nz else one)
        t = t if nz else zero
        # stretch = F * (1 - smoothstep(a, 1, T))
        f = (t - a) / ds
        f = f if use_s else zero
        f = min(max(f, zero), one)
        s = falloff * (one - (three - two * f) * (f * f))
        s = min(max(s, zero), one) * weight
        # compress = F * (1 - smoothstep(b, 1, T)): the same chain as stretch, From Min b, From Max 1
        g = (t - b) / dc
        g = g if use_c else zero
        g = min(max(g, zero), one)
        c = falloff * (one - (three - two * g) * (g * g))
        c = min(max(c, zero), one) * weight
        ratio[v] = t
        stretch[v] = s
        compress[v] = c


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _finish(dups, weld, ratio, compress, stretch, color):
    """Copy representatives' values to welded duplicates, then fill the RGB colour."""
    for k in range(dups.shape[0]):
        d = dups[k]
        r = weld[d]
        ratio[d] = ratio[r]
        compress[d] = compress[r]
        stretch[d] = stretch[r]
    zero = np.float32(0.0)
    for v in range(ratio.shape[0]):
        color[v, 0] = compress[v]
        color[v, 1] = stretch[v]
        color[v, 2] = zero


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _tension_frame(pos, flat, edges, sums, inv_count, rest_mean, dups, weld, a, b, falloff, weight,
                   ratio, compress, stretch, color):
    """One frame: returns the number of non-finite coordinates (0 = success)."""
    nbad = _count_nonfinite(flat)
    if nbad:
        return nbad
    _edge_length_sums(pos, edges, sums)
    _map_vertices(sums, inv_count, rest_mean, a, b, falloff, weight, ratio, compress, stretch)
    _finish(dups, weld, ratio, compress, stretch, color)
    return 0


# --------------------------------------------------------------------------------------------
# Plan
# --------------------------------------------------------------------------------------------


def _topology(n, faces, edges, weld, weld_tolerance, rest):
    if weld is True:
        wmap = weld_map(rest, weld_tolerance)
    elif weld is False or weld is None:
        wmap = np.arange(n, dtype=np.int32)
    else:
        wmap = as_weld(weld, n).astype(np.int32)
        # make it idempotent: representative of the representative
        for _ in range(4):
            nxt = wmap[wmap]
            if np.array_equal(nxt, wmap):
                break
            wmap = nxt
        else:
            raise KisekaeError("weld map does not settle (it must map vertices to representatives)", "weld")
    if edges is not None:
        pairs = check_edges(edges, n)
    elif faces is not None:
        pairs = face_edges(faces, n)
    else:
        raise KisekaeError("give faces or edges", "faces")
    return wmap, unique_pairs(pairs, wmap)


class TensionPlan:
    """Rest-pose precomputation for per-frame edge tension.

    Building a plan welds the mesh, extracts unique welded edges (sorted), counts incident edges
    and measures rest means. :meth:`evaluate` then costs one edge loop and one vertex loop.

    Parameters
    ----------
    rest : (N, 3) float array
        Rest ("Reference") positions in metres.
    faces : (F, 3) or (F, 4) int array, optional
        Triangles or quads. Edges are polygon sides (quads contribute no diagonal, as in
        Blender). Pass the quads of a quad mesh to match Blender on that mesh.
    edges : (E, 2) int array, optional
        Explicit edges instead of ``faces`` (loose edges count too).
    weld : bool or (N,) int array, default True
        True welds vertices with equal rest positions (across UV/normal seams); False keeps the
        topology as given; an array is used as the weld map (e.g. ``Mesh.weld``).
    weld_tolerance : float, default 0.0
        See :func:`kisekae.geom.weld.weld_map`.
    falloff, stretch_area, compress_area, weight_limit : float
        Node group inputs, see :func:`kisekae.tension.blender.map_params`. Change them later with
        :meth:`set_params`.

    Attributes
    ----------
    n_vertices : int
    weld : (N,) int32
        Representative vertex of each vertex.
    edges : (E, 2) int32
        Unique welded edges (representative indices).
    counts : (N,) int32
        Incident welded edges, stored at representatives.
    rest_mean : (N,) float32
        Mean rest edge length in metres, stored at representatives.
    params : MapParams
    """

    def __init__(
        self,
        rest,
        faces=None,
        *,
        edges=None,
        weld=True,
        weld_tolerance: float = 0.0,
        falloff: float = 1.0,
        stretch_area: float = 1.0,
        compress_area: float = 1.0,
        weight_limit: float = 1.0,
    ):
        rest = as_points(rest, "rest", dtype=np.float32)
        n = rest.shape[0]
        self.n_vertices = n
        self.rest = rest
        self.weld, self.edges = _topology(n, faces, edges, weld, weld_tolerance, rest)
        self.dups = np.flatnonzero(self.weld != np.arange(n)).astype(np.int32)
        self.counts = np.bincount(self.edges.ravel(), minlength=n).astype(np.int32)
        self.inv_count = np.zeros(n, np.float32)
        nz = self.counts > 0
        self.inv_count[nz] = np.float32(1.0) / self.counts[nz].astype(np.float32)
        self._sums = np.zeros(n, np.float32)
        self.rest_mean = np.zeros(n, np.float32)
        _edge_length_sums(rest, self.edges, self._sums)
        self.rest_mean[:] = self._sums * self.inv_count
        self.set_params(falloff, stretch_area, compress_area, weight_limit)

    def set_params(self, falloff=1.0, stretch_area=1.0, compress_area=1.0, weight_limit=1.0) -> None:
        """Set the four node-group inputs used by :meth:`evaluate` (validated here, once)."""
        self.params: MapParams = map_params(falloff, stretch_area, compress_area, weight_limit)
        self._consts = _consts(self.params)

    def _check_deformed(self, deformed, name):
        if (
            isinstance(deformed, np.ndarray)
            and deformed.dtype == np.float32
            and deformed.flags.c_contiguous
            and deformed.shape == (self.n_vertices, 3)
        ):
            return deformed  # fast path: finiteness is checked inside the kernel
        arr = as_points(deformed, name, dtype=np.float32)
        if arr.shape[0] != self.n_vertices:
            raise KisekaeError(
                f"has {arr.shape[0]} vertices but the rest mesh has {self.n_vertices}", name
            )
        return arr

    def _check_out(self, out):
        n = self.n_vertices
        for field, shape in zip(TensionResult._fields, [(n,), (n,), (n,), (n, 3)]):
            arr = getattr(out, field, None)
            if not (isinstance(arr, np.ndarray) and arr.dtype == np.float32 and arr.shape == shape
                    and arr.flags.c_contiguous and arr.flags.writeable):
                raise KisekaeError(f"{field} must be a writeable C-contiguous float32 array of shape {shape}", "out")

    def evaluate(self, deformed, out: TensionResult | None = None, *, name: str = "deformed") -> TensionResult:
        """Tension of one deformed frame (Numba kernel).

        Parameters
        ----------
        deformed : (N, 3) float array
            Deformed positions in metres, same vertex order as the rest mesh. float32
            C-contiguous input is used without a copy.
        out : TensionResult, optional
            Preallocated arrays (see :func:`empty_result`) to write into; avoids allocation
            per frame.
        name : str
            Argument name used in error messages.

        Returns
        -------
        TensionResult

        Raises
        ------
        KisekaeError
            Wrong shape or vertex count, or a non-finite position.
        """
        return self._run(self._check_deformed(deformed, name), out, self._consts, name)

    def _run(self, pos, out, consts, name):
        """The kernel call of :meth:`evaluate` with explicit float32 ``(a, b, F, W')`` constants."""
        if out is None:
            out = empty_result(self.n_vertices)
        else:
            self._check_out(out)
        a, b, f, w = consts
        nbad = _tension_frame(
            pos, pos.reshape(-1), self.edges, self._sums, self.inv_count, self.rest_mean, self.dups, self.weld,
            a, b, f, w, out.ratio, out.compress, out.stretch, out.color,
        )
        if nbad:
            row = int(np.argmax(~np.isfinite(pos).all(axis=1)))
            raise KisekaeError(f"non-finite value (NaN or inf) at row {row}", name)
        return out

    def evaluate_numpy(self, deformed, *, name: str = "deformed") -> TensionResult:
        """Same as :meth:`evaluate`, written with NumPy ``bincount`` (the reference)."""
        pos = as_points(deformed, name, dtype=np.float32)
        if pos.shape[0] != self.n_vertices:
            raise KisekaeError(f"has {pos.shape[0]} vertices but the rest mesh has {self.n_vertices}", name)
        rest_mean = _mean_lengths_numpy(self.rest, self.edges, self.inv_count)
        ratio = safe_divide(rest_mean, _mean_lengths_numpy(pos, self.edges, self.inv_count))[self.weld]
        m = map_ratio_params(ratio, self.params)
        return TensionResult(ratio, m.compress, m.stretch, m.color)


def _consts(p: MapParams) -> tuple:
    return np.float32(p.a), np.float32(p.b), np.float32(p.falloff), np.float32(p.weight)


#: Plans kept by :func:`tension_map`, most recently used last (see :func:`cached_plan`).
PLAN_CACHE_SIZE = 8
_plans: OrderedDict = OrderedDict()
_plans_lock = threading.Lock()


def _plan_key(rest, faces, edges, weld, weld_tolerance):
    """A digest of everything a plan depends on, or None when an input is not a plain array."""
    h = hashlib.sha256()
    for label, a in (("rest", rest), ("faces", faces), ("edges", edges),
                     ("weld", None if isinstance(weld, bool) or weld is None else weld)):
        if a is None:
            h.update(f"{label}:none;".encode())
            continue
        try:
            arr = np.ascontiguousarray(a)
        except (TypeError, ValueError):
            return None
        if arr.dtype == object:
            return None
        h.update(f"{label}:{arr.dtype.str}{arr.shape};".encode())
        h.update(memoryview(arr).cast("B"))
    h.update(repr((weld if isinstance(weld, bool) or weld is None else "array", float(weld_tolerance))).encode())
    return h.digest()


def cached_plan(rest, faces=None, *, edges=None, weld=True, weld_tolerance: float = 0.0) -> TensionPlan:
    """The :class:`TensionPlan` of a rest mesh, built once and then reused (what :func:`tension_map` calls).

    Plans are keyed by a SHA-256 digest of the rest positions (float32), the faces or edges, the weld
    map and ``weld_tolerance``, so an array edited in place gets a new plan. The last
    :data:`PLAN_CACHE_SIZE` plans are kept (least recently used dropped first). Hashing costs
    about 1 ms per 50,000 vertices; building a plan costs about 100-200 ms.

    Parameters
    ----------
    rest, faces, edges, weld, weld_tolerance
        As for :class:`TensionPlan`. The plan's map parameters are the defaults; callers pass
        their own constants (the cached plan is shared, so it is never modified).

    Returns
    -------
    TensionPlan
    """
    rest_a = as_points(rest, "rest", dtype=np.float32)
    key = _plan_key(rest_a, faces, edges, weld, weld_tolerance)
    if key is not None:
        with _plans_lock:
            plan = _plans.get(key)
            if plan is not None:
                _plans.move_to_end(key)
                return plan
    plan = TensionPlan(rest_a.copy(), faces, edges=edges, weld=weld, weld_tolerance=weld_tolerance)
    if key is not None:
        with _plans_lock:
            _plans[key] = plan
            while len(_plans) > PLAN_CACHE_SIZE:
                _plans.popitem(last=False)
    return plan


def clear_plan_cache() -> None:
    """Forget every plan kept by :func:`tension_map`."""
    with _plans_lock:
        _plans.clear()


def _mean_lengths_numpy(pos, edges, inv_count):
    d = np.sqrt(np.sum(np.square(pos[edges[:, 0]] - pos[edges[:, 1]]), axis=1, dtype=np.float32))
    n = pos.shape[0]
    sums = np.bincount(edges[:, 0], d, minlength=n) + np.bincount(edges[:, 1], d, minlength=n)
    return sums.astype(np.float32) * inv_count


def _prepare(rest, deformed):
    rest_a = as_points(rest, "rest", dtype=np.float32)
    def_a = as_points(deformed, "deformed", dtype=np.float32)
    if def_a.shape[0] != rest_a.shape[0]:
        raise KisekaeError(
            f"has {def_a.shape[0]} vertices but rest has {rest_a.shape[0]}; both must list the same vertices",
            "deformed",
        )
    return rest_a, def_a


def tension_map(rest, deformed, faces=None, *, falloff: float = 1.0, stretch_area: float = 1.0,
                compress_area: float = 1.0, weight_limit: float = 1.0, edges=None, weld=True,
                weld_tolerance: float = 0.0) -> TensionResult:
    """Tension of a deformed mesh against its rest pose, like cgvirus's node group (Numba).

    The rest-pose set-up (weld, edges, rest means) is cached per rest mesh (:func:`cached_plan`),
    so calling this every frame with the same ``rest`` and ``faces`` costs one hash of the inputs
    plus the per-frame kernel. A :class:`TensionPlan` kept by the caller skips the hash too.

    Parameters
    ----------
    rest : (N, 3) float array
        Rest ("Reference") positions, metres.
    deformed : (N, 3) float array
        Deformed ("Geometry") positions, metres, same vertex order.
    faces : (F, 3) or (F, 4) int array
        Triangles or quads (polygon sides are the edges; no quad diagonals).
    falloff : float, default 1.0
        Falloff F, strength of both channels.
    stretch_area : float, default 1.0
        Stretch Area S; stretch ramps from T = smin(S, 1, 1) up to T = 1.
    compress_area : float, default 1.0
        Compress Area C; compress ramps from T = 1 up to T = smax(1 / max(C, 0.001), 1, 1)
        (for C above about 141 that bound rounds to 1 and compress is clamp(F) * W' everywhere).
    weight_limit : float, default 1.0
        Weight Limit W; outputs are scaled by clamp(W, 0, 1).
    edges : (E, 2) int array, optional
        Explicit edges instead of ``faces``.
    weld : bool or (N,) int array, default True
        Weld by position so tension is continuous across UV/normal seams (see :class:`TensionPlan`).
        On a mesh that is really split (two sheets that only touch, e.g. a garment's separate
        panels meeting at a seam line) welding joins them and differs from Blender, which keeps
        them apart; ``weld=False`` uses the topology as given, which is what Blender does.
    weld_tolerance : float, default 0.0
        Position tolerance of the weld in metres (0 = exact).

    Returns
    -------
    TensionResult
        ``ratio``, ``compress``, ``stretch`` (N,) and ``color`` (N, 3), float32.

    Raises
    ------
    KisekaeError
        Different vertex counts, non-finite positions, bad shapes or face indices out of range.
    """
    rest_a, def_a = _prepare(rest, deformed)
    consts = _consts(map_params(falloff, stretch_area, compress_area, weight_limit))
    plan = cached_plan(rest_a, faces, edges=edges, weld=weld, weld_tolerance=weld_tolerance)
    return plan._run(plan._check_deformed(def_a, "deformed"), None, consts, "deformed")


def tension_map_numpy(rest, deformed, faces=None, *, falloff: float = 1.0, stretch_area: float = 1.0,
                      compress_area: float = 1.0, weight_limit: float = 1.0, edges=None, weld=True,
                      weld_tolerance: float = 0.0) -> TensionResult:
    """NumPy reference of :func:`tension_map` (``bincount`` over edges); same parameters and result."""
    rest_a, def_a = _prepare(rest, deformed)
    plan = TensionPlan(
        rest_a, faces, edges=edges, weld=weld, weld_tolerance=weld_tolerance, falloff=falloff,
        stretch_area=stretch_area, compress_area=compress_area, weight_limit=weight_limit,
    )
    return plan.evaluate_numpy(def_a)

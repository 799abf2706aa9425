"""Bake a damaged shape into a start mesh: correspondence, encodings and their error table."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import KisekaeError
from ..validate import as_faces, as_per_vertex, as_points
from ..geom.normals import vertex_normals
from .correspond import Correspondence, correspond_closest, correspond_uv
from .encode import ENCODINGS, Encoded, encode, encoding_errors, format_error_table, texel_uv, vertex_limit

METHODS = ("closest", "uv")


@dataclass
class BakeResult:
    """Everything a bake produces (see :func:`bake`).

    Attributes
    ----------
    start_vertices : (N, 3) float32 metres; start_faces : (F, 3) int32; start_normals : (N, 3) float32.
    uv0 : (N, 2) float32 or None, the start mesh's own UVs.
    uv1 : (N, 2) float32 or None, the correspondence UVs (given for 'uv'; the target's uv0 at the
        matched point for 'closest' when the target has UVs).
    parts : (N,) uint8 body-part ids.
    correspondence : Correspondence.
    target_positions, target_normals : (N, 3) float32, exact target per start vertex.
    encodings : dict name -> Encoded.
    errors : list of dict rows (see :func:`kisekae.wound.encode.encoding_errors`).
    skipped : dict name -> reason, encodings left out because the mesh is over their limit.
    start_role : 'normal' or 'damaged', which of the two shapes the start mesh is.
    """

    start_vertices: np.ndarray
    start_faces: np.ndarray
    start_normals: np.ndarray
    uv0: np.ndarray | None
    uv1: np.ndarray | None
    parts: np.ndarray
    correspondence: Correspondence
    target_positions: np.ndarray
    target_normals: np.ndarray
    encodings: dict
    errors: list
    skipped: dict = field(default_factory=dict)
    start_role: str = "normal"

    def error_table(self) -> str:
        """The encoding error table as text (position error in mm, normal error in degrees)."""
        return format_error_table(self.errors)

    def texel_uv(self, encoding: str) -> np.ndarray:
        """(N, 2) float32 texel-centre UVs of each vertex's data for ``encoding`` (uv2 of the output mesh)."""
        return texel_uv(len(self.start_vertices), self.encodings[encoding].side)

    def decoded(self, encoding: str):
        """(positions, normals) float64 as the shader decodes them for ``encoding``."""
        from .encode import decode
        return decode(self.encodings[encoding], self.start_vertices)


def _choose_encodings(n: int, encodings) -> tuple[list, dict]:
    """``(chosen, skipped)``: the named encodings (each must fit ``n`` vertices), or every one that fits."""
    if encodings is None:
        chosen = [k for k in ENCODINGS if n <= vertex_limit(k)]
        return chosen, {k: f"{n} vertices > limit {vertex_limit(k)}" for k in ENCODINGS if n > vertex_limit(k)}
    chosen = list(encodings)
    for k in chosen:
        if k not in ENCODINGS:
            raise KisekaeError(f"unknown encoding {k!r}; choose from {', '.join(ENCODINGS)}", "encodings")
        if n > vertex_limit(k):
            raise KisekaeError(f"the start mesh has {n} vertices, over the {k} encoding's limit of "
                               f"{vertex_limit(k)} (its texture is addressed by vertex id); "
                               f"choose another encoding or split the mesh", "encodings")
    return chosen, {}


def _uv_sets(method, corr, n, start_uv0, start_uv1, target_uv0, target_faces):
    """``(uv0, uv1)`` float32 of the start mesh; ``uv1`` is the target's UVs carried over when not given."""
    uv0 = None if start_uv0 is None else as_per_vertex(start_uv0, n, "start_uv0").astype(np.float32)
    if method == "uv":
        return uv0, as_per_vertex(start_uv1, n, "start_uv1").astype(np.float32)
    if target_uv0 is not None:
        tv = np.asarray(target_uv0, dtype=np.float64)
        tf = np.asarray(target_faces, dtype=np.int64)
        return uv0, np.einsum("nk,nkj->nj", corr.bary, tv[tf[np.maximum(corr.face, 0)]]).astype(np.float32)
    return uv0, None


def bake(start_vertices, start_faces, target_vertices, target_faces, method="closest", *, start_uv0=None,
         start_uv1=None, target_uv0=None, start_normals=None, target_normals=None, parts=None, encodings=None,
         start_role="normal", max_distance=np.inf, max_uv_distance=0.01) -> BakeResult:
    """Bake the target (e.g. damaged) shape into the start mesh.

    Parameters
    ----------
    start_vertices : (N, 3) float, metres; start_faces : (F, 3) int
        The mesh that is drawn at runtime. Either shape may be the start mesh (see ``start_role``).
    target_vertices : (M, 3) float, metres; target_faces : (G, 3) int
        The shape to morph towards; its topology may differ from the start mesh's.
    method : {'closest', 'uv'}, default 'closest'
        Correspondence: closest point in 3D, or the article's second UV set ``start_uv1`` matched
        against ``target_uv0``.
    start_uv0, start_uv1 : (N, 2) float, optional; target_uv0 : (M, 2) float, optional.
    start_normals : (N, 3) float, optional; area-weighted normals when omitted.
    target_normals : (M, 3) float, optional; area-weighted normals when omitted.
    parts : (N,) int in 0..255, optional, body-part id per start vertex (default 0).
    encodings : list of str, optional
        Encodings to produce. Default: every encoding whose vertex limit the mesh fits (the others
        are listed in ``skipped``). Naming an encoding whose limit the mesh exceeds is an error.
    start_role : {'normal', 'damaged'}, default 'normal'
        Recorded in the sidecar: with 'damaged' the runtime morph weight is ``1 - p``.
    max_distance : float, metres, default inf (closest method: farther matches are unmatched).
    max_uv_distance : float, UV units, default 0.01 (UV method).

    Returns
    -------
    BakeResult
    """
    if method not in METHODS:
        raise KisekaeError(f"unknown method {method!r}; choose 'closest' or 'uv'", "method")
    if start_role not in ("normal", "damaged"):
        raise KisekaeError(f"must be 'normal' or 'damaged', got {start_role!r}", "start_role")
    sv = as_points(start_vertices, "start_vertices")
    sf = as_faces(start_faces, len(sv), "start_faces")
    n = len(sv)
    chosen, skipped = _choose_encodings(n, encodings)
    if method == "uv":
        corr = correspond_uv(sv, sf, start_uv1, target_vertices, target_faces, target_uv0,
                             target_normals=target_normals, max_uv_distance=max_uv_distance)
    else:
        corr = correspond_closest(sv, sf, target_vertices, target_faces, target_normals=target_normals,
                                  max_distance=max_distance)
    sn = (vertex_normals(sv, sf, dtype=np.float64) if start_normals is None
          else as_points(start_normals, "start_normals"))
    if sn.shape != sv.shape:
        raise KisekaeError(f"expected {sv.shape}, got {sn.shape}", "start_normals")
    # unmatched vertices keep the start normal given by the caller
    corr.normals = np.where(corr.matched[:, None], corr.normals, sn)
    p = np.zeros(n, np.uint8) if parts is None else as_per_vertex(parts, n, "parts", dtype=np.int64)
    if p.size and (p.min() < 0 or p.max() > 255):
        raise KisekaeError("body-part ids must be in 0..255", "parts")
    p = p.astype(np.uint8)
    sv32 = sv.astype(np.float32)
    tpos = corr.positions.astype(np.float32)
    tnrm = corr.normals.astype(np.float32)
    encs: dict[str, Encoded] = {}
    rows = []
    for k in chosen:
        # encode from the float32 arrays the runtime mesh will hold, compare with the exact float64 target
        e = encode(k, sv32, corr.positions, corr.normals, p)
        encs[k] = e
        rows.append(encoding_errors(e, sv32, corr.positions, corr.normals, mask=corr.matched))
    uv0, uv1 = _uv_sets(method, corr, n, start_uv0, start_uv1, target_uv0, target_faces)
    return BakeResult(sv32, sf, sn.astype(np.float32), uv0, uv1, p, corr, tpos, tnrm, encs, rows, skipped,
                      start_role)

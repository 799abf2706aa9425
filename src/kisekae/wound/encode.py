"""Encodings of the target positions and normals that the start mesh's shader morphs towards.

Data are addressed by vertex id: vertex ``i`` lives in texel ``(i % W, i // W)`` of a square
``W x W`` texture (``W`` a power of two, the smallest that holds every vertex). The mesh carries the
texel centre in a UV set too, for shading languages without a vertex id.

=========  ===========================================  ==========================  ===============
name       positions                                    normals                     vertex limit
=========  ===========================================  ==========================  ===============
article8   absolute, 8-bit vertex colour RGB, unorm      8-bit RGB texture           65,536 (256^2)
           over the target's bounding box               (n * 0.5 + 0.5)
delta8     delta (target - start), 8-bit vertex colour  8-bit RGB texture           65,536
           RGB, unorm over the deltas' bounding box
delta16    delta, 16-bit RGB texture (PNG), unorm over  16-bit RGB texture          16,777,216
           the deltas' bounding box                                                 (4096^2)
half       delta, half-float RGB texture (EXR)          half-float RGB texture      16,777,216
float      delta, float RGB texture (EXR)               float RGB texture           16,777,216
=========  ===========================================  ==========================  ===============

The article's layout is ``article8``: it stores positions in vertex colours normalised to the
bounding box and normals in a small texture, which limits the mesh to 65,536 vertices. The vertex
colour's alpha channel holds the body-part id in every encoding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import KisekaeError

#: name -> (position kind, position storage, normal storage, max texture side)
ENCODINGS = {
    "article8": ("absolute", "vertex_color8", "unorm8", 256),
    "delta8": ("delta", "vertex_color8", "unorm8", 256),
    "delta16": ("delta", "unorm16", "unorm16", 4096),
    "half": ("delta", "float16", "float16", 4096),
    "float": ("delta", "float32", "float32", 4096),
}

#: The encoding recommended for production (smallest error that ships in ordinary PNGs).
BEST_ENCODING = "delta16"


def vertex_limit(encoding: str) -> int:
    """Largest vertex count an encoding can address (texture side squared)."""
    return ENCODINGS[_check_name(encoding)][3] ** 2


def texture_side(n_vertices: int, encoding: str) -> int:
    """Side ``W`` of the square texture addressed by vertex id; raises if over the limit."""
    name = _check_name(encoding)
    limit = ENCODINGS[name][3]
    if n_vertices > limit * limit:
        raise KisekaeError(
            f"{n_vertices} vertices exceed the {name} encoding's limit of {limit * limit} "
            f"({limit}x{limit} texture addressed by vertex id); decimate the mesh, split it, or use "
            f"an encoding with a larger limit ({', '.join(k for k, v in ENCODINGS.items() if v[3] > limit)})",
            "start mesh")
    w = 1
    while w * w < max(n_vertices, 1):
        w *= 2
    return w


def texel_uv(n_vertices: int, side: int) -> np.ndarray:
    """UV of the texel centre that holds each vertex's data, ``(N, 2)`` float32 (v grows downward)."""
    i = np.arange(n_vertices)
    return np.stack([(i % side + 0.5) / side, (i // side + 0.5) / side], axis=1).astype(np.float32)


def _check_name(name: str) -> str:
    if name not in ENCODINGS:
        raise KisekaeError(f"unknown encoding {name!r}; choose one of {', '.join(ENCODINGS)}", "encoding")
    return name


@dataclass
class Encoded:
    """One encoding of the target shape.

    Attributes
    ----------
    name : str
    side : int, texture side W.
    bounds_min, bounds_max : (3,) float64 metres; the unorm range of the positions (absolute or
        delta). Unused (zeros) for float encodings.
    vertex_colors : (N, 4) uint8; RGB positions for 8-bit encodings (else 0), A body-part id.
    position_texture : (W, W, 3) uint16 / float16 / float32 or None (8-bit encodings use vertex colours).
    normal_texture : (W, W, 3) uint8 / uint16 / float16 / float32.
    """

    name: str
    side: int
    bounds_min: np.ndarray
    bounds_max: np.ndarray
    vertex_colors: np.ndarray
    position_texture: np.ndarray | None
    normal_texture: np.ndarray

    @property
    def position_kind(self) -> str:
        return ENCODINGS[self.name][0]

    def sidecar(self) -> dict:
        kind, pos_store, nrm_store, _ = ENCODINGS[self.name]
        return {
            "name": self.name,
            "positions": kind,
            "position_storage": pos_store,
            "normal_storage": nrm_store,
            "texture_side": self.side,
            "addressing": "texel (i % side, i // side), row 0 at the top; uv2 holds the texel centre",
            "bounds_min_m": [float(x) for x in self.bounds_min],
            "bounds_max_m": [float(x) for x in self.bounds_max],
            "decode_position": _decode_formula(kind, pos_store),
            "decode_normal": "normalize(c * 2 - 1)" if nrm_store.startswith("unorm") else "normalize(c)",
        }


def _decode_formula(kind: str, pos_store: str) -> str:
    c = "c" if pos_store.startswith("float") else "(bounds_min + c * (bounds_max - bounds_min))"
    return f"start + {c}" if kind == "delta" else c


def _unorm(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, bits: int) -> np.ndarray:
    scale = (1 << bits) - 1
    span = np.where(hi > lo, hi - lo, 1.0)
    q = np.rint((x - lo) / span * scale)
    return np.clip(q, 0, scale).astype(np.uint8 if bits == 8 else np.uint16)


def _from_unorm(c: np.ndarray, lo: np.ndarray, hi: np.ndarray, bits: int) -> np.ndarray:
    return lo + c.astype(np.float64) / ((1 << bits) - 1) * (hi - lo)


def _to_texture(rows: np.ndarray, side: int) -> np.ndarray:
    tex = np.zeros((side * side, rows.shape[1]), dtype=rows.dtype)
    tex[: len(rows)] = rows
    return tex.reshape(side, side, rows.shape[1])


def encode(name: str, start_vertices, target_positions, target_normals, parts=None) -> Encoded:
    """Encode target positions and normals for the start mesh.

    Parameters
    ----------
    name : str, one of :data:`ENCODINGS`.
    start_vertices : (N, 3) float, metres.
    target_positions : (N, 3) float, metres (exact target per start vertex).
    target_normals : (N, 3) float, unit.
    parts : (N,) int in 0..255, optional, body-part id per vertex (vertex colour alpha); default 0.

    Returns
    -------
    Encoded
    """
    kind, pos_store, nrm_store, _ = ENCODINGS[_check_name(name)]
    s = np.asarray(start_vertices, dtype=np.float64)
    t = np.asarray(target_positions, dtype=np.float64)
    n = np.asarray(target_normals, dtype=np.float64)
    side = texture_side(len(s), name)
    x = t if kind == "absolute" else t - s
    vc = np.zeros((len(s), 4), dtype=np.uint8)
    if parts is not None:
        p = np.asarray(parts)
        if p.shape != (len(s),) or (p.size and (p.min() < 0 or p.max() > 255)):
            raise KisekaeError(f"expected {len(s)} integers in 0..255", "parts")
        vc[:, 3] = p
    lo = np.zeros(3)
    hi = np.zeros(3)
    pos_tex = None
    if pos_store in ("vertex_color8", "unorm16"):
        lo = x.min(axis=0) if len(x) else lo
        hi = x.max(axis=0) if len(x) else hi
        if pos_store == "vertex_color8":
            vc[:, :3] = _unorm(x, lo, hi, 8)
        else:
            pos_tex = _to_texture(_unorm(x, lo, hi, 16), side)
    else:
        pos_tex = _to_texture(x.astype(np.float16 if pos_store == "float16" else np.float32), side)
    if nrm_store == "unorm8":
        nrm = _unorm(n * 0.5 + 0.5, np.zeros(3), np.ones(3), 8)
    elif nrm_store == "unorm16":
        nrm = _unorm(n * 0.5 + 0.5, np.zeros(3), np.ones(3), 16)
    else:
        nrm = n.astype(np.float16 if nrm_store == "float16" else np.float32)
    return Encoded(name, side, lo, hi, vc, pos_tex, _to_texture(nrm, side))


def decode(enc: Encoded, start_vertices) -> tuple[np.ndarray, np.ndarray]:
    """Decode an :class:`Encoded` the way the shader does.

    Returns
    -------
    positions : (N, 3) float64 metres; normals : (N, 3) float64 unit.
    """
    kind, pos_store, nrm_store, _ = ENCODINGS[enc.name]
    s = np.asarray(start_vertices, dtype=np.float64)
    n_v = len(s)
    if pos_store == "vertex_color8":
        x = _from_unorm(enc.vertex_colors[:, :3], enc.bounds_min, enc.bounds_max, 8)
    else:
        rows = enc.position_texture.reshape(-1, 3)[:n_v]
        x = (_from_unorm(rows, enc.bounds_min, enc.bounds_max, 16) if pos_store == "unorm16"
             else rows.astype(np.float64))
    pos = x if kind == "absolute" else s + x
    rows = enc.normal_texture.reshape(-1, 3)[:n_v]
    if nrm_store.startswith("unorm"):
        nrm = _from_unorm(rows, np.zeros(3), np.ones(3), 8 if nrm_store == "unorm8" else 16) * 2.0 - 1.0
    else:
        nrm = rows.astype(np.float64)
    ln = np.linalg.norm(nrm, axis=1, keepdims=True)
    nrm = np.divide(nrm, ln, out=np.zeros_like(nrm), where=ln > 0)
    return pos, nrm


def encoding_errors(enc: Encoded, start_vertices, target_positions, target_normals, mask=None) -> dict:
    """Position and normal error of one encoding against the exact target.

    Parameters
    ----------
    mask : (N,) bool, optional; only these vertices count (e.g. the matched ones).

    Returns
    -------
    dict with ``max_mm``, ``mean_mm`` (position error, millimetres), ``max_deg``, ``mean_deg``
    (angle between decoded and exact normal, degrees) and ``bytes`` (storage of the encoded data).
    """
    pos, nrm = decode(enc, start_vertices)
    t = np.asarray(target_positions, dtype=np.float64)
    n = np.asarray(target_normals, dtype=np.float64)
    m = np.ones(len(t), bool) if mask is None else np.asarray(mask, bool)
    if not m.any():
        return {"encoding": enc.name, "max_mm": 0.0, "mean_mm": 0.0, "max_deg": 0.0, "mean_deg": 0.0,
                "bytes": 0}
    dp = np.linalg.norm(pos[m] - t[m], axis=1) * 1000.0
    cosang = np.clip(np.einsum("ij,ij->i", nrm[m], n[m]), -1.0, 1.0)
    ang = np.degrees(np.arccos(cosang))
    nbytes = enc.normal_texture.nbytes + (enc.position_texture.nbytes if enc.position_texture is not None else 0)
    nbytes += enc.vertex_colors[:, :3].nbytes if ENCODINGS[enc.name][1] == "vertex_color8" else 0
    return {"encoding": enc.name, "max_mm": float(dp.max()), "mean_mm": float(dp.mean()),
            "max_deg": float(ang.max()), "mean_deg": float(ang.mean()), "bytes": int(nbytes)}


def format_error_table(rows: list[dict]) -> str:
    """Plain-text table of :func:`encoding_errors` rows."""
    head = f"{'encoding':<10} {'pos max mm':>11} {'pos mean mm':>12} {'nrm max deg':>12} {'nrm mean deg':>13} {'bytes':>10}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['encoding']:<10} {r['max_mm']:>11.4f} {r['mean_mm']:>12.4f} {r['max_deg']:>12.4f} "
                     f"{r['mean_deg']:>13.4f} {r['bytes']:>10d}")
    return "\n".join(lines)

"""Wrinkle-map blend weights from compress/stretch, with region masks.

A character usually has several wrinkle normal maps (elbow, knee, waist, ...), each meant for
one region and one kind of deformation. Each :class:`WrinkleMap` turns one channel (compress or
stretch) into a weight, restricted to its region by a per-vertex mask. The renderer and the
shader core read the weights per vertex (packed four per RGBA vertex colour).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import KisekaeError


@dataclass
class WrinkleMap:
    """One wrinkle normal map and how it is driven.

    Parameters
    ----------
    name : str
        Name of the map (for reports and shader bindings).
    source : {"compress", "stretch"}
        Channel that drives the map.
    mask : (N,) float array, optional
        Region mask in [0, 1] (None = whole mesh).
    threshold : float, default 0.0
        Channel value below which the map stays off; the ramp runs from ``threshold`` to 1.
    gain : float, default 1.0
        Multiplier after the ramp (the result is clamped to [0, 1]).
    """

    name: str
    source: str = "compress"
    mask: np.ndarray | None = None
    threshold: float = 0.0
    gain: float = 1.0

    def check(self) -> None:
        """:class:`KisekaeError` naming the map if its source, threshold or gain is out of range."""
        if self.source not in ("compress", "stretch"):
            raise KisekaeError(f"source must be 'compress' or 'stretch', got {self.source!r}", self.name)
        if not (0.0 <= self.threshold < 1.0):
            raise KisekaeError(f"threshold must be in [0, 1), got {self.threshold!r}", self.name)
        if not np.isfinite(self.gain) or self.gain < 0:
            raise KisekaeError(f"gain must be finite and >= 0, got {self.gain!r}", self.name)


def region_mask(skin_indices, skin_weights, bones) -> np.ndarray:
    """Per-vertex mask = total skin weight of the given bones (clamped to [0, 1]).

    Parameters
    ----------
    skin_indices : (N, K) int array
        Bone index per influence.
    skin_weights : (N, K) float array
        Weight per influence.
    bones : iterable of int
        Bone indices forming the region.

    Returns
    -------
    (N,) float32
    """
    idx = np.asarray(skin_indices)
    w = np.asarray(skin_weights, dtype=np.float64)
    if idx.shape != w.shape or idx.ndim != 2:
        raise KisekaeError(f"indices {idx.shape} and weights {w.shape} must both be (N, K)", "skin")
    sel = np.isin(idx, np.asarray(list(bones), dtype=np.int64))
    return np.clip((w * sel).sum(axis=1), 0.0, 1.0).astype(np.float32)


def wrinkle_weights(compress, stretch, maps, *, normalize: bool = True) -> np.ndarray:
    """Blend weights of several wrinkle maps.

    ``w_m = clamp(gain * clamp((x - threshold) / (1 - threshold), 0, 1), 0, 1) * mask`` with ``x``
    the map's source channel. With ``normalize`` a vertex whose weights sum above 1 is scaled
    down to sum 1 (so blended normals never exceed a full map).

    Parameters
    ----------
    compress, stretch : (N,) float arrays in [0, 1]
    maps : sequence of WrinkleMap
    normalize : bool, default True

    Returns
    -------
    (N, M) float32
    """
    co = np.asarray(compress, dtype=np.float64)
    st = np.asarray(stretch, dtype=np.float64)
    if co.ndim != 1 or st.shape != co.shape:
        raise KisekaeError(f"compress {co.shape} and stretch {st.shape} must both be (N,)", "compress")
    n = co.shape[0]
    maps = list(maps)
    out = np.zeros((n, len(maps)), np.float64)
    for m, wm in enumerate(maps):
        wm.check()
        x = co if wm.source == "compress" else st
        w = np.clip(wm.gain * np.clip((x - wm.threshold) / (1.0 - wm.threshold), 0, 1), 0, 1)
        if wm.mask is not None:
            mask = np.asarray(wm.mask, dtype=np.float64)
            if mask.shape != (n,):
                raise KisekaeError(f"mask must have shape ({n},), got {mask.shape}", wm.name)
            w = w * np.clip(mask, 0, 1)
        out[:, m] = w
    if normalize and len(maps):
        s = out.sum(axis=1, keepdims=True)
        out = np.where(s > 1.0, out / np.maximum(s, 1e-30), out)
    return out.astype(np.float32)


def pack_rgba(weights) -> np.ndarray:
    """Pack ``(N, M)`` weights into ``(N, ceil(M/4), 4)`` RGBA vertex colours (zero padded)."""
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim != 2:
        raise KisekaeError(f"expected shape (N, M), got {w.shape}", "weights")
    n, m = w.shape
    k = max(1, -(-m // 4))
    out = np.zeros((n, k * 4), np.float32)
    out[:, :m] = w
    return out.reshape(n, k, 4)

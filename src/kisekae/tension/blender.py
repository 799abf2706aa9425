"""Blender's node semantics used by cgvirus's "Tension Map" node group, in float32.

Blender evaluates Geometry Nodes fields in single precision, and the node group's two "area"
parameters go through nodes whose degenerate cases matter (a Map Range whose From Min equals its
From Max, a Smooth Minimum with distance 0). This module reproduces those nodes exactly, in
float32, in the same operation order as Blender's C++ multi-functions, so that results can be
compared against Blender with a 1e-5 tolerance. Everything here is plain NumPy; the Numba kernels
in :mod:`kisekae.tension.edge` repeat the same arithmetic and are tested against these functions.

Semantics (checked against Blender's source, ``BLI_math_base`` and ``node_shader_map_range``):

``smin(x, y, k)``  (Math node, Smooth Minimum)
    ``h = max(k - |x - y|, 0) / k``; result ``min(x, y) - h*h*h*k*(1/6)``; plain ``min`` when
    ``k == 0``.
``smax(x, y, k)``  (Math node, Smooth Maximum)
    ``-smin(-x, -y, k)``.
``map_range_smoothstep(x, e0, e1)``  (Map Range, Float, Smooth Step, To Min 0, To Max 1)
    ``t = clamp(safe_divide(x - e0, e1 - e0), 0, 1)``; result ``(3 - 2t) t^2``. ``safe_divide``
    returns 0 for a zero divisor, so **when e0 == e1 the factor is 0 for every x** and the node
    returns To Min. This is the Geometry Nodes multi-function, which is what evaluates the node
    group; the shader implementations differ (Cycles' SVM returns a step at e1, EEVEE returns 0),
    but they never run inside a Geometry Nodes modifier.
``safe_divide(a, b)``  (Math node, Divide)
    ``a / b``, or 0 when ``b == 0``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import KisekaeError

_F32 = np.float32
_SIXTH = _F32(1.0) / _F32(6.0)

#: Floor applied to Compress Area by the node group's Maximum node.
COMPRESS_AREA_FLOOR = _F32(0.001)


def _f32(x):
    return np.asarray(x, dtype=_F32)


def smin(x, y, k):
    """Blender's Smooth Minimum (Math node), element-wise in float32.

    Parameters
    ----------
    x, y : array_like of float
        Operands (broadcast together).
    k : array_like of float
        Smoothing distance. ``k == 0`` gives the plain minimum.

    Returns
    -------
    numpy.ndarray of float32
        ``min(x, y) - h**3 * k / 6`` with ``h = max(k - |x - y|, 0) / k``.
    """
    x, y, k = np.broadcast_arrays(_f32(x), _f32(y), _f32(k))
    m = np.minimum(x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.maximum(k - np.abs(x - y), _F32(0.0)) / k
        out = m - h * h * h * k * _SIXTH
    return np.where(k != 0, out, m).astype(_F32)


def smax(x, y, k):
    """Blender's Smooth Maximum (Math node): ``-smin(-x, -y, k)``, float32."""
    return (-smin(-_f32(x), -_f32(y), k)).astype(_F32)


def safe_divide(a, b):
    """Blender's Divide (Math node): ``a / b``, or 0 where ``b == 0``; float32."""
    a, b = np.broadcast_arrays(_f32(a), _f32(b))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = a / b
    return np.where(b != 0, q, _F32(0.0)).astype(_F32)


def map_range_smoothstep(x, e0, e1):
    """Blender's Map Range node (Float, Smooth Step) mapping to [0, 1], float32.

    Parameters
    ----------
    x : array_like of float
        Value.
    e0, e1 : array_like of float
        From Min and From Max. ``e0 > e1`` is allowed (the ramp is reversed).

    Returns
    -------
    numpy.ndarray of float32
        ``(3 - 2t) t^2`` with ``t = clamp(safe_divide(x - e0, e1 - e0), 0, 1)``; 0 everywhere
        when ``e0 == e1``.
    """
    x, e0, e1 = np.broadcast_arrays(_f32(x), _f32(e0), _f32(e1))
    t = np.clip(safe_divide(x - e0, e1 - e0), _F32(0.0), _F32(1.0))
    return ((_F32(3.0) - _F32(2.0) * t) * (t * t)).astype(_F32)


class MapParams(NamedTuple):
    """The four node-group inputs reduced to the constants the per-vertex map needs (float32).

    Attributes
    ----------
    a : float
        Stretch ramp start, ``smin(stretch_area, 1, 1)`` (at most 1).
    b : float
        From Min of the compress Map Range, ``smax(1 / max(compress_area, 0.001), 1, 1)`` (at
        least 1); its From Max is 1, so the ramp runs from T = b down to T = 1.
    falloff : float
        Falloff, unclamped (the channels are clamped after scaling).
    weight : float
        ``clamp(weight_limit, 0, 1)``.
    """

    a: float
    b: float
    falloff: float
    weight: float


def _check_param(value, name):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise KisekaeError(f"must be a number, got {value!r}", name) from None
    if not np.isfinite(v):
        raise KisekaeError(f"must be finite, got {value!r}", name)
    return v


def map_params(falloff=1.0, stretch_area=1.0, compress_area=1.0, weight_limit=1.0) -> MapParams:
    """Reduce the node group's inputs to :class:`MapParams`, exactly as the graph does.

    Parameters
    ----------
    falloff : float, default 1.0
        Strength F of both channels (dimensionless). Any finite value; the channels are
        clamped to [0, 1] after scaling.
    stretch_area : float, default 1.0
        Stretch Area S. ``a = smin(S, 1, 1)``; for ``S >= 2`` this is exactly 1, the stretch
        ramp collapses (Map Range with From Min == From Max) and stretch becomes ``clamp(F)``
        at every vertex, as in Blender.
    compress_area : float, default 1.0
        Compress Area C. ``b = smax(1 / max(C, 0.001), 1, 1) = 1 + 1 / (6 C^3)`` for C >= 1. As
        C -> 0, b -> 1000 (compress only near T = 1000, i.e. practically never). For large C
        (C > 140.9: ``1 / (6 C^3)`` falls below half a float32 ulp of 1, 2^-24), b rounds to
        exactly 1, the compress Map Range (From Min b, From Max 1) collapses and returns To Min,
        so compress is ``clamp(F) * W'`` at every vertex, as in Blender (the same as stretch
        with S >= 2).
    weight_limit : float, default 1.0
        Weight Limit W; the output colour is multiplied by ``clamp(W, 0, 1)``.

    Returns
    -------
    MapParams

    Raises
    ------
    KisekaeError
        If a parameter is not a finite number.
    """
    f = _check_param(falloff, "falloff")
    s = _check_param(stretch_area, "stretch_area")
    c = _check_param(compress_area, "compress_area")
    w = _check_param(weight_limit, "weight_limit")
    a = smin(s, 1.0, 1.0)
    inv = safe_divide(1.0, np.maximum(_F32(c), COMPRESS_AREA_FLOOR))
    b = smax(inv, 1.0, 1.0)
    wc = np.clip(_F32(w), _F32(0.0), _F32(1.0))
    return MapParams(float(a), float(b), float(_F32(f)), float(wc))


class MappedRatio(NamedTuple):
    """Output of :func:`map_ratio`; every array has the shape of the input ratio, float32."""

    compress: np.ndarray
    stretch: np.ndarray
    color: np.ndarray


def map_ratio(ratio, falloff=1.0, stretch_area=1.0, compress_area=1.0, weight_limit=1.0) -> MappedRatio:
    """Map tension ratios T to cgvirus's Compress Map, Stretch Map and Tension Map (NumPy).

    This is the reference the shader core is compared with. With ``(a, b, F, W')`` from
    :func:`map_params`::

        stretch  = clamp(F * (1 - smoothstep(a, 1, T)), 0, 1) * W'
        compress = clamp(F * (1 - smoothstep(b, 1, T)), 0, 1) * W'
        color    = (compress, stretch, 0)

    Both channels are the same node chain: a Map Range (Smooth Step) from ``From Min`` (a or b)
    to ``From Max = 1`` onto ``To Min = 1 - F`` .. ``To Max = 1`` (Falloff goes through a
    Multiply Add by -1, +1), subtracted from 1. For b > 1, ``1 - smoothstep(b, 1, T)`` equals
    ``smoothstep(1, b, T)``; the two differ only when the ramp collapses (a == 1 or b == 1),
    where the Map Range returns To Min and the channel is ``clamp(F) * W'`` everywhere. (The
    graph adds the red and green colours, clamps, and mixes with black by ``W'``; since the
    channels are disjoint this is the same as scaling each clamped channel.)

    Parameters
    ----------
    ratio : array_like of float, any shape
        T values: mean rest edge length / mean deformed edge length (dimensionless). T > 1 is
        compression, T < 1 stretching.
    falloff, stretch_area, compress_area, weight_limit : float
        See :func:`map_params`.

    Returns
    -------
    MappedRatio
        ``compress`` and ``stretch`` with the shape of ``ratio``; ``color`` with one more
        trailing axis of length 3 (RGB). All float32 in [0, 1].
    """
    return map_ratio_params(ratio, map_params(falloff, stretch_area, compress_area, weight_limit))


def map_ratio_params(ratio, p: MapParams) -> MappedRatio:
    """:func:`map_ratio` with the inputs already reduced by :func:`map_params`."""
    t = _f32(ratio)
    F = _F32(p.falloff)
    W = _F32(p.weight)
    one, zero = _F32(1.0), _F32(0.0)
    st = np.clip(F * (one - map_range_smoothstep(t, p.a, one)), zero, one) * W
    co = np.clip(F * (one - map_range_smoothstep(t, p.b, one)), zero, one) * W
    st = st.astype(_F32)
    co = co.astype(_F32)
    color = np.stack([co, st, np.zeros_like(co)], axis=-1)
    return MappedRatio(co, st, color)

"""How well a shaped avatar holds together at rest: bone heads inside the body, garments on the body.

Used to judge MakeHuman body shapes (:mod:`kisekae.avatar.shape`) against the default shape: for
every garment, the 95th percentile of the garment vertices' distance to the body surface and the
fraction of garment vertices inside the body, in the rest pose.
"""

from __future__ import annotations

import numpy as np

from ..avatar.avatar import Avatar
from .penetration import BodyQuery, BodyTopology

#: Limits of the shape check against the default shape: p95 distance within 1 cm, inside fraction
#: at most 1 percentage point above.
P95_TOLERANCE_M = 0.01
INSIDE_TOLERANCE = 0.01


def rest_fit(avatar: Avatar, garments=None) -> dict:
    """Rest-pose measurements of an avatar.

    Parameters
    ----------
    avatar : Avatar
    garments : list of garment names, default all

    Returns
    -------
    dict with ``height_m`` (body's vertical extent), ``heads_outside`` (names of bones whose rest head
    has winding number <= 0.5 against the body), and ``garments``: name -> ``{"p95_distance_m",
    "inside_fraction"}`` (distance of each garment vertex to the body surface, metres).
    """
    body = avatar.body.mesh
    query = BodyQuery(BodyTopology.from_mesh(body.vertices, body.faces), body.vertices)
    heads = np.asarray(avatar.skeleton.heads, dtype=np.float64)
    outside = [n for n, inside in zip(avatar.skeleton.names, query.inside(heads)) if not inside]
    out = {"height_m": float(np.ptp(body.vertices[:, 1])), "heads_outside": outside, "garments": {}}
    for name in garments if garments is not None else list(avatar.garments):
        pts = np.asarray(avatar.part(name).mesh.vertices, dtype=np.float64)
        out["garments"][name] = {"p95_distance_m": float(np.percentile(query.distance(pts), 95)),
                                 "inside_fraction": float(query.inside(pts).mean())}
    return out


def compare_fit(stats: dict, reference: dict) -> dict:
    """Per garment of ``stats``: the change against ``reference`` (both from :func:`rest_fit`) and
    whether it is within :data:`P95_TOLERANCE_M` and :data:`INSIDE_TOLERANCE`.

    Returns
    -------
    dict name -> ``{"p95_change_m", "inside_change", "ok"}``
    """
    out = {}
    for name, g in stats["garments"].items():
        r = reference["garments"][name]
        dp = g["p95_distance_m"] - r["p95_distance_m"]
        di = g["inside_fraction"] - r["inside_fraction"]
        out[name] = {"p95_change_m": dp, "inside_change": di,
                     "ok": abs(dp) <= P95_TOLERANCE_M and di <= INSIDE_TOLERANCE}
    return out

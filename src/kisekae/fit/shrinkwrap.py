"""Blender's Shrinkwrap modifier (Nearest Surface Point), re-implemented as a baseline to compare with.

Blender's modifier moves each vertex to the nearest point of the target surface, plus an
offset along the surface normal there. Its wrap modes decide which vertices move:

- ``"outside"``: only vertices behind the nearest face (``(p − q)·n < offset``) move to
  ``q + offset·n``. Inside and outside come from that one face's normal, so where the posed body
  overlaps itself the nearest face can be a buried one and a vertex inside the body stays put.
- ``"outside_surface"``: every vertex moves to ``q + offset·n``, which drags a skirt's hem
  onto the legs (the garment collapses onto the body).

This is a comparison baseline for :mod:`kisekae.fit.exact`, not a recommended solver.
"""

from __future__ import annotations

import numpy as np

from ..validate import as_points
from ..geom.closest import closest_point_triangles_numpy, surface_distance


def shrinkwrap(query, points, offset: float = 0.002, mode: str = "outside"):
    """Apply Shrinkwrap (Nearest Surface Point) against a posed body.

    Parameters
    ----------
    query : kisekae.qa.BodyQuery, the posed body
    points : (N, 3) garment vertices, metres
    offset : float, metres
    mode : {"outside", "outside_surface"}

    Returns
    -------
    (N, 3) float64 positions
    """

    if mode not in ("outside", "outside_surface"):
        raise ValueError(f"unknown mode {mode!r}")
    p = as_points(points, "garment vertices")
    _, tri = surface_distance(p, query.topology.bvh, query.state)
    faces = query.topology.faces[tri]
    q = closest_point_triangles_numpy(p, *query.vertices[faces].transpose(1, 0, 2))[0]
    n = query.face_normals[tri]
    along = np.einsum("ij,ij->i", p - q, n)
    move = np.ones(len(p), dtype=bool) if mode == "outside_surface" else along < offset
    out = p.copy()
    out[move] = q[move] + offset * n[move]
    return out

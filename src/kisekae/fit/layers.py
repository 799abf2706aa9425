"""Layered outfits: each layer stays outside the body and every layer beneath it.

An outfit is an ordered stack, innermost first (tights under a skirt, a shirt under a jacket).
Layer ``i`` keeps ``thickness[j] + margin`` of clearance from every fixed layer ``j < i``,
measured as the signed distance along the inner layer's outward normal at its closest point.
Garments are open surfaces (a skirt is a tube), so the side is taken from the inner layer's
normals, oriented to point away from the body.
"""

from __future__ import annotations

import numpy as np

from ..geom.closest import closest_point_triangles_numpy, surface_distance
from ..geom.crossings import edge_crossings
from ..geom.bvh import build_bvh, refit
from ..geom.normals import face_normals
from ..errors import KisekaeError
from ..validate import as_faces, as_points
from .pushout import PushParams, cap_displacement, push_amount

#: Outer vertices farther than this from an inner layer's surface ignore it (metres).
LAYER_REACH = 0.05


class LayerSurface:
    """A fixed (posed) inner layer: its triangles, BVH and outward orientation.

    Parameters
    ----------
    vertices : (N, 3) posed positions, metres
    faces : (F, 3) triangles
    thickness : float, metres, the cloth thickness of this layer
    outward_hint : callable or None
        ``outward_hint(points) -> (P, 3)`` outward body directions used to orient the layer
        (e.g. from the body's closest points). Without it the triangle winding is trusted.
    """

    def __init__(self, vertices, faces, thickness: float = 0.0005, outward_hint=None, name: str = "layer"):
        self.name = name
        self.vertices = as_points(vertices, f"{name} vertices")
        self.faces = as_faces(faces, len(self.vertices), f"{name} faces")
        if not np.isfinite(thickness) or thickness < 0:
            raise KisekaeError(f"thickness must be >= 0 metres, got {thickness!r}", name)
        self.thickness = float(thickness)
        self.bvh = build_bvh(self.vertices, self.faces)
        self.state = refit(self.bvh, self.vertices, self.faces)
        self.normals = face_normals(self.vertices, self.faces)
        if outward_hint is not None:
            centers = self.vertices[self.faces].mean(axis=1)
            agree = np.einsum("ij,ij->i", self.normals, outward_hint(centers))
            if np.sum(agree < 0) > np.sum(agree > 0):
                self.normals = -self.normals

    def signed_distance(self, points):
        """Signed distance (m) along the layer's outward normal at the closest point, and that normal.

        Returns
        -------
        s : (P,) metres (negative: under this layer); ``+inf`` beyond :data:`LAYER_REACH`
        n : (P, 3) outward unit normals
        """
        p = np.asarray(points, dtype=np.float64)
        dist, tri = surface_distance(p, self.bvh, self.state)
        t = np.maximum(tri, 0)
        q = closest_point_triangles_numpy(p, *self.vertices[self.faces[t]].transpose(1, 0, 2))[0]
        n = self.normals[t]
        s = np.einsum("ij,ij->i", p - q, n)
        s = np.where(np.abs(s) < 1e-12, 0.0, np.sign(s)) * dist
        s = np.where(dist > LAYER_REACH, np.inf, s)
        return s, n

    def crossing_edges(self, points, edges):
        return edge_crossings(points, edges, self.bvh, self.state)


def push_out_layers(points, edges, inner: list, params: PushParams | None = None, tightness=0.0, softness=0.0,
                    rounds: int = 3):
    """Push an outer layer clear of the fixed inner layers.

    Parameters
    ----------
    points : (N, 3) outer layer positions (already outside the body), metres
    edges : (E, 2) outer layer edges
    inner : list of LayerSurface, innermost first
    params : PushParams (margin, stiffness, max_push, ...)

    Returns
    -------
    new_points : (N, 3) float64
    touched : (N,) bool, vertices that were within reach of an inner layer (contact) or ends of an
        edge through one
    """
    params = params or PushParams()
    p0 = as_points(points, "outer layer")
    p = p0.copy()
    touched = np.zeros(len(p), dtype=bool)
    for _ in range(rounds):
        moved_any = False
        for layer in inner:
            s, n = layer.signed_distance(p)
            clearance = s - layer.thickness
            need = clearance < params.margin
            touched |= need
            if not need.any():
                continue
            amount = push_amount(clearance[need], params.margin, params.stiffness, params.max_push,
                                 tightness if np.ndim(tightness) == 0 else np.asarray(tightness)[need],
                                 softness if np.ndim(softness) == 0 else np.asarray(softness)[need])
            p[need] += amount[:, None] * n[need]
            moved_any = True
        # Edges of the outer layer that pass through an inner layer: lift both ends.
        for layer in inner:
            cross = layer.crossing_edges(p, edges)
            if cross.any():
                verts = np.unique(np.asarray(edges)[cross].ravel())
                touched[verts] = True
                _, n = layer.signed_distance(p[verts])
                p[verts] += (params.margin + layer.thickness) * n
                moved_any = True
        cap_displacement(p, p0, params.max_push)
        if not moved_any:
            break
    return p, touched


def layer_stats(points, edges, inner: list) -> dict:
    """How much of a layer is under the layers beneath it: vertex count and crossing edges."""
    p = np.asarray(points, dtype=np.float64)
    under = np.zeros(len(p), dtype=bool)
    crossings = 0
    for layer in inner:
        s, _ = layer.signed_distance(p)
        under |= s < layer.thickness
        crossings += int(layer.crossing_edges(p, edges).sum())
    return {"under_lower_layers": int(under.sum()), "layer_crossings": crossings}


def draw_order(layers, transparent=()) -> list:
    """Draw order: the body, then opaque layers inner to outer, then transparent layers inner to outer."""
    layers = list(layers)
    transparent = set(transparent)
    unknown = transparent - set(layers)
    if unknown:
        raise KisekaeError(f"transparent layers not in the outfit: {sorted(unknown)}", "transparent")
    return ["body"] + [g for g in layers if g not in transparent] + [g for g in layers if g in transparent]

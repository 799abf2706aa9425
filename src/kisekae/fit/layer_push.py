"""Layers in the per-frame path: an outer garment pushed out of the corrected garment beneath it.

The per-frame correction (:func:`kisekae.fit.surface.surface_runtime`) keeps each garment outside the *body*. Worn
together, two garments also have to stay in their order: a skirt over tights must lie outside the tights. The
built-in skirt and tights do not, even skinned: at rest 63 skirt vertices lie under the tights and 62 skirt edges
pass through them, in the crouch 134 and 224, and where the tights are pushed out of a bulging thigh the skirt
above them is not, so the tights show through the skirt (docs/fit.md, "Layers in the per-frame path").

The outer garment is pushed out of the inner one with the body push's own law and kernel: the inner garment's
corrected positions and welded vertex normals take the place of the posed body (``KisekaeSurfacePush`` in the shader
core reads them through the same buffers), and each outer vertex has its own candidate triangles *of the inner
garment*, baked once over the range of motion as the body candidates are (:func:`bake_layer_candidates`). Per frame,
after the inner garment's correction and between the outer garment's stretch limit and its edge lift
(:func:`kisekae.fit.surface.surface_runtime`'s ``between``, so that the stages against the body keep the last word;
:func:`layer_push`):

1. push every outer vertex out of its inner candidates (margin, stiffness, maxPush and skirt bias of the outer
   garment's :class:`~kisekae.fit.pushout.PushParams`; candidates farther than :data:`LAYER_REACH` ignored; no chord
   allowance);
2. :data:`LAYER_SMOOTH` one-ring passes over that push's steps (:func:`kisekae.fit.surface.smooth_push`), so the
   neighbours of a pushed vertex rise with it instead of leaving a spike;
3. push the moved vertices again; the whole move of a vertex faded past :data:`LAYER_FADE` (a move of centimetres
   marks a fold of the inner garment);
4. :data:`LAYER_LIFT_PASSES` rounds of the edge lift (:mod:`kisekae.fit.edge_lift`) of the outer garment's samples
   against the inner garment (their own candidates on it, the same reach), each followed by the push of what it
   lifted.

The inner garment is outside the body, so what moves out of it moves away from the body too. Several layers: each
garment is pushed out of every garment beneath it, innermost first (:func:`kisekae.fit.runtime.runtime_pose` with
``layers=True``). In Unity: ``KisekaeSurfacePush.beneath`` and the layer bake of ``kisekae fit --layered``
(``OUTER.over.INNER.surface.json``), the same kernels with the inner garment bound as the body
(``KisekaeLayerPush``, ``KisekaeLayerPushAgain``); measured in docs/fit.md ("Layers in the per-frame path").
"""

from __future__ import annotations


import numpy as np

from ..errors import KisekaeError
from ..geom.normals import vertex_normals
from .pushout import PushParams
from .surface import (BAKE_POSES, CANDIDATES, SurfaceCandidates, bake_surface_candidates, smooth_push,
                      smooth_push_numpy, surface_push, surface_push_numpy)

#: One-ring smoothing passes over the layer push's displacement (step 2).
LAYER_SMOOTH = 3
#: Rounds of the edge lift against the inner garment (step 4): its samples on the outer garment's long edges and
#: inside its large faces pushed out of the inner garment, each round followed by the push of what it moved.
LAYER_LIFT_PASSES = 2
#: Inner triangles farther than this from an outer vertex (metres) are ignored by the layer push: cloth under the
#: inner layer lies within the few millimetres between that layer and the skin, and a triangle farther away is the
#: other side of a fold (the tights on the belly, seen from the skirt over the thigh in a crouch), whose normal
#: would push the cloth through the body.
LAYER_REACH = 0.01
#: The layer push's move of a vertex (metres) above which it is taken only in part, linearly down to nothing at
#: twice it (:func:`kisekae.fit.edge_lift.lift_fade`): cloth a few millimetres under the layer beneath is lifted
#: whole; a move of centimetres marks a fold of that layer, and taking it would crumple the cloth.
LAYER_FADE = 0.005


def bake_layer_candidates(avatar, outer: str, inner: str, poses=None, k: int = CANDIDATES, *,
                          n_poses: int = BAKE_POSES, seed: int = 0, progress: bool = False,
                          points_of=None) -> SurfaceCandidates:
    """The candidate triangles of garment ``inner`` for every vertex of garment ``outer``.

    Parameters
    ----------
    avatar : kisekae.avatar.Avatar with both garments
    outer, inner : garment names (different)
    poses : list of Pose or None: the rest pose and ``n_poses`` range-of-motion poses
        (:func:`kisekae.avatar.poses.range_of_motion_poses` with ``seed``), as the body candidates
    k : int, candidates per vertex (1 to 64)
    progress : bool, print a line to stderr every 50 poses
    points_of : callable or None, the points to bake from the skinned outer garment ((N, 3) -> (M, 3)), e.g. its
        edge and face samples (:meth:`kisekae.fit.edge_lift.EdgeSamples.points`); None: its vertices

    Returns
    -------
    SurfaceCandidates of ``outer``'s vertices (or points) on ``inner``'s triangles: in every pose the inner triangle
    nearest to each skinned outer point, the most frequent first
    """
    if outer == inner:
        raise KisekaeError(f"a garment cannot be a layer beneath itself ({outer!r})", "layers")
    return bake_surface_candidates(avatar, outer, poses, k, n_poses=n_poses, seed=seed, progress=progress,
                                   points_of=points_of, onto=inner)


def inner_normals(inner_points, inner_faces, weld=None) -> np.ndarray:
    """(M, 3) float64 unit vertex normals of the corrected inner garment, summed over welded copies (``weld``,
    ``Mesh.weld``) as the engine's garment normals are, so that a seam does not split the surface the outer layer is
    pushed from."""
    return vertex_normals(np.asarray(inner_points, dtype=np.float64), inner_faces, weld, dtype=np.float64)


def layer_push(points, candidates: SurfaceCandidates, ring, inner_points, inner_faces, params: PushParams | None = None,
               *, inner_weld=None, lift=None, tightness=0.0, softness=0.0, up=(0.0, 1.0, 0.0),
               passes: int = LAYER_SMOOTH, lift_passes: int = LAYER_LIFT_PASSES, numpy: bool = False):
    """Push an outer garment out of the (corrected) inner garment beneath it: push, smooth, push again, then the
    edge lift against the inner garment.

    Parameters
    ----------
    points : (N, 3) the outer garment's corrected vertices, metres
    candidates : SurfaceCandidates of the outer vertices on the inner triangles (:func:`bake_layer_candidates`)
    ring : :func:`kisekae.fit.surface.one_ring` of the outer garment
    inner_points : (M, 3) the inner garment's corrected vertices, metres
    inner_faces : (F, 3) int the inner garment's triangles
    params : PushParams of the outer garment (margin, stiffness, maxPush, skirt bias)
    inner_weld : (M,) ``Mesh.weld`` of the inner garment, or None
    lift : ``(EdgeSamples of the outer garment, their SurfaceCandidates on the inner triangles, vertex_samples
        table)`` or None: no edge lift against the inner garment
    tightness, softness, up : as :func:`kisekae.fit.surface.surface_push`
    passes : int >= 0, one-ring smoothing passes over the first push's displacement
    lift_passes : int >= 0, rounds of the edge lift (each followed by the push of the vertices it lifted)
    numpy : bool, the NumPy references instead of the Numba kernels

    Returns
    -------
    new_points : (N, 3) float64; push : (N,) metres, how far each vertex moved
    """
    from .edge_lift import LIFT_EPS, edge_lift, edge_lift_numpy, lift_fade

    params = params or PushParams()
    for value, what in ((passes, "layer smoothing passes"), (lift_passes, "layer lift passes")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise KisekaeError(f"must be an integer >= 0, got {value!r}", what)
    y = np.asarray(points, dtype=np.float64)
    if y.ndim != 2 or y.shape[1] != 3 or not np.all(np.isfinite(y)):
        raise KisekaeError(f"expected finite (N, 3) positions, got shape {y.shape}", "outer garment")
    inner = np.asarray(inner_points, dtype=np.float64)
    normals = inner_normals(inner, inner_faces, inner_weld)
    args = (candidates, inner, normals, inner_faces, params, tightness, softness, up, LAYER_REACH)

    def push_some(p, ids):
        """The push of the vertices ``ids`` (bool (N,)); the others unchanged."""
        if numpy:
            return np.where(ids[:, None], surface_push_numpy(p, *args)[0], p)
        return surface_push(p, *args, only=np.flatnonzero(ids))[0]

    first = push_some(y, np.ones(len(y), dtype=bool))
    if passes:
        first = y + (smooth_push_numpy if numpy else smooth_push)(first - y, ring, passes)
    new = push_some(first, np.any(first != y, axis=1))
    d = new - y
    new = y + d * lift_fade(np.linalg.norm(d, axis=1), LAYER_FADE)[:, None]
    if lift is not None:
        samples, sample_candidates, table = lift
        lift_fn = edge_lift_numpy if numpy else edge_lift
        for _ in range(lift_passes):
            lifted = lift_fn(new, samples, sample_candidates, table, inner, normals, inner_faces, params, tightness,
                             softness, up, reach=LAYER_REACH)[0]
            new = push_some(lifted, np.linalg.norm(lifted - new, axis=1) > LIFT_EPS)
    return new, np.linalg.norm(new - y, axis=1)

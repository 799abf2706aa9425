"""The two-pass candidate bake: body triangles near the skinned cloth and near where the per-frame correction puts it.

The per-frame surface push (:mod:`kisekae.fit.surface`) keeps each garment vertex, and each sample on its long edges
(:mod:`kisekae.fit.edge_lift`), outside the nearest of a few baked *candidate* body triangles. Pass 1
(:func:`kisekae.fit.surface.bake_surface_candidates`) counts, over range-of-motion poses, which triangle is nearest
to each point as skinning places it. But the correction moves cloth by centimetres, onto skin that no skinned
position of that vertex was ever nearest to: a skirt's front carried over a raised knee lies on the calf. Measured in
the crouch with the edge lift, the only skirt vertices left inside the body sat 0.3-0.9 mm inside the calf, and no
calf triangle was among their candidates.

Pass 2 (:func:`bake_followed_candidates`) runs the per-frame correction itself (:func:`~kisekae.fit.surface
.surface_runtime` with pass 1's candidates, the garment's default push parameters and the edge lift) in every pose
of the same bake and counts, besides, the triangle nearest to where the correction put each point, where the cloth
lies within :data:`FOLLOW_REACH` of it (on the skin). The :data:`~kisekae.fit.surface.CANDIDATES` most frequent over
both passes are kept. A point the correction leaves farther than the reach (a skirt hanging off the legs) counts
pass 1's triangle again in that pose: counting far-away nearest triangles gave a raised leg's skirt triangles of the
other side of the leg (high kick: 0 -> 3 inside, 8 flipped faces).
"""

from __future__ import annotations

import sys

import numpy as np

from ..geom.normals import vertex_normals
from .surface import (BAKE_POSES, CANDIDATES, SurfaceCandidates, _most_frequent, bake_surface_candidates,
                      garment_chords, one_ring, surface_runtime)

#: Pass 2 counts a triangle only where the corrected cloth lies this close to it, metres.
FOLLOW_REACH = 0.01


def bake_followed_candidates(avatar, name: str, params, *, samples, k: int = CANDIDATES, n_poses: int = BAKE_POSES,
                             seed: int = 0, reach: float = FOLLOW_REACH, progress: bool = False,
                             arm_poses: int = 0) -> tuple:
    """Candidates of a garment's vertices and edge samples from both passes.

    Parameters
    ----------
    avatar : kisekae.avatar.Avatar, posed as the runtime poses it (with its body contact, if any)
    name : str, a garment of ``avatar``
    params : PushParams, the push parameters of pass 2's correction (the garment's defaults at run time)
    samples : EdgeSamples of the garment, as the runtime uses them (:func:`kisekae.fit.runtime.garment_samples`)
    k, n_poses, seed, progress, arm_poses : as :func:`kisekae.fit.surface.bake_surface_candidates`
    reach : float, metres: pass 2 counts the nearest triangle of a corrected point only within this distance

    Returns
    -------
    (SurfaceCandidates (N, k) of the vertices, SurfaceCandidates (S, k) of the edge samples or None when no edge is
    longer than the sample spacing)
    """
    from ..geom.bvh import build_bvh, refit
    from ..geom.closest import surface_distance
    from .edge_lift import vertex_samples
    from .unflip import vertex_faces

    mesh, body = avatar.part(name).mesh, avatar.body
    kw = dict(k=k, n_poses=n_poses, seed=seed, progress=progress, hits=True, arm_poses=arm_poses)
    cand, v_hits, poses = bake_surface_candidates(avatar, name, **kw)
    lift = s_hits = s_cand = None
    if len(samples):
        s_cand, s_hits, _ = bake_surface_candidates(avatar, name, points_of=samples.points, **kw)
        lift = (samples, s_cand, vertex_samples(samples, mesh.weld))
    faces = body.mesh.faces
    tree = build_bvh(body.mesh.vertices, faces)
    ring = one_ring(mesh.n_vertices, mesh.edges, mesh.weld)
    gfaces = (np.asarray(mesh.faces, dtype=np.int64), vertex_faces(mesh.faces, mesh.n_vertices, mesh.weld))
    chord = garment_chords(mesh)
    v_more = np.empty_like(v_hits)
    s_more = None if s_hits is None else np.empty_like(s_hits)
    for i, pose in enumerate(poses):
        m = pose.skinning_matrices(avatar.skeleton)
        posed = np.asarray(body.posed(m), dtype=np.float64)
        x = np.asarray(avatar.part(name).posed(m), dtype=np.float64)
        normals = vertex_normals(posed, faces).astype(np.float64)
        new = surface_runtime(x, cand, ring, posed, normals, faces, params, chord=chord, lift=lift, faces=gfaces)[0]
        state = refit(tree, posed, faces)
        v_more[i] = _near(surface_distance(new, tree, state), v_hits[i], reach)
        if s_more is not None:
            s_more[i] = _near(surface_distance(samples.points(new), tree, state), s_hits[i], reach)
        if progress and (i + 1) % 50 == 0:
            print(f"  candidates of {name} where the correction puts it: {i + 1}/{len(poses)} poses", file=sys.stderr)
    vertex = SurfaceCandidates(_most_frequent(np.concatenate([v_hits, v_more]), k), len(faces))
    if s_more is None:
        return vertex, None
    return vertex, SurfaceCandidates(_most_frequent(np.concatenate([s_hits, s_more]), k), len(faces))


def _near(found, fallback, reach: float) -> np.ndarray:
    """The nearest triangles of ``found`` (:func:`kisekae.geom.closest.surface_distance`'s distances and ids) where
    they lie within ``reach``, else ``fallback`` (pass 1's triangle in the same pose)."""
    distance, tri = found
    return np.where(distance <= reach, tri, fallback)

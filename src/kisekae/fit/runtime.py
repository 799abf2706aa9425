"""The per-frame garment correction that an engine runs, on a whole avatar, pose by pose.

Three methods (:data:`RUNTIME_METHODS`):

- ``"carried"`` (the default): the surface push below, each frame started from the previous frame's
  correction (:mod:`kisekae.fit.carry`; a :class:`~kisekae.fit.carry.CarryState` holds it between frames, and
  a pose without a previous frame warms up along the path from the rest pose). Measured against the stateless
  push it pops 3-6 times less between frames and leaves no spikes (docs/fit.md).
- ``"surface"``: the stateless surface push of :mod:`kisekae.fit.surface` against the posed body
  (skinning, then the body contact) and its normals: each garment vertex is kept outside the nearest of
  its baked candidate body triangles, with one-ring smoothing passes between two pushes and stretch-limit
  passes after them (HLSL: ``KisekaeSurfacePush``, ``KisekaeSmoothPush`` and ``KisekaeStretchLimit`` as compute
  passes).
- ``"capsules"``: the first per-frame path (``KisekaeSkinPushOut``): the capsule field of the fitted rig,
  then the skin-bound clearance against the posed body, the total capped at maxPush
  (:func:`kisekae.fit.bound.push_out_runtime`). Kept for comparison: it leaves 5-10 times more of the
  garment inside in bent poses and adds spikes (docs/fit.md).

What is baked or bound once per avatar (the candidates, the capsule rig, each garment's binding to the
rest skin and its capsule push-out plan, see :class:`~kisekae.fit.pushout.CapsulePushPlan`) is cached on
the avatar, like the body's BVH topology, so a clip of many frames pays for it once.

``kisekae check --runtime`` reports its result with ``stage: "runtime"``; :func:`pop_mm` measures how
far the correction jumps between consecutive frames, because popping is as visible as clipping.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..avatar.avatar import Avatar
from ..avatar.skinning import lbs_normals
from ..bake_cache import cached_arrays
from ..errors import KisekaeError
from ..geom.guarded_normals import guarded_vertex_normals
from ..geom.normals import vertex_normals
from .body_follow import body_follow, follow_weights
from .bound import bind_to_skin, push_out_runtime
from .carry import CarryState, carry_start
from .fitting import fit_capsules
from .fix import params_for
from .garment_correctives import corrected_skin, garment_correctives
from .pushout import CapsulePushPlan, PushParams
from .surface import (BAKE_POSES, CANDIDATES, COMPRESSION_LIMIT, FINISH_STEP, SurfaceCandidates,
                      SMOOTH_PASSES, check_compression, garment_chords, one_ring, shortest_lengths, smooth_push,
                      surface_runtime)

#: Per-frame methods of :func:`runtime_pose`; the first is the default.
RUNTIME_METHODS = ("carried", "surface", "capsules")
#: Whether the surface methods start each garment from its skinning plus the body's displacement beyond skinning at
#: its bound point (:mod:`kisekae.fit.body_follow`), by default (since 2026-12-06: over the 68 cells 5 / 105 / 22 ->
#: 2 / 90 / 21 vertices inside / edges through the body / flipped faces, the crouch tights' poke-through 92 -> 0 px).
BODY_FOLLOW = True
#: One-ring passes of :func:`~kisekae.fit.surface.smooth_push` over the body follow's displacement, as many as the
#: push's own (neighbouring garment vertices bound to different body parts take different displacements; unsmoothed, the
#: follow turned faces over where thigh meets calf: 68 cells 29 flipped faces, 3 passes 25, 6 24, 10 21, docs/fit.md).
FOLLOW_SMOOTH = SMOOTH_PASSES
#: Whether the surface methods trust a candidate only within the body's depth bound (:mod:`kisekae.fit.depth_bound`),
#: by default (since 2026-12-07: the packaged walk's skirt pop 45.8 -> 5.3 mm; the 68 cells and the 24 cells of
#: ``benchmarks/poses_more`` unchanged, docs/fit.md "The depth bound").
DEPTH_BOUND = True
#: Whether the surface methods read the body's side through normals that leave out the triangles the pose turned
#: away from the skinned normals (:mod:`kisekae.geom.guarded_normals`), by default (since 2026-12-07: the 68 cells
#: 1 / 79 / 19 -> 0 / 64 / 15 inside / crossings / flipped, the 24 of ``benchmarks/poses_more`` 1 / 31 / 8 ->
#: 1 / 28 / 8, the largest pop of six motions 46.9 -> 25.5 mm; docs/fit.md "Body normals without the faces a pose
#: turns inside out").
NORMAL_GUARD = True
#: Whether the surface methods keep a garment's outer sheets outside its own inner sheets (:mod:`kisekae.fit.self_layers`),
#: by default (since 2026-12-08: over the 68 cells the garments' self-crossings 6,413 -> 5,185 and the cells with more
#: self-crossings than skinning 41 -> 33; inside, crossings and flipped faces unchanged; docs/fit.md "Self layers").
SELF_LAYERS = True


@dataclass(frozen=True, eq=False)
class BodyChecks:
    """How the surface methods read the posed body: ``depth``, the depth bound ((Nb,) metres,
    :func:`avatar_depth_bound`) or None (every candidate trusted); ``guard``, whether the body normals are guarded
    (:func:`body_normals`)."""

    depth: np.ndarray | None = None
    guard: bool = False

    def metrics(self) -> dict:
        return {"depth_bound": self.depth is not None, "normal_guard": self.guard}


def body_normals(avatar: Avatar, body, m, guard: bool = NORMAL_GUARD) -> np.ndarray:
    """(Nb, 3) float64 unit normals of the posed body ``body`` (Nb, 3) for skinning matrices ``m``: with ``guard``,
    :func:`kisekae.geom.guarded_normals.guarded_vertex_normals` against the rest normals carried by the blended
    skinning rotations (:func:`kisekae.avatar.skinning.lbs_normals`, what an engine's skinned mesh holds), else the plain
    area-weighted normals."""
    faces = avatar.body.mesh.faces
    if not guard:
        return vertex_normals(body, faces).astype(np.float64)
    skin = avatar.body.skin
    return guarded_vertex_normals(body, faces, lbs_normals(avatar.body.mesh.normals, skin.indices, skin.weights, m))


def _cached(avatar: Avatar, slot: str, key, make):
    """``make()`` computed once per ``key`` and kept on the avatar in the dict attribute ``slot``."""
    cache = avatar.__dict__.setdefault(slot, {})
    if key not in cache:
        cache[key] = make()
    return cache[key]


def avatar_depth_bound(avatar: Avatar) -> np.ndarray:
    """(Nb,) the body's depth bound per vertex (:func:`kisekae.fit.depth_bound.body_depth_bound` of the rest body,
    metres), made once and cached on the avatar."""
    from .depth_bound import body_depth_bound

    mesh = avatar.body.mesh
    return _cached(avatar, "_kisekae_depth_bound", "body", lambda: body_depth_bound(mesh.vertices, mesh.faces))


def avatar_capsule_rig(avatar: Avatar):
    """The avatar's fitted capsule rig (medial method, as ``kisekae fit``), fitted once and cached."""
    rig = getattr(avatar, "_kisekae_capsule_rig", None)
    if rig is None:
        body, sk = avatar.body, avatar.skeleton
        rig = fit_capsules(body.mesh.vertices, body.skin.indices, body.skin.weights, sk.rest, sk.names,
                           faces=body.mesh.faces)
        avatar._kisekae_capsule_rig = rig
    return rig


def garment_binding(avatar: Avatar, name: str):
    """The garment's :class:`~kisekae.fit.bound.SkinBinding` to the rest body, bound once and cached."""
    body = avatar.body.mesh
    return _cached(avatar, "_kisekae_bindings", name,
                   lambda: bind_to_skin(avatar.part(name).mesh.vertices, body.vertices, body.faces))


def garment_candidates(avatar: Avatar, name: str, *, progress: bool = False):
    """The garment's :class:`~kisekae.fit.surface.SurfaceCandidates` on this avatar's body, baked once and cached.

    The avatar's body as it is posed (with its contact step, if it has one) is what the bake samples, in two passes
    (:func:`followed_candidates`): the triangles nearest to the skinned garment, then those nearest to where the
    per-frame correction puts it. The bake (about 10 s a garment) is kept on the avatar and on disk
    (:mod:`kisekae.bake_cache`, keyed by :func:`candidates_cache_key`), so the next process with the same body and
    garment reads it back.
    """
    return followed_candidates(avatar, name, progress=progress)[0]


def followed_candidates(avatar: Avatar, name: str, *, progress: bool = False) -> tuple:
    """The garment's vertex and edge-sample candidates (:func:`kisekae.fit.followed_bake.bake_followed_candidates`:
    near the skinned cloth and near where the per-frame correction puts it, over :data:`BAKE_POSES`
    range-of-motion poses, with the garment's default push parameters), cached on the avatar and on disk.

    Returns
    -------
    (SurfaceCandidates of the vertices, SurfaceCandidates of the edge samples or None)
    """
    from .edge_lift import with_corner_candidates
    from .followed_bake import FOLLOW_REACH, bake_followed_candidates

    params = params_for(name, None)

    def bake(samples):
        vertex, sample = bake_followed_candidates(avatar, name, params, samples=samples, k=CANDIDATES,
                                                  n_poses=BAKE_POSES, seed=BAKE_SEED, progress=progress,
                                                  arm_poses=ARM_BAKE_POSES)
        return {"vertex": vertex.triangles, **({} if sample is None else {"sample": sample.triangles})}

    def make():
        samples = garment_samples(avatar, name)
        key = candidates_cache_key(avatar, name) + [samples.ends, samples.bary, samples.chord, FOLLOW_REACH,
                                                    sorted(vars(params).items())]
        arrays = cached_arrays("candidates", key, lambda: bake(samples))
        nf = len(avatar.body.mesh.faces)
        out = [SurfaceCandidates(np.ascontiguousarray(arrays[k], dtype=np.int32), nf) if k in arrays else None
               for k in ("vertex", "sample")]
        if out[1] is not None:  # the samples' free slots take their corners' candidates
            out[1] = with_corner_candidates(out[1], out[0], samples)
        return tuple(out)

    return _cached(avatar, "_kisekae_followed_candidates", name, make)


#: Poses with the arms at the sides (:data:`kisekae.avatar.poses.ARMS_AT_SIDES`, seed ``BAKE_SEED + 1``) added to the
#: candidate bake's range of motion, as the body's correctives train on them: the range of motion rarely lowers an arm
#: against the torso, where a walk's arms hang (docs/fit.md "Arms at the sides in the candidate bake").
ARM_BAKE_POSES = 100
#: Version of the surface-candidate bake in its disk-cache key: raise it whenever the bake's method changes.
CANDIDATES_BAKE_VERSION = 2
#: Version of the layer-candidate bake (:func:`layer_candidates`) in its disk-cache key.
LAYER_BAKE_VERSION = 1
#: Seed of the bake's range-of-motion poses.
BAKE_SEED = 0
#: Range-of-motion poses over which each garment edge's longest skinned length is taken (:func:`garment_edge_lengths`;
#: the candidate bake's :data:`~kisekae.fit.surface.BAKE_POSES` and seed).
LENGTH_POSES = 300
#: Range-of-motion poses (the bake's first ones) whose posed body and garment enter the cache key.
KEY_PROBE_POSES = 3


def candidates_cache_key(avatar: Avatar, name: str) -> list:
    """Everything garment ``name``'s surface-candidate bake depends on, for :func:`kisekae.bake_cache.cached_arrays`.

    The rest meshes, skins and skeleton of the body and the garment, the bake's settings, and the body and garment
    as the avatar poses them in the bake's first range-of-motion poses (rounded to 1 um): whatever changes how the
    avatar poses its body (the contact step, its gap, the correctives) changes those, and so the key; the part
    contact's settings are added where the body has it.
    """
    sk, body = avatar.skeleton, avatar.body
    return ["surface-candidates", CANDIDATES_BAKE_VERSION, CANDIDATES, BAKE_POSES, BAKE_SEED, ARM_BAKE_POSES,
            np.asarray(sk.rest, dtype=np.float64), np.asarray(sk.parents, dtype=np.int64),
            np.asarray(body.mesh.vertices), np.asarray(body.mesh.faces), body.skin.indices, body.skin.weights,
            *_garment_key_entries(avatar, name), *_part_contact_entry(avatar)]


def _part_contact_entry(avatar: Avatar) -> list:
    """The part contact's settings (:mod:`kisekae.avatar.part_contact`) as a key entry where the body has it (it
    may move nothing in the key's probe poses), else nothing: keys of bodies without it stay as they were."""
    from ..avatar.part_contact import VERSION, PartContact

    d = avatar.body.deform
    if not isinstance(d, PartContact):
        return []
    return [np.array([VERSION, d.gap, d.band, d.deep, d.passes, d.fields.cell], dtype=np.float64),
            np.asarray(d.fields.reach, dtype=np.float64)]


def _garment_key_entries(avatar: Avatar, name: str) -> list:
    """The garment's own entries of :func:`candidates_cache_key`: its rest mesh and skin, then the body and the
    garment as the avatar poses them in the first :data:`KEY_PROBE_POSES` range-of-motion poses (rounded to 1 um)."""
    from ..avatar.poses import range_of_motion_poses

    sk, body, part = avatar.skeleton, avatar.body, avatar.part(name)
    key = [np.asarray(part.mesh.vertices), np.asarray(part.mesh.faces), part.skin.indices, part.skin.weights]
    for pose in range_of_motion_poses(sk, KEY_PROBE_POSES, seed=BAKE_SEED):
        m = pose.skinning_matrices(sk)
        key += [np.round(np.asarray(body.posed(m), dtype=np.float64), 6),
                np.round(np.asarray(part.posed(m), dtype=np.float64), 6)]
    return key


def garment_samples(avatar: Avatar, name: str):
    """The garment's edge and face samples (:func:`kisekae.fit.edge_lift.garment_edge_samples`), each edge sample's
    chord allowance from the longest skinning makes its edge over the range of motion
    (:func:`garment_edge_lengths`), cached on the avatar. Every stage that uses samples (the edge lift, its candidate
    bake, the layer lift, the surface bake, the conformance checks) takes them from here."""
    from .edge_lift import garment_edge_samples

    return _cached(avatar, "_kisekae_samples", name,
                   lambda: garment_edge_samples(avatar.part(name).mesh, lengths=garment_edge_lengths(avatar, name)))


def garment_edge_lengths(avatar: Avatar, name: str) -> np.ndarray:
    """(E,) the longest each garment edge gets under skinning over the rest pose and :data:`LENGTH_POSES`
    range-of-motion poses (the candidate bake's, :data:`BAKE_SEED`; :func:`kisekae.fit.edge_lift.skinned_edge_lengths`),
    metres, cached on the avatar. Its own constant, so that a bake made over fewer poses (a test's) keeps the
    samples every other stage uses."""
    from ..avatar.poses import range_of_motion_poses
    from .edge_lift import skinned_edge_lengths

    def make():
        part, sk = avatar.part(name), avatar.skeleton
        mats = (pose.skinning_matrices(sk) for pose in range_of_motion_poses(sk, LENGTH_POSES, seed=BAKE_SEED))
        return skinned_edge_lengths(part, mats)

    return _cached(avatar, "_kisekae_edge_lengths", name, make)


def garment_ring(avatar: Avatar, name: str):
    """The garment's welded one-ring (:func:`kisekae.fit.surface.one_ring`), cached."""
    mesh = avatar.part(name).mesh
    return _cached(avatar, "_kisekae_rings", name, lambda: one_ring(mesh.n_vertices, mesh.edges, mesh.weld))


def garment_chord(avatar: Avatar, name: str):
    """The garment's longest rest edge per vertex (:func:`kisekae.fit.surface.garment_chords`), cached."""
    return _cached(avatar, "_kisekae_chords", name, lambda: garment_chords(avatar.part(name).mesh))


def garment_shortest(avatar: Avatar, name: str, compression: float = COMPRESSION_LIMIT):
    """(N,) the shortest each garment vertex's one-ring edges may get against their skinned length
    (:func:`kisekae.fit.surface.shortest_lengths` of its rest clearance, :func:`garment_binding`: the compression
    limit ``compression`` of the cloth that clings to the body), cached; None for ``compression`` 0 (no floor)."""
    check_compression(compression)
    if compression == 0:
        return None
    return _cached(avatar, "_kisekae_shortest", (name, float(compression)),
                   lambda: shortest_lengths(garment_binding(avatar, name).rest_offset, compression))


def garment_lift(avatar: Avatar, name: str, *, progress: bool = False):
    """The garment's edge lift data ``(EdgeSamples, sample candidates, vertex_samples table)``
    (:mod:`kisekae.fit.edge_lift`), baked with the vertex candidates (:func:`followed_candidates`) and cached; None
    when no edge is longer than the sample spacing (the stage then has nothing to do)."""
    from .edge_lift import vertex_samples

    def make():
        mesh = avatar.part(name).mesh
        samples = garment_samples(avatar, name)
        if len(samples) == 0:
            return None
        return samples, followed_candidates(avatar, name, progress=progress)[1], vertex_samples(samples, mesh.weld)

    return _cached(avatar, "_kisekae_edge_lift", name, make)


def garment_faces(avatar: Avatar, name: str):
    """The garment's ``(faces, vertex_faces table)`` for the unflip (:mod:`kisekae.fit.unflip`), cached."""
    from .unflip import vertex_faces

    mesh = avatar.part(name).mesh
    return _cached(avatar, "_kisekae_vertex_faces", name,
                   lambda: (np.asarray(mesh.faces, dtype=np.int64),
                            vertex_faces(mesh.faces, mesh.n_vertices, mesh.weld)))


def garment_self_layers(avatar: Avatar, name: str):
    """The garment's self-layer bake (:func:`kisekae.fit.self_layers.bake_self_layers` on its rest mesh against the
    rest body), or None for a garment of one sheet; made once and cached on the avatar."""
    from .self_layers import bake_self_layers

    def make():
        mesh, body = avatar.part(name).mesh, avatar.body.mesh
        layers = bake_self_layers(mesh.vertices, mesh.faces, body.vertices, body.normals, mesh.weld)
        return layers if len(layers.vertices) else None

    return _cached(avatar, "_kisekae_self_layers", name, make)


def garment_own_layers(avatar: Avatar, name: str):
    """``(SelfLayers, faces (F, 3) int64)`` of the garment, as :func:`kisekae.fit.surface.surface_runtime`'s
    ``self_layers`` and :func:`kisekae.shaders.surface_bake.surface_bake`'s take them, or None for a garment of one
    sheet."""
    layers = garment_self_layers(avatar, name)
    return None if layers is None else (layers, garment_faces(avatar, name)[0])


#: Skin covered at rest by fabric this close (metres) stays covered in every pose, for garments that are not
#: skirt-like: the fabric is bound to that skin and follows it (:func:`covered_skin_triangles`).
TIGHT_COVER = 0.01
#: The cone of rays that must all meet the garment for skin to count as covered in a verification pose
#: (:func:`covered_skin_triangles`): the normal and this many rays tilted by this many degrees. Skin is then hidden
#: from every view within the cone's angle of its normal. With 30 degrees (the library's default) the skin just
#: inside a skirt's hem was culled and showed as holes from below (leg_raise skirt: 3,111 pixels over 9 views at 720p
#: and 2160p, :func:`kisekae.render.poke.culled_skin_seen`); at 45 degrees 1,606, with the same poke-through once
#: culled in the seed's matrix (docs/fit.md, "Culled skin that shows"). The rest-pose rule of tight fabric
#: (:data:`TIGHT_COVER`) asks the same cone.
COVER_CONE = (45.0, 8)


def covered_skin_triangles(avatar: Avatar, name: str) -> np.ndarray:
    """(F,) bool body triangles hidden under garment ``name``: the mask an engine culls at run time.

    Phase 2 of the seed note, baked once per (avatar, garment) and cached on the avatar. A body vertex is
    covered (see :func:`kisekae.fit.covered.avatar_covered`) when the skinned garment hides it in every one of
    the seed's verification poses (stand, leg_raise, crouch) from every direction of a cone of :data:`COVER_CONE`
    around its normal, or, for a garment that is not skirt-like (no skirt
    bias by default: :func:`kisekae.fit.fix.params_for`), when fabric within :data:`TIGHT_COVER` hides it at
    rest: such fabric follows its skin, so the skin stays under it in any pose, also where a bend folds the
    skin through the fabric (the crouch's hip crease, where the per-pose test alone loses it). A triangle is
    culled when its three vertices are covered. Loose fabric (a skirt's hem over the thighs) is only trusted
    where every verification pose agrees, because a raised leg comes out from under it.
    """
    from ..avatar.pose import Pose
    from ..avatar.poses import VERIFICATION_POSES, named_pose
    from .covered import avatar_covered, covered_triangles

    def make():
        poses = [named_pose(avatar.skeleton, p) for p in VERIFICATION_POSES]
        covered = avatar_covered(avatar, poses, [name], cone_angle=COVER_CONE[0], cone_rays=COVER_CONE[1])[0]
        if params_for(name, None).skirt_bias == 0:
            covered = covered | avatar_covered(avatar, [Pose.rest(avatar.skeleton)], [name],
                                               max_distance=TIGHT_COVER, cone_angle=COVER_CONE[0],
                                               cone_rays=COVER_CONE[1])[0]
        return covered_triangles(covered, avatar.body.mesh.faces)

    return _cached(avatar, "_kisekae_covered", name, make)


def garment_plan(avatar: Avatar, name: str, params: PushParams):
    """The garment's :class:`~kisekae.fit.pushout.CapsulePushPlan` for ``params``, prepared once and cached.

    The plan checks the parameters, resolves the masks and orders the rest-pose vertices into compact
    blocks; every frame then only runs its kernel. Masks are 0, as :func:`push_out_runtime` has them by default.
    """
    return _cached(avatar, "_kisekae_push_plans", (name, tuple(vars(params).items())),
                   lambda: CapsulePushPlan(avatar.part(name).mesh.vertices, params, tightness=0.0, softness=0.0))


def runtime_pose(avatar: Avatar, pose, garments, params: PushParams | dict | None = None,
                 method: str = "carried", state: CarryState | None = None, edge_lift: bool = True,
                 finish_step: float | None = FINISH_STEP, layers: bool = False, correctives: str = "auto",
                 compression: float = COMPRESSION_LIMIT, body_follow: bool = BODY_FOLLOW,
                 depth_bound: bool = DEPTH_BOUND, normal_guard: bool = NORMAL_GUARD,
                 self_layers: bool = SELF_LAYERS) -> dict:
    """Correct every garment of one pose with the per-frame path.

    Parameters
    ----------
    avatar : Avatar
    pose : Pose
    garments : list of garment names
    params : PushParams, dict name -> PushParams, or None for the defaults (skirt mode for skirts)
    method : one of :data:`RUNTIME_METHODS`
    state : CarryState or None, for ``"carried"``: the previous frame's corrections, updated in place (None: a
        fresh state, so the pose warms up from the rest pose); the other methods ignore it
    edge_lift : bool, for ``"carried"`` and ``"surface"``: end with the edge lift and the unflip
        (:mod:`kisekae.fit.edge_lift`, :mod:`kisekae.fit.unflip`) and a last stretch limit (the default since
        2026-12-04: over 17 poses x 4 garments a third of the edges through the body and of the flipped faces,
        docs/fit.md); False: the correction ends with the stretch limit
    finish_step : float or None, metres, with ``edge_lift``: the most the edge lift and unflip may move a vertex in one
        frame (:func:`kisekae.fit.surface.surface_runtime`'s ``finish_step``; the carry takes the rest up in the next
        frames; default :data:`~kisekae.fit.surface.FINISH_STEP`, 4 mm, which keeps the tights' pops under 5 mm);
        None: no cap
    layers : bool, for ``"carried"`` and ``"surface"``: the garments are worn together, innermost first, and each
        garment is also pushed out of the corrected garments beneath it, between its stretch limit and its edge lift
        (:func:`kisekae.fit.layer_push.layer_push`, with candidates of each pair baked once:
        :func:`layer_candidates`); False: each garment is corrected against the body alone
    correctives : ``"auto"`` or ``"off"``, for ``"carried"`` and ``"surface"``: start from the skinned garment plus its
        pose-space correctives where it has them (:func:`kisekae.fit.garment_correctives.garment_correctives`: the
        packaged ones of the built-in garments, or those given with ``use_garment_correctives``), or from plain
        skinning
    compression : float in [0, 1), for ``"carried"`` and ``"surface"``: the stretch limit's compression limit of the
        cloth that clings to the body (:func:`garment_shortest`; default
        :data:`~kisekae.fit.surface.COMPRESSION_LIMIT`); 0: no floor, edges shrink freely (the path before 2026-12-06)
    body_follow : bool, for ``"carried"`` and ``"surface"``: the push starts from the skinned garment plus the outward
        part of the body's displacement beyond plain skinning at each vertex's bound point, faded out with its rest
        clearance (:mod:`kisekae.fit.body_follow`; default :data:`BODY_FOLLOW`; nothing to follow on a plain body)
    depth_bound : bool, for ``"carried"`` and ``"surface"``: the pushes trust no candidate that puts a vertex deeper
        behind it than the body can be there (:mod:`kisekae.fit.depth_bound`, :func:`avatar_depth_bound`; default
        :data:`DEPTH_BOUND`); False: every candidate is trusted (the path before 2026-12-07)
    normal_guard : bool, for ``"carried"`` and ``"surface"``: the body's normals leave out the triangles that the pose
        turned away from the skinned normals (:mod:`kisekae.geom.guarded_normals`; default :data:`NORMAL_GUARD`);
        False: every triangle counts (the path before 2026-12-07)
    self_layers : bool, for ``"carried"`` and ``"surface"``: keep the garment's outer sheets outside its own inner
        sheets (:mod:`kisekae.fit.self_layers`; default :data:`SELF_LAYERS`); False: the path before 2026-12-08

    Returns
    -------
    dict name -> (positions (N, 3) float32 metres, metrics dict with ``max_push_m``, ``time_ms`` (one frame's
    correction; for ``"carried"`` the last step's) and ``runtime_method``; ``"carried"`` adds ``runtime_steps``,
    the steps taken since the previous frame; ``"carried"`` and ``"surface"`` add ``edge_lift``, ``finish_step``,
    ``compression_limit``, ``body_follow``, ``self_layers``, ``depth_bound`` and ``normal_guard``)
    """
    check_compression(compression)
    if method not in RUNTIME_METHODS:
        raise KisekaeError(f"unknown per-frame method {method!r}; choose one of {', '.join(RUNTIME_METHODS)}",
                           "runtime method")
    m = pose.skinning_matrices(avatar.skeleton)
    if layers and method == "capsules":
        raise KisekaeError("the capsule method corrects each garment alone; layers need 'carried' or 'surface'",
                           "runtime method")
    if method != "capsules":
        # the surface methods work in the frame of the first bone's skinning translation, so where the body stands in
        # the world changes nothing but the final float32 rounding (float32 skinning 10 m away would add 1e-6 m of
        # noise, which the push's choices between candidates can amplify)
        body_follow = bool(body_follow) and avatar.body.deform is not None  # a plain body has nothing to follow
        origin = m[0, :3, 3].copy()
        local = np.array(m, dtype=np.float64)
        local[:, :3, 3] -= origin
        checks = BodyChecks(avatar_depth_bound(avatar) if depth_bound else None, bool(normal_guard))
        if method == "carried":
            out = _carried(avatar, local, garments, params, CarryState() if state is None else state, edge_lift,
                           finish_step, layers, correctives, compression, body_follow, checks, self_layers)
        else:
            out = _surface(avatar, local, garments, params, edge_lift, finish_step, layers, correctives, compression,
                           body_follow, checks, self_layers)
        return {name: ((pos + origin).astype(np.float32), metrics) for name, (pos, metrics) in out.items()}
    return _capsules(avatar, pose, m, garments, params)


def _capsules(avatar: Avatar, pose, m, garments, params) -> dict:
    """:func:`runtime_pose`'s ``"capsules"`` method: the capsule field, then the skin-bound clearance and the cap."""
    body = avatar.body.posed(m)
    faces = avatar.body.mesh.faces
    capsules = avatar_capsule_rig(avatar).posed(pose.world_matrices(avatar.skeleton))
    out = {}
    for name in garments:
        p = params_for(name, params.get(name) if isinstance(params, dict) else params)
        binding = garment_binding(avatar, name)
        t0 = time.perf_counter()
        new, push = push_out_runtime(binding, avatar.part(name).posed(m), capsules, body, faces, p,
                                     plan=garment_plan(avatar, name, p))
        out[name] = (new.astype(np.float32), _metrics(push, (time.perf_counter() - t0) * 1e3, "capsules"))
    return out


def _metrics(push, ms: float, method: str, **extra) -> dict:
    return {"max_push_m": float(push.max(initial=0.0)), "time_ms": ms, "runtime_method": method, **extra}


def _setup(avatar: Avatar, garments, params, edge_lift: bool, correctives: str = "off",
           compression: float = COMPRESSION_LIMIT, follow: bool = False, self_layers: bool = False) -> dict:
    """Per garment, what does not change from frame to frame: ``(params, candidates, ring, chords, edge lift data,
    faces, pose-space correctives or None, the stretch limit's floor, the body follow's binding or None, the self
    layers and the garment's faces or None)``, the baked parts made once and cached on the avatar."""
    return {name: (params_for(name, params.get(name) if isinstance(params, dict) else params),
                   garment_candidates(avatar, name), garment_ring(avatar, name), garment_chord(avatar, name),
                   *((garment_lift(avatar, name), garment_faces(avatar, name)) if edge_lift else (None, None)),
                   garment_correctives(avatar, name, correctives), garment_shortest(avatar, name, compression),
                   garment_follow(avatar, name) if follow else None,
                   garment_own_layers(avatar, name) if self_layers else None)
            for name in garments}


def garment_follow(avatar: Avatar, name: str) -> tuple:
    """``(corners, bary, shares)`` of the garment's body follow (:mod:`kisekae.fit.body_follow`): its rest binding to
    the body and each vertex's share of the body's displacement, made once and cached on the avatar."""
    def make():
        bind = garment_binding(avatar, name)
        return (np.ascontiguousarray(bind.corners, dtype=np.int64), np.ascontiguousarray(bind.bary, dtype=np.float64),
                follow_weights(bind.rest_offset))

    return _cached(avatar, "_kisekae_follow", name, make)


def _surface_step(avatar: Avatar, m, setup: dict, starts=None, finish_step: float | None = None,
                  layers: bool = False, checks: BodyChecks | None = None) -> dict:
    """One frame of the surface push on the body posed by skinning matrices ``m``: name -> (skinned (N, 3) float64,
    corrected (N, 3) float64, push (N,) from plain skinning, milliseconds the garment's correction took; the skinned
    positions include the garment's correctives, if it has them); ``starts``: callable
    (name, skinned) -> where the first push starts, or None: the skinned positions; ``finish_step`` as
    :func:`kisekae.fit.surface.surface_runtime`'s; ``layers``: the garments of ``setup`` are worn together, innermost
    first, and each is pushed out of the corrected garments before it between its stretch limit and its edge lift
    (:func:`_beneath`); ``checks``: the body's depth bound and normal guard (None: neither)."""
    checks = BodyChecks() if checks is None else checks
    depth = checks.depth
    faces = avatar.body.mesh.faces
    body = avatar.body.posed(m).astype(np.float64)
    normals = body_normals(avatar, body, m, checks.guard)
    skinned_body = None  # the body by plain skinning, made once a frame for the first garment that follows it
    out = {}
    for name, (p, cand, ring, chord, lift, gfaces, gc, shortest, follow, own) in setup.items():
        plain = avatar.part(name).posed(m).astype(np.float64)
        between = _beneath(avatar, name, p, ring, out) if layers and out else None
        t0 = time.perf_counter()
        # the correctives and the body follow only move where the first push starts: smoothing, stretch limit and cap
        # measure from plain skinning, so the cloth keeps its skinned edge lengths
        x = corrected_skin(avatar, name, gc, m, plain)
        if follow is not None:
            skinned_body = avatar.body.skinned(m) if skinned_body is None else skinned_body
            d = body_follow(*follow, body, skinned_body, normals)
            if d.any():  # near rest the body does nothing beyond skinning: no passes to pay for
                x = x + smooth_push(d, ring, FOLLOW_SMOOTH)
        start = x if starts is None else starts(name, x)
        new, push = surface_runtime(plain, cand, ring, body, normals, faces, p, chord=chord, start=start, lift=lift,
                                    faces=gfaces, finish_step=finish_step, between=between, shortest=shortest,
                                    depth_bound=depth, self_layers=own)
        out[name] = (x, new, push, (time.perf_counter() - t0) * 1e3)
    return out


def _beneath(avatar: Avatar, name: str, params: PushParams, ring, done: dict):
    """The ``between`` stage of garment ``name`` worn over the garments in ``done`` (name -> :func:`_surface_step`'s
    result, innermost first): :func:`kisekae.fit.layer_push.layer_push` out of each of them in turn. The baked
    data is fetched here, before the frame's timing starts."""
    from .layer_push import layer_push

    data = [(result[1], avatar.part(inner).mesh, layer_candidates(avatar, name, inner), layer_lift(avatar, name, inner))
            for inner, result in done.items()]

    def stage(points):
        for inner_points, mesh, cand, lift in data:
            points = layer_push(points, cand, ring, inner_points, mesh.faces, params, inner_weld=mesh.weld,
                                lift=lift)[0]
        return points

    return stage


def layer_lift(avatar: Avatar, outer: str, inner: str):
    """The edge lift data of garment ``outer`` against garment ``inner``: ``(EdgeSamples, their candidates on the
    inner triangles, vertex_samples table)`` (:func:`kisekae.fit.layer_push.layer_push`'s ``lift``), or None when the
    outer garment has no samples; made once and cached on the avatar (the candidates also on disk)."""
    from .edge_lift import vertex_samples

    def make():
        mesh = avatar.part(outer).mesh
        samples = garment_samples(avatar, outer)
        if len(samples) == 0:
            return None
        return samples, layer_candidates(avatar, outer, inner, samples=samples), vertex_samples(samples, mesh.weld)

    return _cached(avatar, "_kisekae_layer_lift", (outer, inner), make)


def layer_candidates(avatar: Avatar, outer: str, inner: str, *, samples=None,
                     progress: bool = False) -> SurfaceCandidates:
    """The triangles of garment ``inner`` near each vertex of garment ``outer`` over the range of motion
    (:func:`kisekae.fit.layer_push.bake_layer_candidates`), cached on the avatar and on disk; with ``samples``
    (:class:`~kisekae.fit.edge_lift.EdgeSamples` of ``outer``) those of the samples instead."""
    from .layer_push import bake_layer_candidates

    def make():
        # the outer garment's key (body, skeleton, settings, probe poses) and the inner garment's own entries
        key = ["layer-candidates", LAYER_BAKE_VERSION, *candidates_cache_key(avatar, outer)[1:],
               *_garment_key_entries(avatar, inner)]
        if samples is not None:
            key += [samples.ends, samples.bary]
        arrays = cached_arrays("candidates", key, lambda: {
            "layer": bake_layer_candidates(avatar, outer, inner, k=CANDIDATES, n_poses=BAKE_POSES, seed=BAKE_SEED,
                                           progress=progress,
                                           points_of=None if samples is None else samples.points).triangles})
        return SurfaceCandidates(np.ascontiguousarray(arrays["layer"], dtype=np.int32),
                                 len(avatar.part(inner).mesh.faces))

    return _cached(avatar, "_kisekae_layer_candidates", (outer, inner, samples is not None), make)


def _surface(avatar: Avatar, m, garments, params, edge_lift: bool = False, finish_step: float | None = None,
             layers: bool = False, correctives: str = "off", compression: float = COMPRESSION_LIMIT,
             follow: bool = False, checks: BodyChecks | None = None, self_layers: bool = False) -> dict:
    """:func:`runtime_pose`'s ``"surface"`` method (stateless); positions float64, cast once by the caller."""
    checks = BodyChecks() if checks is None else checks
    step = _surface_step(avatar, m, _setup(avatar, garments, params, edge_lift, correctives, compression, follow,
                                           self_layers),
                         finish_step=finish_step, layers=layers, checks=checks)
    return {name: (new, _metrics(push, ms, "surface", edge_lift=edge_lift, finish_step=finish_step,
                                 compression_limit=compression, body_follow=bool(follow),
                                 self_layers=bool(self_layers), **checks.metrics()))
            for name, (x, new, push, ms) in step.items()}


def _carried(avatar: Avatar, m, garments, params, state: CarryState, edge_lift: bool = False,
             finish_step: float | None = None, layers: bool = False, correctives: str = "off",
             compression: float = COMPRESSION_LIMIT, follow: bool = False,
             checks: BodyChecks | None = None, self_layers: bool = False) -> dict:
    """:func:`runtime_pose`'s ``"carried"`` method: every step from the state's pose to ``m``, the state updated;
    positions float64, cast once by the caller."""
    state.check()
    checks = BodyChecks() if checks is None else checks
    steps = state.path(avatar.skeleton, m)
    setup = _setup(avatar, garments, params, edge_lift, correctives, compression, follow, self_layers)
    out = {}
    for ms in steps:
        step = _surface_step(avatar, ms, setup,
                             lambda name, x: carry_start(x, state.correction(name, len(x)), state.keep), finish_step,
                             layers, checks)
        for name, (x, new, push, ms_taken) in step.items():
            metrics = _metrics(push, ms_taken, "carried", runtime_steps=len(steps), edge_lift=edge_lift,
                               finish_step=finish_step, compression_limit=compression, body_follow=bool(follow),
                               self_layers=bool(self_layers), **checks.metrics())
            state.corrections[name] = new - x
            out[name] = (new, metrics)
    state.skin_matrices = np.array(m, dtype=np.float64)
    return out


def pop_mm(previous_correction, correction) -> float:
    """Largest change of the per-vertex correction between two consecutive frames, millimetres.

    Parameters
    ----------
    previous_correction, correction : (N, 3) corrected minus skinned positions, metres
    """
    a = np.asarray(previous_correction, dtype=np.float64)
    b = np.asarray(correction, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"corrections differ in shape: {a.shape} and {b.shape}")
    return float(np.linalg.norm(b - a, axis=1).max(initial=0.0) * 1e3)

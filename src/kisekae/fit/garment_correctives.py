"""Pose-space correctives of a garment: the per-frame correction, learned over the range of motion.

The per-frame surface push (:mod:`kisekae.fit.runtime`) starts each frame from the skinned garment. In a deep pose
skinning leaves centimetres of cloth inside the body (sit: 56 tights vertices up to 23 mm deep), so the push and
its smoothing, stretch limit and edge lift have much to do, and what they do changes quickly from frame to frame:
over one second from stand the tights' correction changed by up to 4.5-5.2 mm a frame (``pop_mm``). Games meet
this with corrective blend shapes driven by the joint rotations, and the body already has them
(:mod:`kisekae.avatar.correctives`). This module gives a garment its own, learned from the per-frame path itself:

1. **Samples** (:func:`garment_correction_samples`): the garment corrected by :func:`kisekae.fit.runtime.runtime_pose`
   (the default carried method, each pose warmed up from rest, without correctives) in the same training poses as
   the body's bake (:func:`kisekae.avatar.correctives.training_poses`: range of motion and arms at the sides), with
   what it leaves through the body lifted out offline (:func:`kisekae.fit.crossing_repair.repair_crossings`); each
   correction taken back to rest space through the vertex's blended bone rotation, as the body's.
2. **Fit**: :func:`kisekae.avatar.correctives.fit_correctives` on the garment's own mesh and skin (each vertex's
   joints are those of its bones), with basis width :data:`SIGMA` (wider than the body's: the fit should carry the
   smooth part of the correction, and the push the rest).
3. **Run time**: the correctives' offsets are added to the skinned garment (:func:`corrected_skin`), and the
   first surface push starts there, while its smoothing, stretch limit and cap measure from plain skinning. An
   engine evaluates them with the body's shader functions (``KisekaeCorrectiveFeature``, ``KisekaeCorrectiveOffset``)
   on the garment's buffers and carries them with ``KisekaeSkinnedOffset`` (``kisekae fit`` writes
   ``NAME.correctives.json + .bytes``); not as blend shapes on the garment, which would leave the engine without the
   plain skinning the push measures from (docs/engine-integration.md, "Surface push", step 4).

Packaged bakes exist for the built-in tights on both built-in rigs, made on the default contact body
(:func:`packaged_garment_correctives`). The skirt has none: measured over one second from stand, its correctives
made the pops worse (knee_bend 5.7 -> 7.4 mm, sit 9.3 -> 10.5 mm). In the sit the largest pop sits at the belly
crease, where the fit carries about 10 of the push's 50 mm, so the push still does most of the work there and
now starts from a place that changes with the pose. Another garment gets its own with
:func:`bake_garment_correctives` (``kisekae bake-correctives --garment NAME``) and :func:`use_garment_correctives`
(``kisekae check --garment-correctives FILE``); measure its pops with and without them before using them (docs/fit.md,
"Garment correctives").
"""

from __future__ import annotations

import numpy as np

from ..avatar.correctives import (PoseCorrectives, TRAIN_ARM_POSES, TRAIN_POSES, BodyCorrectives, add_skinned_offsets,
                                  chunk_bounds, fit_correctives, load_correctives, mesh_hash, pooled_samples,
                                  sample_offsets, training_poses)
from ..errors import KisekaeError

#: Width of a garment's basis functions, in units of the median spacing of a joint's centres (docs/fit.md).
SIGMA = 2.0
#: The same for the arm joints (:func:`kisekae.avatar.correctives.arm_joints`), at least the body's width.
ARM_SIGMA = 2.0
#: Per-frame choices of :func:`kisekae.fit.runtime.runtime_pose`'s ``correctives``.
CHOICES = ("auto", "off")


def body_key(avatar) -> dict:
    """What a garment bake depends on besides the garment: the body's correctives (their hash) and contact gap."""
    from ..avatar.part_contact import PartContact

    deform = avatar.body.deform
    deform = deform.before if isinstance(deform, PartContact) else deform
    corr = getattr(getattr(deform, "correctives", None), "mesh_hash", None)
    contact = deform.then if isinstance(deform, BodyCorrectives) else deform
    gap = getattr(contact, "gap", None)
    # The part contact (kisekae.avatar.part_contact) is not in it: it moves the body only where parts meet away from
    # their joints, so correctives learned on the body without it serve the body with it.
    return {"body_correctives": corr, "gap": None if gap is None else round(float(gap), 9)}


def garment_correction_samples(avatar, name: str, poses, params=None, progress=None, repair: bool = True) -> tuple:
    """The per-frame path's corrections of garment ``name`` over ``poses``, in rest space.

    Parameters
    ----------
    avatar : Avatar, posed as the runtime poses it (with its body contact)
    name : garment name
    poses : list of Pose
    params : PushParams or None for the garment's defaults
    progress : callable ``progress(done, total)`` or None
    repair : bool, lift what the per-frame path left through the body out of each sample first
        (:func:`kisekae.fit.crossing_repair.repair_crossings` against the posed body, offline): the correctives then
        carry it into the per-frame start (docs/fit.md "Garment correctives")

    Returns
    -------
    (mats (S, B, 4, 4) float64 skinning matrices, offsets (S, N, 3) float32 rest-space corrections, metres)
    """
    from ..qa.check import body_topology
    from ..qa.penetration import BodyQuery
    from .crossing_repair import repair_crossings
    from .fix import params_for
    from .runtime import runtime_pose

    part = avatar.part(name)
    push_params = params_for(name, params.get(name) if isinstance(params, dict) else params)
    mats, offsets = [], []
    for s, pose in enumerate(poses):
        m = pose.skinning_matrices(avatar.skeleton).astype(np.float64)
        # learned from the path without the body follow, which the frame then adds on top: learned from the path
        # with it (what is left after the follow) they did worse on the tights' 17 poses (13 edges through the body
        # and 6 flipped faces against 10 and 4, docs/fit.md 'Body follow')
        y = runtime_pose(avatar, pose, [name], params, correctives="off", body_follow=False)[name][0]
        y = y.astype(np.float64)
        if repair:
            query = BodyQuery(body_topology(avatar), avatar.body.posed(m))
            # the lift kept to the neighbourhood (slack None): over the tights' 17 poses 0 / 8 / 2 inside / crossings /
            # flipped and pops 3.6 / 4.2 / 3.5 mm (knee_bend / sit / lunge), against 0 / 10 / 2 and a 5.6 mm sit pop
            # with the fix's 5 % slack (docs/fit.md 'Samples repaired offline')
            y = repair_crossings(query, y, part.mesh.edges, push_params.margin, weld=part.mesh.weld, slack=None)[0]
        x = part.skinned(m).astype(np.float64)
        mats.append(m)
        offsets.append(sample_offsets(part.skin, m, x, y, f"{name} corrective sample {pose.name}"))
        if progress is not None:
            progress(s + 1, len(poses))
    nb = avatar.skeleton.n_bones
    return np.array(mats).reshape(-1, nb, 4, 4), np.array(offsets).reshape(-1, part.mesh.n_vertices, 3)


def _chunk(job):
    avatar, name, n_poses, arm_poses, seed, lo, hi, repair = job
    return garment_correction_samples(avatar, name, training_poses(avatar.skeleton, n_poses, arm_poses, seed)[lo:hi],
                                      repair=repair)


def bake_garment_correctives(avatar, name: str, n_poses: int = TRAIN_POSES, seed: int = 0, *,
                             arm_poses: int = TRAIN_ARM_POSES, jobs: int = 1, progress=None, sigma: float = SIGMA,
                             arm_sigma: float = ARM_SIGMA, repair: bool = True) -> PoseCorrectives:
    """Sample the per-frame path over the training poses and fit garment ``name``'s correctives (module docstring).

    About 0.3 s a pose for the built-in tights on one core with the repair of each sample (540 poses: 5 minutes;
    without it, ``repair=False``, 0.17 s). ``jobs`` worker processes share the poses; the result does not depend on it.
    """
    avatar.part(name)
    poses = training_poses(avatar.skeleton, n_poses, arm_poses, seed)
    if jobs <= 1:
        mats, offsets = garment_correction_samples(avatar, name, poses, progress=progress, repair=repair)
    else:
        mats, offsets = pooled_samples(_chunk, [(avatar, name, int(n_poses), int(arm_poses), seed, lo, hi, bool(repair))
                                                for lo, hi in chunk_bounds(len(poses), 16)],
                                       jobs, len(poses), progress)
    settings = {"poses": "range_of_motion", "n_poses": int(n_poses), "arm_poses": int(arm_poses), "seed": int(seed),
                "garment": name, "repair": bool(repair), **body_key(avatar)}
    return fit_correctives(avatar, mats, offsets, sigma=sigma, arm_sigma=arm_sigma, settings=settings, part=name)


def _fits(correctives: PoseCorrectives, avatar, name: str) -> bool:
    part = avatar.part(name)
    return (correctives.n_vertices == part.mesh.n_vertices and list(correctives.bone_names) == list(avatar.skeleton.names)
            and correctives.mesh_hash == mesh_hash(part.mesh.vertices, part.mesh.faces, part.skin)
            and all(correctives.settings.get(k) == v for k, v in body_key(avatar).items()))


def packaged_garment_path(rig: str, name: str):
    """Where the packaged bake of built-in garment ``name`` on ``rig`` lies (it may not exist)."""
    from importlib import resources

    return resources.files("kisekae.data").joinpath(f"garment_correctives_{rig}_{name}.npz")


_PACKAGED: dict = {}


def packaged_garment_correctives(avatar, name: str) -> PoseCorrectives | None:
    """The packaged bake of garment ``name`` when it was made for this garment (rest mesh and skin), skeleton and
    body (its correctives and contact gap), else None; decided once per avatar and garment (the check hashes the
    garment's rest mesh and skin, which the per-frame path should not do every frame)."""
    decided = avatar.__dict__.setdefault("_kisekae_packaged_garment_correctives", {})
    if name not in decided:
        key = (getattr(avatar, "rig", None), name)
        if key not in _PACKAGED:
            p = packaged_garment_path(*key) if key[0] else None
            _PACKAGED[key] = load_correctives(str(p)) if p is not None and p.is_file() else None
        c = _PACKAGED[key]
        decided[name] = c if c is not None and _fits(c, avatar, name) else None
    return decided[name]


def use_garment_correctives(avatar, name: str, correctives: PoseCorrectives | None) -> None:
    """Let the per-frame path of ``avatar`` use ``correctives`` for garment ``name`` (None: none, not even the
    packaged ones); a clear error when they were made for another garment, skeleton or body."""
    if correctives is not None and not _fits(correctives, avatar, name):
        raise KisekaeError(f"made for another garment, skeleton or body than {name!r} on this avatar; bake them with "
                           "`kisekae bake-correctives --garment`", "garment correctives")
    avatar.__dict__.setdefault("_kisekae_garment_correctives", {})[name] = correctives


def garment_correctives(avatar, name: str, choice: str = "auto") -> PoseCorrectives | None:
    """The correctives the per-frame path uses for garment ``name``: ``"auto"``, those given with
    :func:`use_garment_correctives`, else the packaged ones where they fit; ``"off"``: None."""
    if choice not in CHOICES:
        raise KisekaeError(f"unknown choice {choice!r}; choose one of {', '.join(CHOICES)}", "garment correctives")
    if choice == "off":
        return None
    given = avatar.__dict__.get("_kisekae_garment_correctives", {})
    if name in given:
        return given[name]
    return packaged_garment_correctives(avatar, name)


def corrected_skin(avatar, name: str, correctives: PoseCorrectives | None, skin_matrices, skinned) -> np.ndarray:
    """(N, 3) float64: ``skinned`` (the garment skinned by ``skin_matrices``) plus its correctives' offsets carried
    by each vertex's blended rotation; ``skinned`` itself when ``correctives`` is None."""
    x = np.asarray(skinned, dtype=np.float64)
    if correctives is None:
        return x
    part = avatar.part(name)
    d = BodyCorrectives(correctives, avatar.skeleton, part.skin).rest_offsets(skin_matrices)
    return add_skinned_offsets(x, part.skin, skin_matrices, d)

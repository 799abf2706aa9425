"""Pose-space correctives of the body: the offline contact solve, learned per joint for the per-frame path.

The continuation from rest (:mod:`kisekae.avatar.contact_solve`) keeps body parts apart in deep poses (crouch:
296 buried body vertices under plain skinning, 12 after it), but it costs about a second a pose. Games meet the
same problem with *corrective shapes*: displacements of the rest mesh, added before skinning, whose weights
follow the joint rotations. This module learns them from the solve:

1. **Samples** (:func:`correction_samples`): the body in ``n`` range-of-motion poses and ``m`` poses with the arms
   at the sides (:func:`training_poses`, none of the named poses or clips), each solved; the
   correction is taken back to rest space through each vertex's blended bone rotation,
   ``d = (Σ_b w_b R_b)⁻¹ (y − x)``, so that ``x' = LBS(rest + d)`` reproduces the solved body exactly.
2. **Features** (:func:`joint_features`): for every joint that the samples rotate, ``K`` radial basis functions
   of its local rotation (unit quaternions; distance ``θ(q, c) = 2 acos |q · c|``, computed as in :func:`_pair_angle`;
   ``g(θ) = exp(−(θ / σ)²)``)::

       φ_k(q) = g(θ(q, c_k)) − g(θ(q, 1)) g(θ(c_k, 1))

   The second term makes every feature exactly 0 at the rest rotation (so the rest pose is unchanged), and
   both terms fade far from every centre, so a rotation outside what the samples covered gets no correction
   rather than the nearest centre's. Centres: ``K`` farthest-point picks of the samples' rotations, starting
   from the one farthest from rest (the rest rotation is not a centre: its feature would vanish everywhere); ``σ`` = :data:`SIGMA` times the median distance from a centre to its nearest neighbour, and
   :data:`ARM_SIGMA` times it for the joints of the arms-at-the-sides draw (clavicles, upper and lower arms).
3. **Fit** (:func:`fit_correctives`): each vertex's rest-space correction is a sum over the joints near it
   (the joints of the bones it is weighted to, their parents and children) of a linear function of those
   joints' features, fitted by ridge regression (``λ`` = :data:`RIDGE` times the mean diagonal of the Gram
   matrix) over the samples. Vertices that no sample moved more than :data:`ACTIVE` metres get none. On the body's
   thin parts (the fingers) the fitted offsets are then smoothed over the one-ring (:mod:`kisekae.avatar.thin_parts`).

At run time (:func:`corrective_offsets`, Numba; :func:`corrective_offsets_numpy`, the reference) a frame costs
the features of a few joints (``J × K`` numbers, computed once) and, per vertex, a short sum; the offsets are
added in rest space before skinning, exactly like an engine's blend shapes, or equivalently to the skinned
body through the blended rotation (:func:`skinned_offsets`). :class:`BodyCorrectives` is the body ``deform``
(then the joint planes of :mod:`kisekae.avatar.contact`, if given). A bake is saved as ``.npz`` with a JSON
header (:func:`save_correctives`, :func:`load_correctives`, which refuse a file made for another body).

Measured on the built-in body (docs/contact.md, "Pose-space correctives"): the named poses, none of them
trained on, come out as buried as the offline solve (crouch 12 → 12, with the joint planes after it 4).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numba
import numpy as np

from ..errors import KisekaeError

#: Radial basis functions per joint.
CENTRES = 16
#: Width of a basis function, in units of the median spacing of a joint's centres.
SIGMA = 1.0
#: The same for the joints that :data:`kisekae.avatar.poses.ARMS_AT_SIDES` turns (clavicles, upper and lower arms),
#: chosen by measurement (docs/contact.md, "Basis width"): at 1.0, arms hanging at the sides stayed buried in the
#: ribs (36 buried body vertices; 9 at 1.75); widening the legs' and spine's bases too changed their body little
#: and made the per-frame garments in the deep knee bends worse.
ARM_SIGMA = 1.75
#: Ridge weight, relative to the mean diagonal of the Gram matrix of the features.
RIDGE = 1e-2
#: Joints that the samples turn by less than this (radians) get no features.
MIN_TURN = np.radians(5.0)
#: Vertices whose largest sampled correction is below this (metres) get no corrective.
ACTIVE = 2e-4
#: Range-of-motion poses a bake solves by default.
TRAIN_POSES = 360
#: Poses with the arms at the sides (:data:`kisekae.avatar.poses.ARMS_AT_SIDES`) a bake solves besides, by default.
TRAIN_ARM_POSES = 180
#: Bake file format version.
VERSION = 1


def _angle(q, c) -> np.ndarray:
    """Rotation angle between unit quaternions ``q (..., 4)`` and each of ``c (M, 4)``: (..., M) radians
    (:func:`_pair_angle` of every pair)."""
    return _pair_angle(np.asarray(q, dtype=np.float64)[..., None, :], np.asarray(c, dtype=np.float64))


def joint_quaternions(skeleton, skin_matrices) -> np.ndarray:
    """(B, 4) unit quaternions (x, y, z, w) of every bone's local rotation from its rest orientation.

    Parameters
    ----------
    skeleton : Skeleton
    skin_matrices : (B, 4, 4) skinning matrices of a pose
    """
    from scipy.spatial.transform import Rotation

    from .contact_solve import local_motion

    rot, _ = local_motion(skeleton, skin_matrices)
    q = Rotation.from_matrix(rot).as_quat()
    return q * np.where(q[:, 3:] < 0, -1.0, 1.0)  # w >= 0: one of the two signs, the same on every machine


def _pair_angle(a, b) -> np.ndarray:
    """Rotation angle between unit quaternions ``a`` and ``b`` broadcast against each other (last axis 4), radians.

    ``4 atan2(|a − b'|, |a + b'|)`` with ``b' = ±b`` on ``a``'s side (``a · b' ≥ 0``): the same angle as
    ``2 acos |a · b|`` without its loss of precision near 0, so float32 shaders agree with it."""
    side = np.where(np.sum(a * b, axis=-1) < 0.0, -1.0, 1.0)[..., None]
    bb = side * b
    return 4.0 * np.arctan2(np.linalg.norm(a - bb, axis=-1), np.linalg.norm(a + bb, axis=-1))


def joint_features(quats, centres, sigma) -> np.ndarray:
    """The radial basis features of the module docstring.

    Parameters
    ----------
    quats : (J, 4) or (S, J, 4) unit quaternions of the joints' local rotations
    centres : (J, K, 4) unit quaternions, per joint
    sigma : (J,) radians

    Returns
    -------
    (J, K) or (S, J, K) float64, exactly 0 for the rest rotation
    """
    q = np.asarray(quats, dtype=np.float64)
    c = np.asarray(centres, dtype=np.float64)
    w = np.asarray(sigma, dtype=np.float64)[:, None]
    one = np.array([0.0, 0.0, 0.0, 1.0])
    g = np.exp(-(_pair_angle(q[..., :, None, :], c) / w) ** 2)        # (..., J, K)
    g_rest = np.exp(-(_pair_angle(q, one) / w[:, 0]) ** 2)            # (..., J)
    c_rest = np.exp(-(_pair_angle(c, one) / w) ** 2)                  # (J, K)
    return g - g_rest[..., None] * c_rest


@numba.njit(cache=True, nogil=True)
def _quat_angle(ax, ay, az, aw, bx, by, bz, bw):  # pragma: no cover - compiled
    """:func:`_pair_angle` of two quaternions given by their components."""
    if ax * bx + ay * by + az * bz + aw * bw < 0.0:
        bx, by, bz, bw = -bx, -by, -bz, -bw
    d = np.sqrt((ax - bx) ** 2 + (ay - by) ** 2 + (az - bz) ** 2 + (aw - bw) ** 2)
    s = np.sqrt((ax + bx) ** 2 + (ay + by) ** 2 + (az + bz) ** 2 + (aw + bw) ** 2)
    return 4.0 * np.arctan2(d, s)


@numba.njit(cache=True, nogil=True)
def _matrix_quaternion(r):  # pragma: no cover - compiled
    """Unit quaternion (x, y, z, w), w >= 0, of a rotation matrix (the largest of trace and diagonal leads, as
    SciPy's ``Rotation.from_matrix``)."""
    q = np.empty(4)
    tr = r[0, 0] + r[1, 1] + r[2, 2]
    lead = 3
    best = tr
    for i in range(3):
        if r[i, i] > best:
            best = r[i, i]
            lead = i
    if lead == 3:
        q[3] = 1.0 + tr
        q[0] = r[2, 1] - r[1, 2]
        q[1] = r[0, 2] - r[2, 0]
        q[2] = r[1, 0] - r[0, 1]
    else:
        i = lead
        j = (i + 1) % 3
        k = (j + 1) % 3
        q[i] = 1.0 - tr + 2.0 * r[i, i]
        q[j] = r[j, i] + r[i, j]
        q[k] = r[k, i] + r[i, k]
        q[3] = r[k, j] - r[j, k]
    q /= np.sqrt(q[0] ** 2 + q[1] ** 2 + q[2] ** 2 + q[3] ** 2)
    if q[3] < 0.0:
        q *= -1.0
    return q


@numba.njit(cache=True, nogil=True)
def _mul3(a, b, out):  # pragma: no cover - compiled
    """``out = a[:3, :3] @ b[:3, :3]``."""
    for i in range(3):
        for j in range(3):
            out[i, j] = a[i, 0] * b[0, j] + a[i, 1] * b[1, j] + a[i, 2] * b[2, j]


@numba.njit(cache=True, nogil=True)
def _inverse3(a):  # pragma: no cover - compiled
    """Inverse of a 3x3 matrix by cofactors; the least-squares inverse (``pinv``) when it is (nearly) singular, as a
    parent scaled to zero (a hidden bone)."""
    c = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            i1, i2 = (i + 1) % 3, (i + 2) % 3
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            c[j, i] = a[i1, j1] * a[i2, j2] - a[i1, j2] * a[i2, j1]
    det = a[0, 0] * c[0, 0] + a[0, 1] * c[1, 0] + a[0, 2] * c[2, 0]
    scale = 0.0
    for i in range(3):
        for j in range(3):
            scale = max(scale, abs(a[i, j]))
    if abs(det) <= 1e-9 * scale ** 3:
        return np.linalg.pinv(np.ascontiguousarray(a))
    return c / det


@numba.njit(cache=True, nogil=True)
def _polar3(a):  # pragma: no cover - compiled
    """The rotation nearest a 3x3 matrix (its polar factor, ``u @ vt`` of its SVD), by Newton's iteration
    ``R <- (R + R^-T) / 2``, which converges in one or two steps for the near-orthonormal matrices read back from
    a pose; the SVD where it does not converge."""
    r = a.copy()
    for _ in range(30):
        nxt = 0.5 * (r + _inverse3(r).T)
        change = np.abs(nxt - r).max()
        r = nxt
        if change < 1e-15:
            return r
    u, _, vt = np.linalg.svd(np.ascontiguousarray(a))
    return u @ vt


@numba.njit(cache=True, nogil=True)
def _features_kernel(m, rest, local_rest, parents, joints, centres, sigma, out):  # pragma: no cover - compiled
    world = np.empty((3, 3))
    up = np.empty((3, 3))
    local = np.empty((3, 3))
    rot = np.empty((3, 3))
    for jj in range(len(joints)):
        b = joints[jj]
        _mul3(m[b], rest[b], world)
        p = parents[b]
        if p >= 0:
            _mul3(m[p], rest[p], up)
            _mul3(_inverse3(up), world, local)
        else:
            local[:] = world
        for i in range(3):
            for j in range(3):
                rot[i, j] = (local_rest[b, 0, i] * local[0, j] + local_rest[b, 1, i] * local[1, j]
                             + local_rest[b, 2, i] * local[2, j])
        q = _matrix_quaternion(_polar3(rot))
        w = sigma[jj]
        g_rest = np.exp(-(_quat_angle(q[0], q[1], q[2], q[3], 0.0, 0.0, 0.0, 1.0) / w) ** 2)
        for k in range(centres.shape[1]):
            c = centres[jj, k]
            g = np.exp(-(_quat_angle(q[0], q[1], q[2], q[3], c[0], c[1], c[2], c[3]) / w) ** 2)
            c_rest = np.exp(-(_quat_angle(c[0], c[1], c[2], c[3], 0.0, 0.0, 0.0, 1.0) / w) ** 2)
            out[jj, k] = g - g_rest * c_rest


def corrective_features(correctives, skeleton, skin_matrices) -> np.ndarray:
    """(J, K) float64 features of the pose of ``skin_matrices (B, 4, 4)``, in one Numba call: each joint's local
    rotation read back from the matrices (as :func:`kisekae.avatar.contact_solve.local_motion`), its quaternion and
    the radial bases (:func:`joint_features`). Equal to :meth:`PoseCorrectives.features_numpy` within 1e-12."""
    m = np.ascontiguousarray(skin_matrices, dtype=np.float64)
    nb = skeleton.n_bones
    if m.shape != (nb, 4, 4) or not np.all(np.isfinite(m)):
        raise KisekaeError(f"expected finite ({nb}, 4, 4) skinning matrices, got {m.shape}", "skinning matrices")
    c = correctives
    out = np.empty(c.centres.shape[:2])
    _features_kernel(m, np.ascontiguousarray(skeleton.rest, dtype=np.float64), skeleton.local_rest,
                     np.asarray(skeleton.parents, dtype=np.int64), np.asarray(c.joints, dtype=np.int64),
                     np.ascontiguousarray(c.centres, dtype=np.float64), np.asarray(c.sigma, dtype=np.float64), out)
    return out


def blended_rotations(skin, skin_matrices) -> np.ndarray:
    """(N, 3, 3) each vertex's blended linear part ``Σ_b w_b R_b`` of its skinning matrices."""
    m = np.asarray(skin_matrices, dtype=np.float64)[:, :3, :3]
    return np.einsum("nk,nkij->nij", skin.weights.astype(np.float64), m[skin.indices])


# ----------------------------------------------------------------------------------------- the bake
@dataclass
class PoseCorrectives:
    """Learned correctives of one body (module docstring).

    Attributes
    ----------
    joints : (J,) int bone indices that have features
    centres : (J, K, 4) unit quaternions (x, y, z, w)
    sigma : (J,) radians
    vertex_ptr : (N + 1,) int64, the entries of vertex ``i`` are ``vertex_ptr[i]:vertex_ptr[i + 1]``
    entry_joint : (E,) int32, slot in ``joints`` of each entry
    coefficients : (E, K, 3) float32, metres of rest-space offset per unit feature
    bone_names : list of str, the skeleton's bone names (checked when the bake is used)
    mesh_hash : str, hash of the rest mesh and skin it was made for
    settings : dict, how it was made (poses, seed, centres, ...)
    """

    joints: np.ndarray
    centres: np.ndarray
    sigma: np.ndarray
    vertex_ptr: np.ndarray
    entry_joint: np.ndarray
    coefficients: np.ndarray
    bone_names: list
    mesh_hash: str
    settings: dict

    @property
    def n_vertices(self) -> int:
        return len(self.vertex_ptr) - 1

    def check(self, source: str = "correctives") -> None:
        """Raise :class:`KisekaeError` naming ``source`` and the first inconsistent array."""
        j, k = len(self.joints), self.centres.shape[1] if self.centres.ndim == 3 else -1
        if self.centres.shape != (j, k, 4) or k < 1:
            raise KisekaeError(f"centres of shape {self.centres.shape} for {j} joints", source)
        if self.sigma.shape != (j,) or not np.all(np.isfinite(self.sigma)) or np.any(self.sigma <= 0):
            raise KisekaeError("sigma must be one positive width per joint", source)
        if not np.all(np.isfinite(self.centres)) or np.abs(np.linalg.norm(self.centres, axis=-1) - 1).max(initial=0) > 1e-4:
            raise KisekaeError("centres must be unit quaternions", source)
        nb = len(self.bone_names)
        if j and (self.joints.min() < 0 or self.joints.max() >= nb):
            raise KisekaeError(f"joint bone index out of range for {nb} bones", source)
        ptr = self.vertex_ptr
        e = len(self.entry_joint)
        if ptr.ndim != 1 or len(ptr) < 2 or ptr[0] != 0 or ptr[-1] != e or np.any(np.diff(ptr) < 0):
            raise KisekaeError(f"vertex_ptr must rise from 0 to the {e} entries", source)
        if e and (self.entry_joint.min() < 0 or self.entry_joint.max() >= j):
            raise KisekaeError(f"entry joint slot out of range for {j} joints", source)
        if self.coefficients.shape != (e, k, 3) or not np.all(np.isfinite(self.coefficients)):
            raise KisekaeError(f"coefficients must be finite, of shape ({e}, {k}, 3), got {self.coefficients.shape}",
                               source)

    @cached_property
    def by_joint(self) -> tuple:
        """The entries joint by joint, for :func:`joint_offsets_kernel` (made once, cached; the arrays are not
        to be changed after it): ``joint_ptr (J + 1,) int64`` (joint ``j``'s entries are
        ``joint_ptr[j]:joint_ptr[j + 1]``), ``entry_vertex (E,) int32`` and ``coefficients_t (E, 3, K)``
        (the coefficients' dtype), the coefficients with each entry's axes as rows. Within a joint the entries keep
        their vertex order."""
        order = np.argsort(self.entry_joint, kind="stable")
        joint_ptr = np.zeros(len(self.joints) + 1, np.int64)
        joint_ptr[1:] = np.cumsum(np.bincount(self.entry_joint, minlength=len(self.joints)))
        owner = np.repeat(np.arange(self.n_vertices, dtype=np.int32), np.diff(self.vertex_ptr))
        coef_t = np.ascontiguousarray(np.asarray(self.coefficients)[order].transpose(0, 2, 1))
        return joint_ptr, np.ascontiguousarray(owner[order]), coef_t

    def features(self, skeleton, skin_matrices) -> np.ndarray:
        """(J, K) features of the pose of ``skin_matrices (B, 4, 4)`` (Numba, :func:`corrective_features`)."""
        return corrective_features(self, skeleton, skin_matrices)

    def features_numpy(self, skeleton, skin_matrices) -> np.ndarray:
        """(J, K) features, the NumPy reference: :func:`joint_quaternions` then :func:`joint_features`."""
        q = joint_quaternions(skeleton, skin_matrices)
        return joint_features(q[self.joints], self.centres, self.sigma)


def mesh_hash(rest_vertices, faces, skin) -> str:
    """Hash of a body's rest mesh and skin: a bake is refused on any other body."""
    h = hashlib.sha256()
    for a in (np.asarray(rest_vertices, np.float32), np.asarray(faces, np.int64), np.asarray(skin.indices, np.int64),
              np.asarray(skin.weights, np.float32)):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def planes_after(avatar):
    """The joint-plane contact step (:class:`kisekae.avatar.contact.BodyContact`, default gap) that runs after the
    correctives on ``avatar``'s body, or None when the body has no blended joint."""
    from .contact import NoBlendedJoint

    try:
        return avatar.with_body_contact().body.deform
    except NoBlendedJoint:
        return None


def correction_samples(avatar, poses, solve=None, progress=None, keep_volume: bool = False) -> tuple:
    """The offline contact solve's corrections, in rest space, over ``poses``.

    Parameters
    ----------
    avatar : Avatar (its body is read plain: skinning only)
    poses : list of Pose
    solve : callable ``solve(points, skin_matrices)`` or None for
        :func:`kisekae.avatar.contact_solve.body_contact_solve` with its defaults
    progress : callable ``progress(done, total)`` or None
    keep_volume : bool, with ``solve`` None: the solve keeps each part's volume
        (:mod:`kisekae.avatar.volume_restore`), followed by the joint planes that run after the correctives per
        frame (:func:`planes_after`), so the samples also carry the volume the planes take (docs/contact.md,
        "Volume kept by parts": measured, not the packaged bakes' setting)

    Returns
    -------
    (mats (S, B, 4, 4) float64 skinning matrices, offsets (S, N, 3) float32 rest-space corrections, metres)
    """
    from .contact_solve import body_contact_solve
    from .skinning import lbs

    body = avatar.body
    if solve is None:
        from .contact_solve import ContactSolveParams

        solve = (body_contact_solve(avatar, ContactSolveParams(keep_volume=True), then=planes_after(avatar))
                 if keep_volume else body_contact_solve(avatar))
    rest = body.mesh.vertices.astype(np.float64)
    mats, offsets = [], []
    for s, pose in enumerate(poses):
        m = pose.skinning_matrices(avatar.skeleton).astype(np.float64)
        x = lbs(rest, body.skin.indices, body.skin.weights, m).astype(np.float64)
        y = np.asarray(solve(x, m), dtype=np.float64)
        mats.append(m)
        offsets.append(sample_offsets(body.skin, m, x, y, f"corrective sample {pose.name}"))
        if progress is not None:
            progress(s + 1, len(poses))
    nb = avatar.skeleton.n_bones
    return (np.array(mats).reshape(-1, nb, 4, 4), np.array(offsets).reshape(-1, len(rest), 3))


def _farthest_centres(q, k: int) -> np.ndarray:
    """``k`` farthest-point picks of ``q (S, 4)``, the first the farthest from the rest rotation (first of ties).

    The rest rotation itself is not a centre: its feature would be 0 for every rotation."""
    one = np.array([0.0, 0.0, 0.0, 1.0])
    out = []
    dmin = _angle(q, one[None])[:, 0]
    for _ in range(k):
        i = int(np.argmax(dmin))
        out.append(q[i])
        dmin = np.minimum(dmin, _angle(q, q[i][None])[:, 0])
    return np.array(out)


def _near_joints(skeleton, skin, joints, threshold: float = 0.01) -> list:
    """Per vertex, the tuple of joint slots of its weighted bones, their parents and children."""
    nb = skeleton.n_bones
    near = [{b} for b in range(nb)]
    for b, p in enumerate(skeleton.parents):
        if p >= 0:
            near[b].add(int(p))
            near[int(p)].add(b)
    slot = {int(b): s for s, b in enumerate(joints)}
    cache = {}
    out = []
    for idx, w in zip(skin.indices, skin.weights):
        key = tuple(sorted(int(b) for b, x in zip(idx, w) if x > threshold))
        if key not in cache:
            bones = set().union(*(near[b] for b in key)) if key else set()
            cache[key] = tuple(sorted(slot[b] for b in bones if b in slot))
        out.append(cache[key])
    return out


def _check_fit_input(sk, n, mats, d, centres, sigma, arm_sigma, ridge, active) -> None:
    """Raise :class:`KisekaeError` for samples or settings :func:`fit_correctives` cannot use."""
    if mats.ndim != 4 or mats.shape[1:] != (sk.n_bones, 4, 4) or d.shape != (len(mats), n, 3):
        raise KisekaeError(f"expected (S, {sk.n_bones}, 4, 4) matrices and (S, {n}, 3) offsets, got {mats.shape} "
                           f"and {d.shape}", "corrective samples")
    if len(mats) < 2 or not (np.all(np.isfinite(mats)) and np.all(np.isfinite(d))):
        raise KisekaeError("needs at least two finite samples", "corrective samples")
    if isinstance(centres, bool) or not (isinstance(centres, (int, np.integer)) and centres >= 2):
        raise KisekaeError(f"must be an integer >= 2, got {centres!r}", "corrective centres")
    for name, v in (("sigma", sigma), ("arm_sigma", arm_sigma), ("ridge", ridge), ("active", active)):
        if not (np.isfinite(v) and v >= 0) or (name.endswith("sigma") and v == 0):
            raise KisekaeError(f"must be a finite number >= 0 (sigma > 0), got {v!r}", f"corrective {name}")


def arm_joints(skeleton) -> set:
    """Bone indices that :data:`kisekae.avatar.poses.ARMS_AT_SIDES` turns on ``skeleton`` (those it has)."""
    from .poses import ARMS_AT_SIDES, resolve_bone

    out = set()
    for bone, *_ in ARMS_AT_SIDES:
        try:
            out.add(resolve_bone(skeleton, bone, "arm joints"))
        except KisekaeError:
            continue
    return out


def _joint_bases(q, k: int, sigma) -> tuple:
    """(joints (J,), centres (J, k, 4), widths (J,)) from the samples' joint rotations ``q (S, B, 4)``;
    ``sigma`` (B,) per bone."""
    turn = _angle(q, np.array([[0.0, 0.0, 0.0, 1.0]]))[..., 0].max(axis=0)
    joints = np.flatnonzero(turn > MIN_TURN)
    cen = np.array([_farthest_centres(q[:, j], k) for j in joints]).reshape(len(joints), k, 4)
    widths = np.empty(len(joints))
    for s in range(len(joints)):
        dc = _angle(cen[s], cen[s])
        np.fill_diagonal(dc, np.inf)
        widths[s] = sigma[joints[s]] * max(float(np.median(dc.min(axis=1))), 1e-3)
    return joints, cen, widths


def _ridge_groups(phi, d, groups: dict, ridge: float, n: int) -> tuple:
    """Ridge regression per group of vertices that share their joints; returns the CSR arrays
    (vertex_ptr, entry_joint, coefficients) of :class:`PoseCorrectives`."""
    s_count, _, k = phi.shape
    per_vertex: list = [None] * n
    for slots, verts in groups.items():
        a = phi[:, list(slots)].reshape(s_count, -1)
        gram = a.T @ a
        lam = ridge * np.trace(gram) / len(gram)
        rhs = a.T @ d[:, verts].reshape(s_count, -1)
        c = np.linalg.solve(gram + lam * np.eye(len(gram)), rhs).reshape(len(slots), k, len(verts), 3)
        for t, v in enumerate(verts):
            per_vertex[v] = (slots, c[:, :, t])
    kept = [p for p in per_vertex if p is not None]
    counts = np.array([0 if p is None else len(p[0]) for p in per_vertex], dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    entry_joint = np.concatenate([np.asarray(p[0], np.int32) for p in kept] or [np.zeros(0, np.int32)])
    coef = np.concatenate([p[1] for p in kept] or [np.zeros((0, k, 3))]).astype(np.float32)
    return ptr, entry_joint, coef.reshape(-1, k, 3)


def fit_correctives(avatar, mats, offsets, *, centres: int = CENTRES, sigma: float = SIGMA,
                    arm_sigma: float = ARM_SIGMA, ridge: float = RIDGE, active: float = ACTIVE,
                    settings: dict | None = None, part: str = "body") -> PoseCorrectives:
    """Fit :class:`PoseCorrectives` to sampled corrections (module docstring, step 3).

    Parameters
    ----------
    avatar : Avatar
    mats : (S, B, 4, 4) skinning matrices of the samples
    offsets : (S, N, 3) rest-space corrections, metres (:func:`correction_samples`)
    centres, sigma, arm_sigma, ridge, active : the settings of the module docstring (``arm_sigma`` for the joints of
        :func:`arm_joints`; equal to ``sigma`` for one width everywhere)
    settings : dict or None, stored in the bake as given (how the samples were made)
    part : ``"body"`` or a garment's name: the mesh the offsets belong to (its skin picks each vertex's joints and
        its rest mesh and skin are hashed; :mod:`kisekae.fit.garment_correctives` fits garments so)

    Returns
    -------
    PoseCorrectives
    """
    sk, body = avatar.skeleton, avatar.part(part)
    mats = np.asarray(mats, dtype=np.float64)
    d = np.asarray(offsets, dtype=np.float64)
    n = body.mesh.n_vertices
    _check_fit_input(sk, n, mats, d, centres, sigma, arm_sigma, ridge, active)
    q = np.array([joint_quaternions(sk, m) for m in mats])  # (S, B, 4)
    per_bone = np.full(sk.n_bones, float(sigma))
    per_bone[sorted(arm_joints(sk))] = float(arm_sigma)
    joints, cen, widths = _joint_bases(q, int(centres), per_bone)
    phi = joint_features(q[:, joints], cen, widths)  # (S, J, K)
    moved = np.linalg.norm(d, axis=2).max(axis=0) > active
    near = _near_joints(sk, body.skin, joints)
    groups: dict = {}
    for i in np.flatnonzero(moved):
        if near[i]:
            groups.setdefault(near[i], []).append(int(i))
    ptr, entry_joint, coef = _ridge_groups(phi, d, groups, ridge, n)
    out = PoseCorrectives(joints.astype(np.int64), cen, widths, ptr, entry_joint, coef, list(sk.names),
                          mesh_hash(body.mesh.vertices, body.mesh.faces, body.skin),
                          dict(settings or {}, samples=len(mats), centres=int(centres), sigma=float(sigma),
                               arm_sigma=float(arm_sigma),
                               ridge=float(ridge), active=float(active)))
    out.check()
    if part != "body":  # a garment's parts are cloth, not flesh around a bone
        return out
    from ..geom.ring import one_ring
    from .thin_parts import smooth_thin_parts, thin_part_vertices

    return smooth_thin_parts(out, one_ring(n, body.mesh.edges, body.mesh.weld),
                             thin_part_vertices(body.mesh.vertices, body.skin))


def training_poses(skeleton, n_poses: int = TRAIN_POSES, arm_poses: int = TRAIN_ARM_POSES, seed: int = 0) -> list:
    """The poses a bake solves: ``n_poses`` drawn from :data:`kisekae.avatar.poses.RANGE_OF_MOTION` with ``seed``,
    then ``arm_poses`` from :data:`kisekae.avatar.poses.ARMS_AT_SIDES` with ``seed + 1``.

    The range of motion draws each arm's elevation over 125°, so arms hanging against the chest, where skinning
    buries the upper arm in the ribs, are a few of its draws; the second set fills that in. Its legs and spine stay
    at rest, so the fit of a vertex that only they move is the same as without it (their features are 0 there).
    Measured on the built-in body with the joint planes (docs/contact.md), buried body vertices: arms hanging
    straight down 53 -> 36, hanging 4° short of that 24 -> 14; the named and held-out poses within one vertex.
    """
    from .poses import ARMS_AT_SIDES, range_of_motion_poses

    for value, least, what in ((n_poses, 2, "corrective poses"), (arm_poses, 0, "corrective arm poses")):
        if isinstance(value, bool) or not (isinstance(value, (int, np.integer)) and value >= least):
            raise KisekaeError(f"must be an integer >= {least}, got {value!r}", what)
    return (range_of_motion_poses(skeleton, int(n_poses), seed=seed)
            + range_of_motion_poses(skeleton, int(arm_poses), seed=seed + 1, ranges=ARMS_AT_SIDES))


def chunk_bounds(total: int, size: int) -> list:
    """``[(lo, hi), ...]``: ``range(total)`` in consecutive chunks of at most ``size``."""
    return [(lo, min(lo + size, total)) for lo in range(0, total, size)]


def pooled_samples(chunk, jobs_args: list, jobs: int, total: int, progress=None) -> tuple:
    """``chunk(job)`` for each of ``jobs_args`` in ``jobs`` forked worker processes, in order.

    Each call returns ``(mats (s, B, 4, 4), offsets (s, N, 3))`` for its ``s`` poses; returned concatenated along
    the poses, so the result does not depend on ``jobs``. ``progress(done, total)`` is called after each chunk.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    parts, done = [], 0
    with ProcessPoolExecutor(int(jobs), mp_context=multiprocessing.get_context("fork")) as pool:
        for part in pool.map(chunk, jobs_args):
            parts.append(part)
            done += len(part[0])
            if progress is not None:
                progress(done, total)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _samples_chunk(job):
    avatar, n_poses, arm_poses, seed, lo, hi, keep_volume = job
    return correction_samples(avatar, training_poses(avatar.skeleton, n_poses, arm_poses, seed)[lo:hi],
                              keep_volume=keep_volume)


def bake_correctives_parallel(avatar, n_poses: int = TRAIN_POSES, seed: int = 0, *, arm_poses: int = TRAIN_ARM_POSES,
                              jobs: int = 1, progress=None, keep_volume: bool = False, **fit) -> PoseCorrectives:
    """Solve the :func:`training_poses` and fit correctives to them (about a second a pose, one core).

    Parameters
    ----------
    avatar : Avatar (its body is read plain)
    n_poses : int >= 2, range-of-motion poses
    seed : int, of :func:`kisekae.avatar.poses.range_of_motion_poses`
    arm_poses : int >= 0, poses with the arms at the sides
    jobs : int >= 1, worker processes; the result does not depend on it (each pose is solved on its own)
    progress : callable ``progress(done, total)`` or None
    keep_volume : bool, learn the solve that keeps each part's volume (:func:`correction_samples`)
    fit : settings passed to :func:`fit_correctives`
    """
    poses = training_poses(avatar.skeleton, n_poses, arm_poses, seed)
    if jobs <= 1:
        mats, offsets = correction_samples(avatar, poses, progress=progress, keep_volume=keep_volume)
    else:
        mats, offsets = pooled_samples(_samples_chunk, [(avatar, int(n_poses), int(arm_poses), seed, lo, hi,
                                                         bool(keep_volume))
                                                        for lo, hi in chunk_bounds(len(poses), 8)],
                                       jobs, len(poses), progress)
    settings = {"poses": "range_of_motion", "n_poses": int(n_poses), "arm_poses": int(arm_poses), "seed": int(seed)}
    if keep_volume:
        settings["keep_volume"] = True
    return fit_correctives(avatar, mats, offsets, settings=settings, **fit)


# ------------------------------------------------------------------------------------------ runtime
def corrective_offsets_numpy(correctives: PoseCorrectives, features) -> np.ndarray:
    """(N, 3) float64 rest-space offsets for ``features (J, K)`` (the reference of :func:`corrective_offsets`)."""
    f = np.asarray(features, dtype=np.float64)
    c = correctives
    per_entry = np.einsum("ek,ekc->ec", f[c.entry_joint], c.coefficients.astype(np.float64))
    out = np.zeros((c.n_vertices, 3))
    owner = np.repeat(np.arange(c.n_vertices), np.diff(c.vertex_ptr))
    np.add.at(out, owner, per_entry)
    return out


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def joint_offsets_kernel(joint_ptr, entry_vertex, coef_t, f, live, out):  # pragma: no cover - compiled
    """Rest-space offsets into ``out (N, 3)``, joint by joint over :meth:`PoseCorrectives.by_joint`'s tables,
    skipping joints that ``live`` marks 0 (Numba; the kernels' one body).

    Joint-major with each entry's coefficients as ``(3, K)`` rows: every live joint's entries are one contiguous
    run whose dot products vectorise (reassociated within an entry's K terms only), with no per-entry test of the
    joint. The vertex-major loop it replaced spent 0.13 ms on the crouch's 4,445 live entries; this 0.04 ms.
    """
    out[:] = 0.0
    k_count = coef_t.shape[2]
    for j in range(len(joint_ptr) - 1):
        if not live[j]:
            continue
        fj = f[j]
        for e in range(joint_ptr[j], joint_ptr[j + 1]):
            sx = 0.0
            sy = 0.0
            sz = 0.0
            for k in range(k_count):
                sx += fj[k] * coef_t[e, 0, k]
            for k in range(k_count):
                sy += fj[k] * coef_t[e, 1, k]
            for k in range(k_count):
                sz += fj[k] * coef_t[e, 2, k]
            v = entry_vertex[e]
            out[v, 0] += sx
            out[v, 1] += sy
            out[v, 2] += sz


#: A joint whose features are all smaller than this is skipped by the kernel (its share is below 1e-9 of a unit
#: coefficient per feature).
LIVE = 1e-9


def corrective_offsets(correctives: PoseCorrectives, features) -> np.ndarray:
    """(N, 3) float64 rest-space offsets for ``features (J, K)``; Numba, skipping joints below :data:`LIVE`."""
    c = correctives
    f = np.ascontiguousarray(features, dtype=np.float64)
    if f.shape != c.centres.shape[:2] or not np.all(np.isfinite(f)):
        raise KisekaeError(f"expected finite features of shape {c.centres.shape[:2]}, got {f.shape}",
                           "corrective features")
    out = np.empty((c.n_vertices, 3))
    joint_offsets_kernel(*c.by_joint, f, live_joints(f), out)
    return out


def live_joints(features) -> np.ndarray:
    """(J,) uint8: 1 for a joint with a feature above :data:`LIVE` in magnitude."""
    f = np.asarray(features)
    return (np.abs(f).max(axis=1, initial=0.0) > LIVE).astype(np.uint8)


def sample_offsets(skin, skin_matrices, skinned, target, source: str) -> np.ndarray:
    """(N, 3) float32 rest-space offsets that carry the ``skinned`` vertices (N, 3) to ``target`` under
    ``skin_matrices``: the inverse of :func:`skinned_offsets`, one training sample of the correctives.

    Raises
    ------
    KisekaeError
        Naming ``source`` where a vertex's blended bone rotation is singular.
    """
    a = blended_rotations(skin, skin_matrices)
    d = np.linalg.solve(a, (np.asarray(target, np.float64) - np.asarray(skinned, np.float64))[..., None])[..., 0]
    if not np.all(np.isfinite(d)):
        raise KisekaeError("a vertex's blended bone rotation is singular", source)
    return d.astype(np.float32)


def skinned_offsets(skin, skin_matrices, rest_offsets) -> np.ndarray:
    """(N, 3) float64: rest-space offsets carried by each vertex's blended rotation (what they add after skinning);
    the NumPy reference of :func:`add_skinned_offsets`."""
    return np.einsum("nij,nj->ni", blended_rotations(skin, skin_matrices), np.asarray(rest_offsets, np.float64))


@numba.njit(cache=True, nogil=True)
def _add_skinned_kernel(points, d, idx, w, rot, out):  # pragma: no cover - compiled
    for i in range(points.shape[0]):
        dx, dy, dz = d[i, 0], d[i, 1], d[i, 2]
        ox = points[i, 0]
        oy = points[i, 1]
        oz = points[i, 2]
        if dx != 0.0 or dy != 0.0 or dz != 0.0:
            for k in range(idx.shape[1]):
                wk = w[i, k]
                if wk == 0.0:
                    continue
                r = rot[idx[i, k]]
                ox += wk * (r[0, 0] * dx + r[0, 1] * dy + r[0, 2] * dz)
                oy += wk * (r[1, 0] * dx + r[1, 1] * dy + r[1, 2] * dz)
                oz += wk * (r[2, 0] * dx + r[2, 1] * dy + r[2, 2] * dz)
        out[i, 0] = ox
        out[i, 1] = oy
        out[i, 2] = oz


def add_skinned_offsets(points, skin, skin_matrices, rest_offsets) -> np.ndarray:
    """(N, 3) float64 ``points`` plus :func:`skinned_offsets` (Numba; vertices without an offset are copied)."""
    x = np.ascontiguousarray(points, dtype=np.float64)
    d = np.ascontiguousarray(rest_offsets, dtype=np.float64)
    rot = np.ascontiguousarray(np.asarray(skin_matrices, dtype=np.float64)[:, :3, :3])
    out = np.empty_like(x)
    _add_skinned_kernel(x, d, np.ascontiguousarray(skin.indices, dtype=np.int64),
                        np.ascontiguousarray(skin.weights, dtype=np.float64), rot, out)
    return out


@dataclass
class BodyCorrectives:
    """The correctives as a body ``deform(points, skin_matrices)`` (:class:`kisekae.avatar.avatar.SkinnedMesh`),
    followed by ``then`` (the joint planes, :class:`kisekae.avatar.contact.BodyContact`) when given.

    Attributes
    ----------
    correctives : PoseCorrectives
    skeleton : Skeleton
    skin : Skin of the body
    then : callable or None
    """

    correctives: PoseCorrectives
    skeleton: object
    skin: object
    then: object = None

    def check(self) -> None:
        self.correctives.check()
        if self.correctives.n_vertices != self.skin.n_vertices:
            raise KisekaeError(f"made for {self.correctives.n_vertices} vertices, the body has {self.skin.n_vertices}",
                               "correctives")
        if list(self.correctives.bone_names) != list(self.skeleton.names):
            raise KisekaeError("made for another skeleton (bone names differ)", "correctives")
        if self.then is not None and hasattr(self.then, "check"):
            self.then.check()

    def rest_offsets(self, skin_matrices) -> np.ndarray:
        """(N, 3) float64 rest-space offsets of the pose of ``skin_matrices``."""
        return corrective_offsets(self.correctives, self.correctives.features(self.skeleton, skin_matrices))

    def pose(self, rest_vertices, skin, skin_matrices) -> np.ndarray:
        """(N, 3) float32 body of ``skin_matrices`` from its rest mesh: offsets, skinning and (when ``then`` is the
        joint-plane contact) the contact step in one compiled pass (:func:`kisekae.avatar.body_frame.posed_body_frame`);
        what :meth:`kisekae.avatar.avatar.SkinnedMesh.posed` calls."""
        from .body_frame import posed_body_frame
        from .contact import BodyContact

        f = self.correctives.features(self.skeleton, skin_matrices)
        if isinstance(self.then, BodyContact):
            return posed_body_frame(rest_vertices, skin, skin_matrices, correctives=self.correctives, features=f,
                                    planes=self.then.planes, gap=self.then.gap, band=self.then.band)
        y = posed_body_frame(rest_vertices, skin, skin_matrices, correctives=self.correctives, features=f)
        return y if self.then is None else np.asarray(self.then(y, skin_matrices), dtype=np.float32)

    def __call__(self, points, skin_matrices) -> np.ndarray:
        from ..validate import as_points

        x = as_points(points, "skinned body").astype(np.float64)
        y = add_skinned_offsets(x, self.skin, skin_matrices, self.rest_offsets(skin_matrices))
        if self.then is not None:
            y = np.asarray(self.then(y.astype(np.float32), skin_matrices), dtype=np.float64)
        return y


def with_correctives(avatar, correctives: PoseCorrectives, *, same_body: bool = False):
    """``avatar`` whose body is posed with ``correctives`` before its current ``deform`` (the joint planes of
    :meth:`~kisekae.avatar.avatar.Avatar.with_body_contact`, or nothing; a part contact stays after them).

    ``same_body``: the caller has checked that the body is the one the bake was made for (as
    :func:`packaged_correctives` does for an exported and re-imported built-in body); otherwise the rest mesh and
    skin must hash as the bake's."""
    from dataclasses import replace

    from .part_contact import PartContact, inner_deform

    outer = avatar.body.deform
    then = inner_deform(outer)
    if isinstance(then, BodyCorrectives):
        then = then.then
    if not same_body and \
            correctives.mesh_hash != mesh_hash(avatar.body.mesh.vertices, avatar.body.mesh.faces, avatar.body.skin):
        raise KisekaeError("made for another body (rest mesh or skin weights differ); bake them for this one with "
                           "`kisekae bake-correctives`", "correctives")
    deform = BodyCorrectives(correctives, avatar.skeleton, avatar.body.skin, then)
    deform.check()
    if isinstance(outer, PartContact):  # the part contact stays last
        deform = replace(outer, before=deform)
    return replace(avatar, body=replace(avatar.body, deform=deform))


# --------------------------------------------------------------------------------------------- files
def builtin_correctives_path(rig) -> Path:
    """The packaged bake for the built-in avatar's plain body with ``rig``; a clear error when there is none."""
    from importlib import resources

    p = resources.files("kisekae.data").joinpath(f"correctives_{rig}.npz")
    if not p.is_file():
        raise KisekaeError(f"no packaged correctives for the {rig!r} rig of the built-in avatar; bake them with "
                           "`kisekae bake-correctives`", "builtin")
    return Path(str(p))


_ARRAYS = {"joints": np.int64, "centres": np.float64, "sigma": np.float64, "vertex_ptr": np.int64,
           "entry_joint": np.int32, "coefficients": np.float32}


def save_correctives(correctives: PoseCorrectives, path, *, half: bool = False) -> Path:
    """Write ``correctives`` as a compressed ``.npz`` with a JSON header; returns the path.

    ``half``: store the coefficients as float16 (half the size; each rounded by at most 2.5e-5 m for the
    built-in body's largest, 6 cm, so a frame's offset moves by at most about 0.1 mm). The packaged bakes are
    stored so; :func:`load_correctives` reads either."""
    path = Path(path)
    c = correctives
    header = {"format": "kisekae-correctives", "version": VERSION, "bone_names": list(c.bone_names),
              "mesh_hash": c.mesh_hash, "settings": c.settings}
    arrays = {k: np.asarray(getattr(c, k), dt) for k, dt in _ARRAYS.items()}
    if half:
        if np.abs(arrays["coefficients"]).max(initial=0.0) > 6e4:
            raise KisekaeError("coefficients too large for float16", str(path))
        arrays["coefficients"] = arrays["coefficients"].astype(np.float16)
    with open(path, "wb") as fh:
        np.savez_compressed(fh, header=np.array(json.dumps(header)), **arrays)
    return path


_PACKAGED: dict = {}


def packaged_correctives(avatar) -> PoseCorrectives | None:
    """The packaged bake for ``avatar``'s rig when it was made for this body (its rest mesh and skin hash), or for
    the built-in body it is a copy or a MakeHuman shape of (:func:`_same_builtin_body`), else None (another body:
    bake its own with ``kisekae bake-correctives``)."""
    rig = getattr(avatar, "rig", None)
    if rig not in _PACKAGED:
        try:
            _PACKAGED[rig] = load_correctives(builtin_correctives_path(rig))
        except KisekaeError:
            _PACKAGED[rig] = None
    c = _PACKAGED[rig]
    body = avatar.body
    if c is None or c.n_vertices != body.mesh.n_vertices or list(c.bone_names) != list(avatar.skeleton.names):
        return None
    if c.mesh_hash == mesh_hash(body.mesh.vertices, body.mesh.faces, body.skin):
        return c
    return c if _same_builtin_body(avatar, rig) else None


def _same_builtin_body(avatar, rig) -> bool:
    """Whether ``avatar``'s body is the built-in body of ``rig`` or one of its shapes: the same triangles and skin
    weights (within 0.002), any rest positions. An exported and re-imported copy is the body itself; a MakeHuman
    shape (``--body``) moves the same vertices with the same bones, and the base body's correctives, which
    are rest-space offsets of those vertices driven by those joints, carry over to it (docs/contact.md: the heavy
    shape's crouch 68 → 30 buried; its own bake does better)."""
    from .builtin import load_builtin_avatar

    try:
        ref = load_builtin_avatar(rig).body
    except KisekaeError:
        return False
    body = avatar.body
    if body.mesh.faces.shape != ref.mesh.faces.shape or not np.array_equal(body.mesh.faces, ref.mesh.faces):
        return False
    nb = avatar.skeleton.n_bones
    return bool(np.abs(body.skin.dense(nb) - ref.skin.dense(nb)).max(initial=0.0) <= 2e-3)


#: Largest bake file read, bytes.
MAX_BYTES = 256 * 2 ** 20


def load_correctives(path) -> PoseCorrectives:
    """Read a bake written by :func:`save_correctives`; a clear :class:`KisekaeError` naming the file otherwise."""
    import zipfile

    path = Path(path)
    src = str(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise KisekaeError(f"larger than {MAX_BYTES} bytes", src)
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except KisekaeError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise KisekaeError(f"not a correctives file ({exc})", src) from None
    missing = [k for k in ("header", *_ARRAYS) if k not in data]
    if missing:
        raise KisekaeError(f"missing arrays {', '.join(missing)}", src)
    try:
        header = json.loads(str(data["header"]))
    except (json.JSONDecodeError, TypeError) as exc:
        raise KisekaeError(f"header is not JSON ({exc})", src) from None
    if not isinstance(header, dict) or header.get("format") != "kisekae-correctives":
        raise KisekaeError("not a kisekae correctives file", src)
    if header.get("version") != VERSION:
        raise KisekaeError(f"version {header.get('version')!r}, this kisekae reads {VERSION}", src)
    if not isinstance(header.get("bone_names"), list) or not isinstance(header.get("mesh_hash"), str):
        raise KisekaeError("header lacks bone_names or mesh_hash", src)
    arrays = {}
    for k, dt in _ARRAYS.items():
        a = data[k]
        if a.dtype.kind not in "iuf":
            raise KisekaeError(f"array {k} is not numeric", src)
        arrays[k] = a.astype(dt)
    c = PoseCorrectives(**arrays, bone_names=header["bone_names"], mesh_hash=header["mesh_hash"],
                        settings=dict(header.get("settings") or {}))
    c.check(src)
    return c

"""Joint-plane contact: a per-vertex step after skinning that keeps the two sides of a bent joint apart.

Linear blend skinning folds the skin of a bent knee, hip or elbow into itself: the back of the calf
passes into the back of the thigh. This step takes, for every joint whose two bones share a blend
ring, the plane through the posed joint centre whose normal bisects the joint's rest normal ``d``
as each of the two bones carries it (``R_child d + R_parent d``). It is the contact surface of a
hinge bend. ``d`` is the child bone's rest direction, or, at a joint already bent at rest (MakeHuman's
elbows by 47°, its wrists by 38°), the bisector of the parent's and the child's rest directions
(:func:`rest_normal`), the rest bend's own contact plane. A body vertex near the joint keeps to its own
side of that plane:

- its side is the child's when its weight on the child bone's subtree is at least 0.5;
- its signed distance ``s`` to the plane (positive on its side) is mapped, when ``s < t + band``, to
  ``t + band · exp((s − t − band) / band)`` with the target ``t = min(gap / 2, s_rest − band)``
  (``s_rest``: the same distance at rest, against the rest plane) lowered by up to the ring radius
  as a fade goes from 1 to 0;
- the fade is the smaller of two: along the limbs, it is 1 out to ``reach − (ring_factor − 1)`` ring
  radii from the joint (rest pose) and 0 at ``reach``, where the reach grows with the bend
  (:func:`joint_reach`: two limbs meeting at half-angle β overlap out to r / sin β, so a deep
  crouch's calf is kept off the thigh along its length, not only at the knee); across them, it is 1
  out to the joint's radial reach (:data:`FLESH_FACTOR` times the blend ring's median distance from
  the child bone's axis) and 0 at 1.25 times that, so flesh that sticks out far from the limb (the
  face above the neck joint) is never pushed by it (the joints of the neck and head reach
  :data:`NECK_FLESH_FACTOR` times it instead: the face and jaw hang in front of the neck's axis). Where the
  fade is 0 the joint does nothing.

Two limbs can also press on each other without a hinge between them: the thighs of a walk or of feet set
together meet at the body's midline. :meth:`JointPlanes.from_skin` can give such a pair (``pairs``;
:data:`PAIRED_LIMBS` through :func:`limb_pairs`) a *pair plane*: through the middle of the two bones' heads, normal
along the line between them, carried by their common ancestor (the pelvis), with the heads' distance as its ring
radius and a radial reach that never fades; a vertex's side is the limb that carries more of its weight. It is a
joint whose child and parent are that ancestor, so the kernel, the HLSL core and the engine tables treat it as any
other joint; a vertex gives it a slot only after its hinges. It is not on by default: on CMU clips the hip branch
bones' planes (``LHipJoint`` starts at the pelvis centre) already keep the thighs apart, crudely (the other thigh
moves up to 14 cm), and with the pair plane in their place the garments, which keep plain skinning, ended up inside
the flattened thighs (docs/contact.md, "Branch bones and the thigh pair").

The map is increasing and moves every vertex of one joint along the same direction, so by itself it
turns no face over; ``t <= s_rest − band`` leaves the rest pose exactly unchanged, and far from every
joint nothing moves. ``gap`` leaves room for cloth between the two sides. Each vertex has at most
:data:`SLOTS` joints (its nearest), applied in joint order, which is what the HLSL core's
``KisekaeContactPlanes`` does in the vertex stage.

This is one candidate of several measured in ``docs/contact.md``: it removes most of the folds at
knees and elbows (knee_bend: 62 buried body vertices → 3, crouch 296 → 44) but not all of a crouch's
hip crease, and it does not give back the volume that skinning loses. The library's avatars use plain skinning until
asked (:meth:`kisekae.avatar.Avatar.with_body_contact`, or :func:`apply_contact` with a setting); the
command line, batch catalogues and the demo use this step by default (``--no-contact`` and
``contact = false`` turn it off).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numba
import numpy as np

from ..errors import KisekaeError
from ..validate import as_points
from .skinning import Skin

#: ``JointPlanes.limbs`` of a branch bone's hinge (its head at its parent's head: CMU's ``LHipJoint`` from the pelvis
#: centre to the hip socket). A vertex gives such a joint a slot only after its other hinges: measured on the
#: ``cmu_mb`` rig (docs/contact.md, "The cmu_mb rig in deep poses"), with the branch planes first the deep squat's
#: thighs sank into the belly (25 buried, 117 crossings; 14 / 85 with them last).
BRANCH = -2
#: Metres within which a child's head counts as its parent's head (a branch bone).
BRANCH_TOLERANCE = 1e-4
#: Joints per vertex (the nearest ones).
SLOTS = 4
#: Default gap left between the two sides of a bent joint, metres.
GAP = 0.004
#: Default width of the smooth map, metres.
BAND = 0.01
#: Default reach of a joint, in ring radii, in mild bends; the fade of the target spans the last ``RING_FACTOR - 1``.
RING_FACTOR = 1.5
#: Largest reach of a joint in ring radii, taken in deep bends (:func:`joint_reach`); slots are given out to it.
MAX_REACH = 4.0
#: A joint acts on vertices up to this many times its flesh radius from the child bone's axis line (rest pose), fading
#: to nothing over the next quarter: the median distance of the blend ring from the axis (the limb's radius there).
FLESH_FACTOR = 2.0
#: The same for the joints of the neck and head (:func:`neck_bones`): the face and jaw hang in front of the neck's
#: axis, and at 2 ring medians a nodding neck's planes pushed parts of the face unevenly (eyes against lids: 32-35
#: buried vertices a frame on the packaged clip, none with plain skinning).
NECK_FLESH_FACTOR = 1.5
#: Metres kept between a vertex's rest distance and its target, so that rounding never moves the rest pose.
REST_SLACK = 1e-9
#: Cosine above which a bone's +Y axis counts as pointing at its only child (8 degrees).
AXIS_COS = 0.99
#: A joint bent at rest by at most this many degrees takes the bisector of its two bones' rest directions as its rest
#: normal (:func:`rest_normal`). Beyond it the parent does not continue the limb but carries it from the side (a
#: clavicle under the upper arm, 55°; CMU's hip branch bone over the thigh, 71°): measured with the bisector there,
#: the packaged clip's armpit and the ``cmu_mb`` deep squat's hips crossed more (docs/contact.md, "Joints bent at rest").
REST_BEND_LIMIT = 50.0
#: The bisector must put at least this share fewer of the joint's vertices on the wrong side than the plane across
#: the child does (:func:`rest_normal`).
REST_SPLIT_GAIN = 0.2


class NoBlendedJoint(KisekaeError):
    """A body whose skin gives every vertex to one bone: no joint blends two bones, so the contact step has
    nothing to keep apart."""


def contact_gap(value, source: str = "contact") -> float | None:
    """The gap of a contact setting, or None for plain skinning.

    Parameters
    ----------
    value : bool, int, float or None
        ``True``: the contact step with the default gap :data:`GAP`; ``False`` or None: plain linear blend
        skinning; a number: the contact step leaving that many metres between the two sides of a bent joint
        (finite, at least 0).
    source : str
        Named in the error (a command-line option, a catalogue key).

    Returns
    -------
    float or None
        Metres, or None for plain skinning.

    Raises
    ------
    KisekaeError
        For anything else (a string, a negative or non-finite number).
    """
    if value is None or value is False:
        return None
    if value is True:
        return GAP
    if isinstance(value, (int, float, np.integer, np.floating)) and np.isfinite(value) and value >= 0:
        return float(value)
    raise KisekaeError(f"must be true (the contact body, gap {GAP} m), false (plain skinning) or a gap in metres "
                       f"(a number >= 0), got {value!r}", source)


def apply_contact(avatar, gap, correctives="auto", rest_bend_limit: float | None = None, part_contact: bool = True):
    """``avatar`` posed the way the command line, batch catalogues and the demo pose it.

    Parameters
    ----------
    avatar : kisekae.avatar.Avatar
    gap : float or None
        :func:`contact_gap`'s result: metres, or None for plain skinning.
    correctives : "auto", None or PoseCorrectives
        ``"auto"``: the packaged pose-space correctives (:mod:`kisekae.avatar.correctives`) before the planes where
        they fit this body (:func:`kisekae.avatar.correctives.packaged_correctives`: the built-in body, a copy or a
        MakeHuman shape of it), else none; None: none; a
        :class:`~kisekae.avatar.correctives.PoseCorrectives`: those (refused when made for another body).
    rest_bend_limit : float or None
        :meth:`~kisekae.avatar.avatar.Avatar.with_body_contact`'s (None: :data:`REST_BEND_LIMIT`; 0: the planes
        across the child bone, as before 2026-12-07).
    part_contact : bool
        With the contact body, also keep apart the parts that share no joint, last
        (:meth:`~kisekae.avatar.avatar.Avatar.with_part_contact`, :mod:`kisekae.avatar.part_contact`).

    Returns
    -------
    Avatar
        ``avatar.with_body_contact(gap)`` (with the correctives before it and the part contact after it); ``avatar``
        itself when ``gap`` is None (or with only explicit correctives) or when its body has no blended joint
        (:class:`NoBlendedJoint`: the step would move nothing).
    """
    from .correctives import packaged_correctives, with_correctives

    posed = avatar
    if gap is not None:
        try:
            posed = avatar.with_body_contact(gap=gap, rest_bend_limit=rest_bend_limit)
        except NoBlendedJoint:
            posed = avatar
    if isinstance(correctives, str):
        if correctives != "auto":
            raise KisekaeError(f"must be 'auto', None or PoseCorrectives, got {correctives!r}", "correctives")
        found = packaged_correctives(avatar) if gap is not None else None
        posed = posed if found is None else with_correctives(posed, found, same_body=True)
    elif correctives is not None:
        posed = with_correctives(posed, correctives)
    if part_contact and gap is not None and posed.body.deform is not None:
        posed = posed.with_part_contact()
    return posed


def joint_contact_of(deform):
    """The :class:`BodyContact` of a body ``deform``: itself, the one after the pose-space correctives
    (:class:`kisekae.avatar.correctives.BodyCorrectives` ``.then``), either of them before the part contact
    (:class:`kisekae.avatar.part_contact.PartContact` ``.before``), or None."""
    if isinstance(deform, BodyContact):
        return deform
    deform = getattr(deform, "before", deform)  # after the part contact (kisekae.avatar.part_contact.PartContact)
    if isinstance(deform, BodyContact):
        return deform
    then = getattr(deform, "then", None)
    return then if isinstance(then, BodyContact) else None


def bone_directions(rest_matrices, parents, tails=None) -> np.ndarray:
    """(B, 3) float64 rest direction of each bone, for :meth:`JointPlanes.from_skin`.

    A skeleton whose bones point along their +Y axis (Blender's convention: the MakeHuman rigs, and kisekae's own
    glTF export, which keeps the rest matrices) uses that axis, unchanged. Other skeletons, such as VRM's joints
    aligned with the world axes, say nothing about a bone's direction in its rest matrix; there the direction is
    head to tail (``tails``, else the mean head of the bone's children), and the +Y axis only for a bone whose
    tail is on its head. A skeleton follows the convention when more than half of its bones with exactly one
    child at least 1 mm away have the +Y axis within 8 degrees (cosine :data:`AXIS_COS`) of that child.

    Parameters
    ----------
    rest_matrices : (B, 4, 4) bone-to-world rest matrices, metres
    parents : (B,) int parent bone ids (-1 for roots)
    tails : (B, 3) tail positions, metres, or None

    Returns
    -------
    (B, 3) float64, unit where taken from the tails, the rest matrices' +Y column otherwise.
    """
    mats = np.asarray(rest_matrices, dtype=np.float64)
    parents = np.asarray(parents, dtype=np.int64)
    heads, axes = mats[:, :3, 3], mats[:, :3, 1].copy()
    votes = []
    for b in range(len(parents)):
        kids = np.flatnonzero(parents == b)
        if len(kids) == 1:
            d = heads[kids[0]] - heads[b]
            n, a = np.linalg.norm(d), np.linalg.norm(axes[b])
            if n >= 1e-3 and a > 0:
                votes.append(float(d @ axes[b]) / (n * a) > AXIS_COS)
    if votes and np.mean(votes) > 0.5:
        return axes
    for b in range(len(parents)):
        if tails is not None:
            d = np.asarray(tails[b], dtype=np.float64) - heads[b]
        else:
            kids = np.flatnonzero(parents == b)
            d = heads[kids].mean(axis=0) - heads[b] if len(kids) else np.zeros(3)
        n = np.linalg.norm(d)
        if n > 1e-9:
            axes[b] = d / n
    return axes


def _rest_frames(rest_matrices, directions, nb: int):
    """Validated ``(rest matrices (B, 4, 4) float64, bone directions (B, 3) float64)``; directions default to
    the matrices' +Y axes."""
    mats = np.asarray(rest_matrices, dtype=np.float64)
    if mats.shape != (nb, 4, 4) or not np.all(np.isfinite(mats)):
        raise KisekaeError(f"need {nb} finite (4, 4) rest matrices, got shape {mats.shape}", "rest_matrices")
    axes = mats[:, :3, 1] if directions is None else np.asarray(directions, dtype=np.float64)
    if axes.shape != (nb, 3) or not np.all(np.isfinite(axes)):
        raise KisekaeError(f"need {nb} finite 3-vectors, got shape {axes.shape}", "directions")
    return mats, axes


@dataclass
class JointPlanes:
    """Rest-pose data of the joint-plane contact, built once per body (:meth:`from_skin`).

    Attributes
    ----------
    child, parent : (J,) int32 bone ids of each joint
    centre : (J, 3) float64 rest joint centre (the child's head), metres
    direction : (J, 3) float64 unit rest normal of the joint's plane (:func:`rest_normal`: the child bone's rest
        direction, or the bisector of a joint bent at rest); also the axis of the radial reach
    radius : (J,) float64 ring radius: farthest rest vertex of the joint's blend ring, metres
    slots : (N, SLOTS) int32 joint ids per vertex, -1 where unused, ascending
    side : (N, SLOTS) float64 +1 (child side) or -1 (parent side)
    rest : (N, 3) float64 rest body positions, metres
    ring_factor : float, reach in ring radii in mild bends
    flesh : (J,) float64 radial reach, metres: :data:`FLESH_FACTOR` times the blend ring's median distance from
        the child bone's axis line (None: no radial limit, as bakes before it)
    max_reach : float, reach in ring radii in the deepest bends
    limbs : (J, 2) int32 or None, the two limbs of a pair plane (child and parent are then their common ancestor),
        -1 for a hinge, -2 for the hinge of a branch bone (a child whose head is its parent's head, CMU's
        ``LHipJoint``), which a vertex gives a slot only after its other hinges; None: every joint a hinge
    neck : (M,) int32 or None, the bones of the neck chain (:func:`neck_bones`): a vertex that the chain's subtree
        carries (half its weight or more) gets no slot on the parent side of a joint outside the chain
        (:meth:`for_vertices`); None or empty: no such rule
    """

    child: np.ndarray
    parent: np.ndarray
    centre: np.ndarray
    direction: np.ndarray
    radius: np.ndarray
    slots: np.ndarray
    side: np.ndarray
    rest: np.ndarray
    ring_factor: float = RING_FACTOR
    flesh: np.ndarray | None = None
    max_reach: float = MAX_REACH
    limbs: np.ndarray | None = None
    neck: np.ndarray | None = None

    @classmethod
    def from_skin(cls, parents, rest_matrices, skin_indices, skin_weights, rest_vertices, *,
                  ring_factor: float = RING_FACTOR, min_ring: int = 10, directions=None,
                  max_reach: float = MAX_REACH, pairs=(), neck=(),
                  rest_bend_limit: float = REST_BEND_LIMIT) -> "JointPlanes":
        """Find the joints with a blend ring and give every body vertex its nearest ones.

        Parameters
        ----------
        parents : (B,) int parent bone ids (-1 for roots; parents first)
        rest_matrices : (B, 4, 4) bone-to-world rest matrices; a bone's +Y axis points to its tail
        skin_indices, skin_weights : (N, K) the body's skin
        rest_vertices : (N, 3) rest positions, metres
        ring_factor : float, reach of a joint in ring radii in mild bends (> 1)
        max_reach : float, largest reach in ring radii, in deep bends (at least ``ring_factor``)
        min_ring : int, fewest blended vertices (subtree weight strictly between 0.05 and 0.95) a joint needs
        directions : (B, 3) rest direction of each bone (any length above 1e-9), or None for each rest matrix's
            +Y axis (Blender's convention); :func:`bone_directions` picks one for a skeleton
        neck : collection of bone ids whose joints (as the child) take :data:`NECK_FLESH_FACTOR` instead of
            :data:`FLESH_FACTOR` (:func:`neck_bones`)
        pairs : sequence of (bone_a, bone_b) limbs that meet each other rather than at a hinge (the thighs,
            :func:`limb_pairs`); each gets the plane half-way between their heads (:func:`_pair_joint`)
        rest_bend_limit : float, degrees: a joint bent at rest by at most this much may take the bisector of its
            bones' rest directions as its rest normal (:func:`rest_normal`); 0: always the child's direction (the
            planes before 2026-12-07)

        Raises
        ------
        NoBlendedJoint
            When no joint has a blend ring (a rigidly skinned body: the step has nothing to do).
        KisekaeError
            For rest matrices, directions, skin or ``ring_factor`` out of range.
        """
        rest = as_points(rest_vertices, "body rest vertices").astype(np.float64)
        parents = np.asarray(parents, dtype=np.int64)
        nb = len(parents)
        mats, axes = _rest_frames(rest_matrices, directions, nb)
        if not (np.isfinite(ring_factor) and ring_factor > 1.0):
            raise KisekaeError(f"must be a number above 1, got {ring_factor!r}", "ring_factor")
        if not (np.isfinite(max_reach) and max_reach >= ring_factor):
            raise KisekaeError(f"must be a number of at least ring_factor ({ring_factor}), got {max_reach!r}",
                               "max_reach")
        if not (np.isfinite(rest_bend_limit) and 0.0 <= rest_bend_limit < 180.0):
            raise KisekaeError(f"must be degrees from 0 to below 180, got {rest_bend_limit!r}", "rest_bend_limit")
        idx = np.asarray(skin_indices, dtype=np.int64)
        w = np.asarray(skin_weights, dtype=np.float64)
        if idx.shape != w.shape or len(idx) != len(rest) or (idx.size and (idx.min() < 0 or idx.max() >= nb)):
            raise KisekaeError(f"skin {idx.shape} does not match {len(rest)} vertices and {nb} bones", "skin")
        dense, subtree = _dense_subtree(parents, idx, w, nb)
        joints = []
        for c in range(nb):
            factor = NECK_FLESH_FACTOR if c in neck else FLESH_FACTOR
            hinge = _hinge_joint(c, parents, mats, axes, subtree, dense, rest, min_ring, factor, max_reach,
                                 rest_bend_limit)
            if hinge is not None:
                joints.append(hinge)
        if not joints:
            raise NoBlendedJoint("no joint has a blend ring: the skin gives every vertex to one bone", "skin")
        for a, b in pairs:
            pair = _pair_joint(int(a), int(b), parents, mats, subtree, max_reach)
            if pair is not None:
                joints.append(pair)
        cols = list(zip(*joints))
        planes = cls(np.array(cols[0], np.int32), np.array(cols[1], np.int32), np.array(cols[2]), np.array(cols[3]),
                     np.array(cols[4]), np.zeros((0, SLOTS), np.int32), np.zeros((0, SLOTS)), np.zeros((0, 3)),
                     float(ring_factor), np.array(cols[5]), float(max_reach), np.array(cols[6], np.int32),
                     np.array(sorted(int(b) for b in neck), np.int32))
        return planes.for_vertices(parents, rest, idx, w)

    def for_vertices(self, parents, rest_vertices, skin_indices, skin_weights) -> "JointPlanes":
        """The same joints with the per-vertex tables (slots, sides, rest positions) of another skinned mesh: a
        garment over the body gets the body's planes, each of its vertices the side its own weights give it, so it
        moves with the flesh beneath it.

        Parameters
        ----------
        parents : (B,) int parent bone ids of the skeleton the joints were found on
        rest_vertices : (N, 3) rest positions, metres
        skin_indices, skin_weights : (N, K) the mesh's skin

        Returns
        -------
        JointPlanes sharing this one's joint arrays.
        """
        rest = as_points(rest_vertices, "rest vertices").astype(np.float64)
        parents = np.asarray(parents, dtype=np.int64)
        nb = len(parents)
        idx = np.asarray(skin_indices, dtype=np.int64)
        w = np.asarray(skin_weights, dtype=np.float64)
        if idx.shape != w.shape or len(idx) != len(rest) or (idx.size and (idx.min() < 0 or idx.max() >= nb)):
            raise KisekaeError(f"skin {idx.shape} does not match {len(rest)} vertices and {nb} bones", "skin")
        if len(self.child) and max(int(self.child.max()), int(self.parent.max())) >= nb:
            raise KisekaeError(f"joints of a skeleton with more than {nb} bones", "joint planes")
        dense, subtree = _dense_subtree(parents, idx, w, nb)
        limbs = np.full((len(self.child), 2), -1) if self.limbs is None else self.limbs
        head = _neck_carried(parents, self.neck, dense, subtree)
        n_j = len(self.child)
        reach = np.full((len(rest), n_j), np.inf)
        sigma = np.zeros((len(rest), n_j))
        for j in range(n_j):
            dist = np.linalg.norm(rest - self.centre[j], axis=1) / self.radius[j]
            if limbs[j, 0] < 0:  # a hinge: the child's side by its subtree's weight
                sigma[:, j] = dense[:, subtree[self.child[j]]].sum(axis=1)
                chain = (sigma[:, j] > 0) | (dense[:, self.parent[j]] > 0)
                if head is not None and not np.isin(self.child[j], self.neck):
                    chain &= ~(head & (sigma[:, j] < 0.5))
                rank = dist
                if limbs[j, 0] == BRANCH:
                    # after the other hinges (near the hip it would take the thigh's own slot). The two hips' branches
                    # share their centre: a vertex with room for one takes the other leg's, whose plane keeps it out
                    # of that leg (own leg's first: the clip's mid-stride frame 4 / 23 -> 9 / 44 buried / crossings),
                    # then the lower id; rounded, so float32 noise in a file's skin does not choose between them
                    rank = np.round(dist + self.max_reach, 5) + np.where(sigma[:, j] >= 0.5, 1e-3, 0.0)
                reach[:, j] = np.where(chain & (dist < self.max_reach), rank, np.inf)
            else:  # a pair: the side of the limb with more weight; slots after every hinge (``+ max_reach``)
                wa, wb = (dense[:, subtree[limbs[j, k]]].sum(axis=1) for k in (0, 1))
                chain = (wa > 0) | (wb > 0)
                sigma[:, j] = np.where(chain, wa / np.maximum(wa + wb, 1e-12), 0.0)
                reach[:, j] = np.where(chain & (dist < self.max_reach), dist + self.max_reach, np.inf)
        nearest = np.argsort(reach, axis=1, kind="stable")[:, :SLOTS]
        ok = np.take_along_axis(reach, nearest, axis=1) < np.inf
        slots = np.where(ok, nearest, n_j)
        slots.sort(axis=1)
        slots = np.where(slots == n_j, -1, slots).astype(np.int32)
        side = np.where(np.take_along_axis(sigma, np.maximum(slots, 0), axis=1) >= 0.5, 1.0, -1.0)
        return replace(self, slots=slots, side=np.where(slots >= 0, side, 0.0), rest=rest)

    def posed(self, skin_matrices):
        """Per-frame planes: ``(centre (J, 3), normal (J, 3), reach (J,))`` for ``(B, 4, 4)`` skinning matrices.

        ``reach`` is :func:`joint_reach` in ring radii, 0 for a joint folded by 180° (inactive in that frame).
        """
        return posed_joint_planes(self.child, self.parent, self.centre, self.direction, skin_matrices,
                                  self.ring_factor, self.max_reach)

    def frame_table(self, skin_matrices) -> np.ndarray:
        """(J, 7) float64 per joint, what the kernel reads each frame: the posed normal (3), its dot with the posed
        centre (m), the reach in metres, ``1 / ((ring_factor - 1) radius)`` (the fade's slope, 1/m) and the radius
        (m). Dividing once per joint rather than per vertex is the kernel's largest saving. One Numba loop over the
        joints (:func:`_frame_table_kernel`); :meth:`frame_table_numpy` is its reference."""
        m = np.ascontiguousarray(skin_matrices, dtype=np.float64)
        out = np.empty((len(self.child), 7))
        _frame_table_kernel(np.ascontiguousarray(self.child, dtype=np.int64),
                            np.ascontiguousarray(self.parent, dtype=np.int64),
                            np.ascontiguousarray(self.centre, dtype=np.float64),
                            np.ascontiguousarray(self.direction, dtype=np.float64),
                            np.ascontiguousarray(self.radius, dtype=np.float64), m, float(self.ring_factor),
                            float(self.max_reach), out)
        return out

    def frame_table_numpy(self, skin_matrices) -> np.ndarray:
        """:meth:`frame_table` from :meth:`posed` (NumPy reference)."""
        centre, normal, reach = self.posed(skin_matrices)
        radius = np.asarray(self.radius, dtype=np.float64)
        return np.column_stack([normal, np.einsum("ja,ja->j", centre, normal), reach * radius,
                                1.0 / ((self.ring_factor - 1.0) * radius), radius])

    def radial(self) -> np.ndarray:
        """(J,) float64 radial reach of each joint, metres (infinite when :attr:`flesh` is None)."""
        return np.full(len(self.child), np.inf) if self.flesh is None else np.asarray(self.flesh, dtype=np.float64)

    def rest_terms(self) -> np.ndarray:
        """(N, SLOTS, 3) float64 per (vertex, slot): rest signed distance to the joint's rest plane (its side
        positive, m), distance from the rest joint centre (m) and the radial fade; made once and kept until one of
        the arrays it reads is replaced."""
        inputs = (self.rest, self.slots, self.side, self.centre, self.direction, self.flesh)
        cached = self.__dict__.get("_rest_terms")
        if cached is None or any(a is not b for a, b in zip(cached[0], inputs)):
            out = np.zeros(self.slots.shape + (3,))
            _rest_terms_kernel(np.ascontiguousarray(self.rest, dtype=np.float64), self.slots, self.side,
                               np.ascontiguousarray(self.centre, dtype=np.float64),
                               np.ascontiguousarray(self.direction, dtype=np.float64), self.radial(), out)
            cached = (inputs, out)
            self.__dict__["_rest_terms"] = cached
        return cached[1]


def _dense_subtree(parents, idx, w, nb: int):
    """(dense weights (N, B) float64, subtree (B, B) bool: ``subtree[b, c]`` when c is b or below it)."""
    dense = Skin(idx, w).dense(nb).astype(np.float64)
    subtree = np.eye(nb, dtype=bool)
    for c in range(nb - 1, -1, -1):
        if parents[c] >= 0:
            subtree[parents[c]] |= subtree[c]
    return dense, subtree


def _hinge_joint(c: int, parents, mats, axes, subtree, dense, rest, min_ring: int, flesh_factor: float = FLESH_FACTOR,
                 max_reach: float = MAX_REACH, rest_bend_limit: float = REST_BEND_LIMIT):
    """The joint at the head of bone ``c``: ``(child, parent, centre, direction, radius, flesh, (-1, -1))``; None for a
    root or a ring of fewer than ``min_ring`` vertices. ``direction`` is :func:`rest_normal`'s."""
    p = parents[c]
    if p < 0:
        return None
    sigma = dense[:, subtree[c]].sum(axis=1)
    ring = (sigma > 0.05) & (sigma < 0.95)
    if ring.sum() < min_ring:
        return None
    d = axes[c]
    length = np.linalg.norm(d)
    if length < 1e-9:
        raise KisekaeError("bone has a zero-length axis", f"bone {c}")
    centre = mats[c, :3, 3]
    radius = float(np.linalg.norm(rest[ring] - centre, axis=1).max())
    # the vertices the joint can act on (as :meth:`JointPlanes.for_vertices` gives slots, before the nearest four)
    near = ((sigma > 0) | (dense[:, p] > 0)) & (np.linalg.norm(rest - centre, axis=1) < max_reach * radius)
    d = rest_normal(d / length, axes[p], rest[near] - centre, sigma[near] >= 0.5, rest_bend_limit)
    flesh = flesh_factor * float(np.median(axis_distance(rest[ring], centre, d)))
    kind = BRANCH if np.linalg.norm(centre - mats[p, :3, 3]) < BRANCH_TOLERANCE else -1
    return c, p, centre, d, radius, flesh, (kind, kind)


def rest_normal(child_dir, parent_dir, offsets, child_side, limit: float = REST_BEND_LIMIT,
                gain: float = REST_SPLIT_GAIN) -> np.ndarray:
    """The unit rest normal of a joint's plane: the bisector of the two bones' rest directions where the joint is bent
    at rest by at most ``limit`` degrees and that plane puts at least the share ``gain`` fewer of the joint's vertices
    on the wrong side than the plane across the child bone does; else the child bone's direction.

    Linear blend skinning bends a joint about its rest shape, so two limbs bent at rest (MakeHuman's elbows, 47°)
    meet on the plane half-way between them. Across the child alone, the inner elbow's upper-arm flesh lies on
    the forearm's side of the rest plane, where the map leaves it free to sink into the forearm (a 90° bend: 14
    buried body vertices and 25 crossing edges with the child's direction, none with the bisector).

    Parameters
    ----------
    child_dir : (3,) unit rest direction of the child bone
    parent_dir : (3,) rest direction of the parent bone (any length; zero: the child's direction is kept)
    offsets : (M, 3) rest positions of the joint's vertices minus the joint centre, metres
    child_side : (M,) bool, the vertices on the child's side (half their weight or more on its subtree)
    limit : float, degrees
    gain : float in [0, 1), the bisector's least gain in vertices on their own side

    Returns
    -------
    (3,) float64 unit normal.
    """
    d = np.asarray(child_dir, dtype=np.float64)
    dp = np.asarray(parent_dir, dtype=np.float64)
    n = np.linalg.norm(dp)
    if n < 1e-9 or d @ dp < n * np.cos(np.radians(limit)):
        return d
    b = d + dp / n
    b /= np.linalg.norm(b)
    side = np.where(child_side, 1.0, -1.0)
    wrong = [int(((offsets @ v) * side < 0.0).sum()) for v in (d, b)]
    return b if wrong[1] <= (1.0 - gain) * wrong[0] else d


def _neck_carried(parents, neck, dense, subtree):
    """(N,) bool: vertices that the subtree of the neck chain carries (half their weight or more); None without a
    neck chain.

    The blend ring of a shoulder (clavicle) joint reaches up the neck, and the head lies within the joint's reach and
    radial reach, so the lower head, whose skin gives a few per cent to the chest bone, would take a slot on the
    shoulder plane's parent side: a shrug or a reach on the packaged clip pushed those vertices up to 15 mm while
    their neighbours, carried by the head alone, stayed (25-37 crossing edges a frame in the face, none with plain
    skinning). The head and neck move with the neck chain; only the chain's own joints (and those above it, whose
    child side the head is on) act on them.
    """
    if neck is None or len(neck) == 0:
        return None
    chain = {int(b) for b in neck}
    if max(chain) >= len(parents):
        raise KisekaeError(f"neck bone {max(chain)} of a skeleton with {len(parents)} bones", "joint planes")
    roots = [b for b in chain if int(parents[b]) not in chain]
    return dense[:, subtree[roots].any(axis=0)].sum(axis=1) >= 0.5


def _common_ancestor(parents, a: int, b: int) -> int:
    up = set()
    while a >= 0:
        up.add(a)
        a = int(parents[a])
    while b >= 0 and b not in up:
        b = int(parents[b])
    return b


def _pair_joint(a: int, b: int, parents, mats, subtree, max_reach: float):
    """A pair plane between the subtrees of bones ``a`` and ``b`` (module docstring) as a joint entry
    ``(ancestor, ancestor, centre, direction, radius, flesh, (a, b))``; None when the two subtrees overlap, have no
    common ancestor or share a head. Its radial reach lies beyond every vertex that gets it (none is farther than
    ``max_reach`` radii), so it never fades."""
    if a == b or subtree[a, b] or subtree[b, a]:
        return None
    anc = _common_ancestor(parents, a, b)
    ha, hb = mats[a, :3, 3], mats[b, :3, 3]
    span = float(np.linalg.norm(ha - hb))
    if anc < 0 or span < 1e-6:
        return None
    return anc, anc, 0.5 * (ha + hb), (ha - hb) / span, span, max_reach * span, (a, b)


def neck_bones(skeleton) -> set:
    """Bone ids from the humanoid neck up to the head (their joints get :data:`NECK_FLESH_FACTOR`); empty without a
    humanoid mapping that has both."""
    from .poses import bone_chain, humanoid_map

    roles = humanoid_map(skeleton)
    if "neck" not in roles or "head" not in roles:
        return set()
    return set(bone_chain(skeleton.parents, int(roles["head"]), int(roles["neck"])))


#: Humanoid limbs that press on each other (walking, standing with the feet together) without a hinge between them.
PAIRED_LIMBS = (("leftUpperLeg", "rightUpperLeg"),)


def limb_pairs(skeleton) -> list:
    """``[(bone_a, bone_b)]`` of :data:`PAIRED_LIMBS` that ``skeleton`` has (its humanoid mapping)."""
    from .poses import humanoid_map

    mapping = humanoid_map(skeleton)
    return [(int(mapping[a]), int(mapping[b])) for a, b in PAIRED_LIMBS if a in mapping and b in mapping]


def axis_distance(points, origin, direction) -> np.ndarray:
    """(N,) distance of ``points`` (N, 3) from the line through ``origin`` along the unit ``direction``, metres."""
    dr = np.asarray(points, dtype=np.float64) - origin
    along = dr @ direction
    return np.sqrt(np.maximum(np.einsum("ij,ij->i", dr, dr) - along * along, 0.0))


def joint_reach(length, ring_factor: float = RING_FACTOR, max_reach: float = MAX_REACH) -> np.ndarray:
    """Reach of each joint this frame, in ring radii, from ``length = |R_child d + R_parent d|`` (0 to 2).

    Two limbs of radius r that meet at a joint bent by α overlap out to r / sin β from the joint, where
    β = (180° − α) / 2 is half the angle between them; sin β = length / 2. The reach is that bound in
    ring radii (the ring radius is at least the limb's), between ``ring_factor`` (mild bends) and
    ``max_reach`` (deep bends); 0 where ``length <= 1e-3`` (folded flat: inactive).
    """
    length = np.asarray(length, dtype=np.float64)
    reach = np.clip(2.0 / np.maximum(length, 1e-3), ring_factor, max_reach)
    return np.where(length > 1e-3, reach, 0.0)


@numba.njit(cache=True)
def _frame_table_kernel(child, parent, rest_centre, rest_dir, radius, m, ring_factor, max_reach,
                        out):  # pragma: no cover - compiled
    """:meth:`JointPlanes.frame_table`, joint by joint: :func:`posed_joint_planes` and :func:`joint_reach` written
    out."""
    for j in range(child.shape[0]):
        c, p = child[j], parent[j]
        cx, cy, cz = rest_centre[j, 0], rest_centre[j, 1], rest_centre[j, 2]
        dx, dy, dz = rest_dir[j, 0], rest_dir[j, 1], rest_dir[j, 2]
        px = m[c, 0, 0] * cx + m[c, 0, 1] * cy + m[c, 0, 2] * cz + m[c, 0, 3]
        py = m[c, 1, 0] * cx + m[c, 1, 1] * cy + m[c, 1, 2] * cz + m[c, 1, 3]
        pz = m[c, 2, 0] * cx + m[c, 2, 1] * cy + m[c, 2, 2] * cz + m[c, 2, 3]
        nx = (m[c, 0, 0] * dx + m[c, 0, 1] * dy + m[c, 0, 2] * dz) + (m[p, 0, 0] * dx + m[p, 0, 1] * dy + m[p, 0, 2] * dz)
        ny = (m[c, 1, 0] * dx + m[c, 1, 1] * dy + m[c, 1, 2] * dz) + (m[p, 1, 0] * dx + m[p, 1, 1] * dy + m[p, 1, 2] * dz)
        nz = (m[c, 2, 0] * dx + m[c, 2, 1] * dy + m[c, 2, 2] * dz) + (m[p, 2, 0] * dx + m[p, 2, 1] * dy + m[p, 2, 2] * dz)
        length = np.sqrt(nx * nx + ny * ny + nz * nz)
        reach = 0.0
        if length > 1e-3:
            reach = min(max(2.0 / length, ring_factor), max_reach)
            nx /= length
            ny /= length
            nz /= length
        out[j, 0], out[j, 1], out[j, 2] = nx, ny, nz
        out[j, 3] = px * nx + py * ny + pz * nz
        out[j, 4] = reach * radius[j]
        out[j, 5] = 1.0 / ((ring_factor - 1.0) * radius[j])
        out[j, 6] = radius[j]


def posed_joint_planes(child, parent, rest_centre, rest_dir, skin_matrices, ring_factor: float = RING_FACTOR,
                       max_reach: float = MAX_REACH):
    """Per-frame joint planes from rest joint data: ``(centre (J, 3), normal (J, 3), reach (J,))``.

    The centre is the child's skinning matrix applied to the rest centre; the normal is the rest
    direction carried by the child's and by the parent's matrix, summed and normalised; the reach (ring
    radii) grows with the bend (:func:`joint_reach`), and a joint whose two carried directions cancel
    (folded flat) has reach 0: inactive. :meth:`JointPlanes.posed` and the engine glue
    (:func:`kisekae.shaders.contact_bake.posed_tables`, ``KisekaeBodyContact.cs``) pose the planes this way.

    Parameters
    ----------
    child, parent : (J,) int bone ids
    rest_centre, rest_dir : (J, 3) float rest centres (metres) and unit rest directions
    skin_matrices : (B, 4, 4) float posed bone-to-world times inverse rest (bindpose)
    ring_factor, max_reach : float, :func:`joint_reach`'s bounds
    """
    m = np.asarray(skin_matrices, dtype=np.float64)
    rc, rp = m[child, :3, :3], m[parent, :3, :3]
    centre = np.einsum("jab,jb->ja", rc, rest_centre) + m[child, :3, 3]
    normal = np.einsum("jab,jb->ja", rc, rest_dir) + np.einsum("jab,jb->ja", rp, rest_dir)
    length = np.linalg.norm(normal, axis=1)
    reach = joint_reach(length, ring_factor, max_reach)
    return centre, normal / np.where(reach > 0, length, 1.0)[:, None], reach


def check_gap_band(gap, band) -> None:
    """Raise :class:`KisekaeError` unless ``gap >= 0`` and ``band > 0`` are finite (metres)."""
    for name, v in (("gap", gap), ("band", band)):
        if not np.isfinite(v) or v < 0 or (name == "band" and v == 0):
            raise KisekaeError(f"must be a finite number {'above' if name == 'band' else 'at least'} 0, got {v!r}",
                               name)


def _check(points, planes: JointPlanes, gap, band):
    p = np.array(as_points(points, "posed body vertices"), dtype=np.float64)
    if len(p) != len(planes.rest):
        raise KisekaeError(f"{len(p)} posed vertices for a body of {len(planes.rest)}", "points")
    check_gap_band(gap, band)
    return p


def contact_planes_numpy(points, planes: JointPlanes, skin_matrices, *, gap: float = GAP,
                         band: float = BAND) -> np.ndarray:
    """Joint-plane contact, NumPy reference (joint by joint over all its vertices).

    Parameters
    ----------
    points : (N, 3) skinned body positions, metres
    planes : JointPlanes of this body
    skin_matrices : (B, 4, 4) the pose's skinning matrices
    gap : float, room left between the two sides, metres
    band : float, width of the smooth map, metres

    Returns
    -------
    (N, 3) float64 positions, metres.
    """
    y = _check(points, planes, gap, band)
    r = planes.rest
    centre, normal, reach = planes.posed(skin_matrices)
    radial = planes.radial()
    for j in range(len(planes.child)):
        rows, k = np.nonzero(planes.slots == j)
        if reach[j] <= 0 or not len(rows):
            continue
        side = planes.side[rows, k]
        s = ((y[rows] - centre[j]) @ normal[j]) * side
        s_rest = ((r[rows] - planes.centre[j]) @ planes.direction[j]) * side
        dist = np.linalg.norm(r[rows] - planes.centre[j], axis=1)
        rad = planes.radius[j]
        fade = np.clip((reach[j] * rad - dist) / ((planes.ring_factor - 1.0) * rad), 0.0, 1.0)
        if np.isfinite(radial[j]):
            off = axis_distance(r[rows], planes.centre[j], planes.direction[j])
            fade = np.minimum(fade, np.clip((1.25 * radial[j] - off) / (0.25 * radial[j]), 0.0, 1.0))
        target = np.minimum(0.5 * gap, s_rest - band - REST_SLACK) - (1.0 - fade) * rad
        hit = (s < target + band) & (fade > 0)
        mapped = np.where(hit, target + band * np.exp(np.minimum(s - target - band, 0.0) / band), s)
        y[rows] += ((mapped - s) * side)[:, None] * normal[j]
    return y


@numba.njit(cache=True)
def _rest_terms_kernel(r, slots, side, rest_centre, rest_dir, radial, out):
    """Per (vertex, slot), what does not change with the pose: the rest signed distance, the distance from the
    rest joint centre and the radial fade (1 where the joint has no radial reach)."""
    for i in range(r.shape[0]):
        for k in range(slots.shape[1]):
            j = slots[i, k]
            if j < 0:
                continue
            dx = r[i, 0] - rest_centre[j, 0]
            dy = r[i, 1] - rest_centre[j, 1]
            dz = r[i, 2] - rest_centre[j, 2]
            along = dx * rest_dir[j, 0] + dy * rest_dir[j, 1] + dz * rest_dir[j, 2]
            dist2 = dx * dx + dy * dy + dz * dz
            out[i, k, 0] = along * side[i, k]
            out[i, k, 1] = np.sqrt(dist2)
            out[i, k, 2] = 1.0
            if radial[j] < np.inf:
                off = np.sqrt(max(dist2 - along * along, 0.0))
                out[i, k, 2] = min(max((1.25 * radial[j] - off) / (0.25 * radial[j]), 0.0), 1.0)


@numba.njit(cache=True, nogil=True, inline="always")
def contact_vertex(y, i, terms, slots, side, frame, gap, band, slack):  # pragma: no cover - compiled
    """The contact step of vertex ``i`` of ``y`` (N, 3), in place, with the frame's joint table
    (:meth:`JointPlanes.frame_table`); Numba, the kernels' one body."""
    for k in range(slots.shape[1]):
        j = slots[i, k]
        if j < 0:
            continue
        fade = min((frame[j, 4] - terms[i, k, 1]) * frame[j, 5], 1.0, terms[i, k, 2])
        if fade <= 0.0:  # beyond the joint's reach this frame (0 when the joint is folded flat) or radially
            continue
        sd = side[i, k]
        s = (y[i, 0] * frame[j, 0] + y[i, 1] * frame[j, 1] + y[i, 2] * frame[j, 2] - frame[j, 3]) * sd
        target = min(0.5 * gap, terms[i, k, 0] - band - slack) - (1.0 - fade) * frame[j, 6]
        if s < target + band:
            move = (target + band * np.exp(min(s - target - band, 0.0) / band) - s) * sd
            y[i, 0] += move * frame[j, 0]
            y[i, 1] += move * frame[j, 1]
            y[i, 2] += move * frame[j, 2]


@numba.njit(cache=True)
def _contact_kernel(y, terms, slots, side, frame, gap, band, slack):
    for i in range(y.shape[0]):
        contact_vertex(y, i, terms, slots, side, frame, gap, band, slack)


def contact_planes(points, planes: JointPlanes, skin_matrices, *, gap: float = GAP,
                   band: float = BAND) -> np.ndarray:
    """Joint-plane contact, Numba kernel (vertex by vertex); same contract as :func:`contact_planes_numpy`."""
    y = _check(points, planes, gap, band)
    _contact_kernel(y, planes.rest_terms(), planes.slots, planes.side, planes.frame_table(skin_matrices), float(gap),
                    float(band), REST_SLACK)
    return y


@dataclass
class BodyContact:
    """The contact step as a body's ``deform`` (see :class:`kisekae.avatar.avatar.SkinnedMesh`).

    Attributes
    ----------
    planes : JointPlanes
    gap, band : float, metres
    """

    planes: JointPlanes
    gap: float = GAP
    band: float = BAND

    def check(self) -> None:
        """Raise :class:`KisekaeError` for a gap or band out of range."""
        _check(self.planes.rest, self.planes, self.gap, self.band)

    def __call__(self, points, skin_matrices) -> np.ndarray:
        return contact_planes(points, self.planes, skin_matrices, gap=self.gap, band=self.band)

    def pose(self, rest_vertices, skin, skin_matrices) -> np.ndarray:
        """(N, 3) float32 body of ``skin_matrices`` from its rest mesh, skinning and the step in one compiled pass
        (:func:`kisekae.avatar.body_frame.posed_body_frame`)."""
        from .body_frame import posed_body_frame

        return posed_body_frame(rest_vertices, skin, skin_matrices, planes=self.planes, gap=self.gap, band=self.band)

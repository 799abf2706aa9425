"""Avatars: a skinned body plus named skinned garments sharing one skeleton."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import KisekaeError
from .mesh import Mesh
from .pose import Pose
from .skeleton import Skeleton
from .skinning import Skin, lbs


@dataclass
class SkinnedMesh:
    """A mesh with skin weights.

    Parameters
    ----------
    mesh : Mesh
    skin : Skin, one row per mesh vertex
    source_index : (N,) int array or None
        For parts of a MakeHuman base mesh: each vertex's index in the base mesh.
    covered_hint : (M,) int array or None
        Body vertex ids that the garment's author marked as hidden (``.mhclo`` ``delete_verts``).
    deform : callable or None
        A per-vertex step after skinning, ``deform(points (N, 3), skin_matrices) -> (N, 3)``, e.g. the
        body's joint-plane contact (:meth:`Avatar.with_body_contact`). None: plain skinning.
    """

    mesh: Mesh
    skin: Skin
    source_index: np.ndarray | None = None
    covered_hint: np.ndarray | None = None
    deform: object = None

    def __post_init__(self):
        if self.skin.n_vertices != self.mesh.n_vertices:
            raise KisekaeError(
                f"{self.skin.n_vertices} skin rows for {self.mesh.n_vertices} vertices", self.mesh.name
            )

    @property
    def name(self) -> str:
        return self.mesh.name

    def skinned(self, skin_matrices: np.ndarray) -> np.ndarray:
        """(N, 3) float32 plain linear blend skinning for ``(B, 4, 4)`` skinning matrices (no :attr:`deform`)."""
        return lbs(self.mesh.vertices, self.skin.indices, self.skin.weights, skin_matrices)

    def posed(self, skin_matrices: np.ndarray) -> np.ndarray:
        """(N, 3) float32 posed positions for ``(B, 4, 4)`` skinning matrices (then :attr:`deform`, if set; a
        deform with a ``pose(rest_vertices, skin, skin_matrices)`` method poses the rest mesh itself, in one pass)."""
        if self.deform is None:
            return self.skinned(skin_matrices)
        pose = getattr(self.deform, "pose", None)
        if pose is not None:
            return np.asarray(pose(self.mesh.vertices, self.skin, skin_matrices), dtype=np.float32)
        return np.asarray(self.deform(self.skinned(skin_matrices), skin_matrices), dtype=np.float32)


@dataclass
class Avatar:
    """A body and garments on one skeleton.

    ``base_vertices`` and ``base_skin`` hold the whole MakeHuman base mesh (metres) when the
    avatar came from it; ``.mhclo`` garments are fitted against them. ``shape`` is the
    :class:`~kisekae.avatar.shape.BodyShape` of a shaped built-in avatar (else None).
    """

    skeleton: Skeleton
    body: SkinnedMesh
    garments: dict = field(default_factory=dict)
    base_vertices: np.ndarray | None = None
    base_skin: Skin | None = None
    name: str = "avatar"
    rig: str = ""
    shape: object = None

    def part(self, name: str) -> SkinnedMesh:
        """The body (``"body"``) or a garment by name."""
        if name == "body":
            return self.body
        try:
            return self.garments[name]
        except KeyError:
            raise KisekaeError(
                f"unknown garment {name!r}; this avatar has {', '.join(self.garments) or 'none'}", "garment"
            ) from None

    def add_garment(self, garment: SkinnedMesh) -> None:
        if garment.name in self.garments or garment.name == "body":
            raise KisekaeError("a garment with this name already exists", garment.name)
        self.garments[garment.name] = garment

    def with_body_contact(self, gap: float | None = None, band: float | None = None,
                          rest_bend_limit: float | None = None) -> "Avatar":
        """This avatar with the joint-plane contact after the body's skinning (:mod:`kisekae.avatar.contact`).

        Parameters
        ----------
        gap : float, metres left between the two sides of a bent joint (default ``contact.GAP``)
        band : float, metres, width of the smooth map (default ``contact.BAND``)
        rest_bend_limit : float, degrees (default ``contact.REST_BEND_LIMIT``): joints bent at rest by at most this
            much may take the rest bend's bisector as their plane (:func:`kisekae.avatar.contact.rest_normal`); 0
            gives the planes across the child bone that the contact used before 2026-12-07

        Returns
        -------
        Avatar sharing skeleton and garments, whose ``body.posed`` applies the contact; this avatar is
        unchanged.

        Raises
        ------
        kisekae.avatar.contact.NoBlendedJoint
            When no joint of the body blends two bones (:func:`kisekae.avatar.contact.apply_contact` returns the
            avatar as it is instead).
        KisekaeError
            For a gap or band out of range.

        Notes
        -----
        This is the recommended way to pose a body (docs/contact.md): it removes most of the folds that plain
        skinning makes at bent knees, hips and elbows. :func:`kisekae.avatar.load_builtin_avatar` returns the plain
        avatar; the command line, batch catalogues and the demo apply this step by default.
        """
        from dataclasses import replace

        from .contact import BAND, GAP, REST_BEND_LIMIT, BodyContact, JointPlanes, bone_directions, neck_bones

        sk = self.skeleton
        planes = JointPlanes.from_skin(sk.parents, sk.rest, self.body.skin.indices, self.body.skin.weights,
                                       self.body.mesh.vertices,
                                       directions=bone_directions(sk.rest, sk.parents, sk.tails),
                                       neck=neck_bones(sk),
                                       rest_bend_limit=REST_BEND_LIMIT if rest_bend_limit is None else rest_bend_limit)
        contact = BodyContact(planes, GAP if gap is None else float(gap), BAND if band is None else float(band))
        contact.check()
        return replace(self, body=replace(self.body, deform=contact))

    def with_part_contact(self, gap: float | None = None, deep: float | None = None, passes: int | None = None):
        """A copy whose body also keeps apart the parts that share no joint (a hand on the hip, an arm on the chest,
        the thighs), after its current deform (:mod:`kisekae.avatar.part_contact`; fields baked on the first call for a
        body, about 1 s; a body that has it already gets it again with these settings).

        Parameters
        ----------
        gap, deep : float or None, metres (None: :data:`~kisekae.avatar.part_contact.GAP`,
            :data:`~kisekae.avatar.part_contact.DEEP`)
        passes : int or None, one-ring passes (None: :data:`~kisekae.avatar.part_contact.PASSES`)
        """
        from dataclasses import replace

        from .part_contact import DEEP, GAP, PASSES, PartContact, cached_part_fields, inner_deform

        body = self.body
        step = PartContact(inner_deform(body.deform), cached_part_fields(body, self.skeleton.parents),
                           GAP if gap is None else gap, deep=DEEP if deep is None else deep,
                           passes=PASSES if passes is None else passes)
        step.check()
        return replace(self, body=replace(body, deform=step))

    def posed_vertices(self, name: str, pose: Pose) -> np.ndarray:
        """(N, 3) float32 positions of part ``name`` in ``pose``."""
        return self.part(name).posed(pose.skinning_matrices(self.skeleton))

    def __repr__(self) -> str:
        return (f"Avatar({self.name!r}, rig {self.rig!r}, {self.skeleton.n_bones} bones, body {self.body.mesh.n_vertices} "
                f"vertices, garments {list(self.garments)})")

"""Tapered capsules in bone space: validation, posing, JSON and VRM 1.0 colliders.

A capsule rig is five parallel arrays (libigl style, no classes needed by the kernels):

``bone``  int32 ``(C,)``     index of the bone whose space the capsule lives in
``p0``    float ``(C,3)``    first end-sphere centre, bone space, metres
``p1``    float ``(C,3)``    second end-sphere centre, bone space, metres
``r0``    float ``(C,)``     radius at ``p0``, metres
``r1``    float ``(C,)``     radius at ``p1``, metres

A capsule is the convex hull of the two spheres (a "round cone" when ``r0 != r1``). It is only
well defined when neither sphere contains the other: ``|p1 - p0| > |r0 - r1|``; the segment may
not be empty (``p0 != p1``) and both radii must be positive.

:class:`CapsuleRig` bundles the arrays with optional bone names for saving; every algorithm
takes plain arrays.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import KisekaeError, quote_name

#: Format tag written to capsule-rig JSON files.
JSON_FORMAT = "kisekae.capsules/1"

#: Smallest accepted segment length (metres); shorter segments are "degenerate".
MIN_SEGMENT = 1e-6


def validate_capsules(bone, p0, p1, r0, r1, n_bones: int | None = None, source: str = "capsules"):
    """Check and convert the five capsule arrays.

    Parameters
    ----------
    bone : array_like of int, shape (C,)
        Bone index of each capsule; must be in ``[0, n_bones)`` when ``n_bones`` is given.
    p0, p1 : array_like, shape (C, 3)
        End-sphere centres in bone space, metres.
    r0, r1 : array_like, shape (C,)
        End-sphere radii, metres, > 0.
    n_bones : int, optional
        Number of bones of the skeleton the rig refers to.
    source : str
        Name used in error messages (file name or argument).

    Returns
    -------
    tuple of ndarray
        ``(bone int32 (C,), p0 float64 (C,3), p1 float64 (C,3), r0 float64 (C,), r1 float64 (C,))``.

    Raises
    ------
    KisekaeError
        On wrong shapes, non-finite numbers, ``r <= 0``, ``p0 == p1`` or one end sphere inside the
        other.
    """
    try:
        bone_a = np.asarray(bone)
        p0a = np.asarray(p0, dtype=np.float64)
        p1a = np.asarray(p1, dtype=np.float64)
        r0a = np.asarray(r0, dtype=np.float64)
        r1a = np.asarray(r1, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise KisekaeError(f"cannot read capsule arrays as numbers: {exc}", source) from None
    if bone_a.ndim != 1:
        raise KisekaeError(f"bone must have shape (C,), got {bone_a.shape}", source)
    c = bone_a.shape[0]
    for name, a, shape in (("p0", p0a, (c, 3)), ("p1", p1a, (c, 3)), ("r0", r0a, (c,)), ("r1", r1a, (c,))):
        if a.shape != shape:
            raise KisekaeError(f"{name} must have shape {shape} to match {c} capsules, got {a.shape}", source)
        if not np.all(np.isfinite(a)):
            i = int(np.argmax(~np.isfinite(a.reshape(c, -1)).all(axis=1))) if c else 0
            raise KisekaeError(f"{name} of capsule {i} is not finite", source)
    if c and not np.issubdtype(bone_a.dtype, np.integer):
        if not np.all(np.isfinite(bone_a)) or np.any(bone_a != np.round(bone_a)):
            raise KisekaeError("bone indices must be integers", source)
    bone_a = bone_a.astype(np.int32)
    if c and bone_a.min() < 0:
        raise KisekaeError(f"capsule {int(np.argmin(bone_a))} has negative bone index", source)
    if n_bones is not None and c and bone_a.max() >= n_bones:
        raise KisekaeError(
            f"capsule {int(np.argmax(bone_a))} refers to bone {int(bone_a.max())}, skeleton has {n_bones}", source
        )
    bad = np.flatnonzero((r0a <= 0) | (r1a <= 0))
    if bad.size:
        i = int(bad[0])
        raise KisekaeError(f"capsule {i} has radius <= 0 (r0={r0a[i]:g}, r1={r1a[i]:g})", source)
    length = np.linalg.norm(p1a - p0a, axis=1)
    bad = np.flatnonzero(length < MIN_SEGMENT)
    if bad.size:
        raise KisekaeError(f"capsule {int(bad[0])} is degenerate: p0 == p1 (use a larger segment)", source)
    bad = np.flatnonzero(length <= np.abs(r0a - r1a))
    if bad.size:
        i = int(bad[0])
        raise KisekaeError(
            f"capsule {i} is degenerate: one end sphere lies inside the other "
            f"(length {length[i]:g} <= |r0 - r1| = {abs(r0a[i] - r1a[i]):g})",
            source,
        )
    return (
        np.ascontiguousarray(bone_a),
        np.ascontiguousarray(p0a),
        np.ascontiguousarray(p1a),
        np.ascontiguousarray(r0a),
        np.ascontiguousarray(r1a),
    )


def transform_capsules(bone, p0, p1, r0, r1, bone_matrices):
    """Pose a capsule rig: map bone-space capsules to world space.

    Parameters
    ----------
    bone, p0, p1, r0, r1 : arrays
        The capsule rig (see module docstring), bone space.
    bone_matrices : array_like, shape (B, 4, 4)
        World matrices of the posed bones (bone space -> world, column vectors), e.g.
        ``pose.world_matrices(skeleton)``.

    Returns
    -------
    a, b : ndarray float64 (C, 3)
        World-space end-sphere centres, metres.
    ra, rb : ndarray float64 (C,)
        Radii, scaled by the cube root of the matrix determinant (1 for rigid bones).
    """
    bone, p0, p1, r0, r1 = validate_capsules(bone, p0, p1, r0, r1)
    m = np.asarray(bone_matrices, dtype=np.float64)
    if m.ndim != 3 or m.shape[1:] != (4, 4):
        raise KisekaeError(f"expected shape (B, 4, 4), got {m.shape}", "bone_matrices")
    if not np.all(np.isfinite(m)):
        raise KisekaeError("non-finite value (NaN or inf)", "bone_matrices")
    if bone.size and bone.max() >= m.shape[0]:
        raise KisekaeError(f"capsule refers to bone {int(bone.max())}, only {m.shape[0]} matrices given", "bone_matrices")
    mc = m[bone]
    a = np.einsum("cij,cj->ci", mc[:, :3, :3], p0) + mc[:, :3, 3]
    b = np.einsum("cij,cj->ci", mc[:, :3, :3], p1) + mc[:, :3, 3]
    scale = np.cbrt(np.abs(np.linalg.det(mc[:, :3, :3]))) if bone.size else np.ones(0)
    return a, b, r0 * scale, r1 * scale


@dataclass
class CapsuleRig:
    """A capsule rig: the five arrays plus the bone names they refer to.

    Attributes
    ----------
    bone : ndarray int32 (C,)
    p0, p1 : ndarray float64 (C, 3), bone space, metres
    r0, r1 : ndarray float64 (C,), metres
    bone_names : list of str
        Names of the skeleton's bones (``bone`` indexes this list); saved so that a rig can be
        re-attached to a skeleton with another bone order.
    """

    bone: np.ndarray
    p0: np.ndarray
    p1: np.ndarray
    r0: np.ndarray
    r1: np.ndarray
    bone_names: list = field(default_factory=list)

    def __post_init__(self):
        n = len(self.bone_names) if self.bone_names else None
        self.bone, self.p0, self.p1, self.r0, self.r1 = validate_capsules(
            self.bone, self.p0, self.p1, self.r0, self.r1, n_bones=n
        )

    def __len__(self) -> int:
        return int(self.bone.shape[0])

    def arrays(self):
        """Return ``(bone, p0, p1, r0, r1)``."""
        return self.bone, self.p0, self.p1, self.r0, self.r1

    def posed(self, bone_matrices):
        """World-space ``(a, b, ra, rb)`` for posed bone matrices ``(B, 4, 4)``."""
        return transform_capsules(*self.arrays(), bone_matrices)

    def remap(self, bone_names) -> "CapsuleRig":
        """Return the rig re-indexed for a skeleton whose bones are ``bone_names`` (by name)."""
        if not self.bone_names:
            raise KisekaeError("rig has no bone names, cannot remap", "capsules")
        lookup = {n: i for i, n in enumerate(bone_names)}
        missing = sorted({self.bone_names[b] for b in self.bone} - set(lookup))
        if missing:
            raise KisekaeError(f"skeleton lacks bones {missing}", "capsules")
        new = np.array([lookup[self.bone_names[b]] for b in self.bone], dtype=np.int32)
        return CapsuleRig(new, self.p0, self.p1, self.r0, self.r1, list(bone_names))

    # ------------------------------------------------------------------ JSON
    def to_json_dict(self) -> dict:
        """A hand-editable dict: one entry per capsule, bone by name, values in metres."""
        caps = []
        for i in range(len(self)):
            b = int(self.bone[i])
            caps.append(
                {
                    "bone": self.bone_names[b] if self.bone_names else b,
                    "p0": [round(float(x), 6) for x in self.p0[i]],
                    "p1": [round(float(x), 6) for x in self.p1[i]],
                    "r0": round(float(self.r0[i]), 6),
                    "r1": round(float(self.r1[i]), 6),
                }
            )
        return {"format": JSON_FORMAT, "units": "metres", "space": "bone", "bones": list(self.bone_names), "capsules": caps}

    @classmethod
    def from_json_dict(cls, d: dict, source: str = "capsules") -> "CapsuleRig":
        """Inverse of :meth:`to_json_dict`; bones may be given by name or index."""
        if not isinstance(d, dict) or not isinstance(d.get("capsules"), list):
            raise KisekaeError("not a capsule rig (no 'capsules' list)", source)
        fmt = d.get("format", JSON_FORMAT)
        if fmt != JSON_FORMAT:
            raise KisekaeError(f"unknown format {quote_name(fmt)}, expected {JSON_FORMAT!r}", source)
        if not isinstance(d.get("bones", []), list):
            raise KisekaeError("'bones' must be a list of bone names", source)
        names = list(d.get("bones", []))
        lookup = {n: i for i, n in enumerate(names)}
        bone, p0, p1, r0, r1 = [], [], [], [], []
        for i, c in enumerate(d["capsules"]):
            try:
                b = c["bone"]
                if isinstance(b, str):
                    if b not in lookup:
                        raise KisekaeError(f"capsule {i}: bone {quote_name(b)} is not in 'bones'", source)
                    b = lookup[b]
                bone.append(int(b))
                p0.append([float(x) for x in c["p0"]])
                p1.append([float(x) for x in c["p1"]])
                r = c.get("r", None)
                r0.append(float(c.get("r0", r)))
                r1.append(float(c.get("r1", r)))
            except KeyError as exc:
                raise KisekaeError(f"capsule {i}: missing field {quote_name(exc.args[0])}", source) from None
            except (TypeError, ValueError, OverflowError):
                # never the value itself: the message of float()/int() would quote the file
                raise KisekaeError(f"capsule {i}: a field is not a number or a list of numbers", source) from None
        return cls(
            np.array(bone, dtype=np.int32).reshape(-1),
            np.array(p0, dtype=np.float64).reshape(-1, 3),
            np.array(p1, dtype=np.float64).reshape(-1, 3),
            np.array(r0, dtype=np.float64).reshape(-1),
            np.array(r1, dtype=np.float64).reshape(-1),
            names,
        )

    def save(self, path) -> None:
        """Write the rig as indented JSON (see :meth:`to_json_dict`)."""
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_json_dict(), fh, indent=1)
            fh.write("\n")

    @classmethod
    def load(cls, path) -> "CapsuleRig":
        """Read a rig written by :meth:`save` (or edited by hand)."""
        from ..jsonfile import read_json

        return cls.from_json_dict(read_json(path), source=os.fspath(path))

    # ------------------------------------------------------------------- VRM
    def to_vrm_colliders(self, node_of_bone=None, node_from_bone=None) -> list:
        """Convert to VRM 1.0 ``VRMC_springBone`` capsule colliders.

        Parameters
        ----------
        node_of_bone : sequence of int, optional
            glTF node index of each bone (default: the bone index itself).
        node_from_bone : array_like (B, 4, 4), optional
            Matrix from our bone space to the node's local space (default identity, i.e. the
            glTF node frame equals the bone frame).

        Returns
        -------
        list of dict
            ``{"node": n, "shape": {"capsule": {"offset": [..], "radius": r, "tail": [..]}}}``.
            VRM capsules have one radius, so ``max(r0, r1)`` is written (the exported collider
            encloses the tapered one).
        """
        out = []
        for i in range(len(self)):
            b = int(self.bone[i])
            a, t = self.p0[i], self.p1[i]
            if node_from_bone is not None:
                m = np.asarray(node_from_bone, dtype=np.float64)[b]
                a = m[:3, :3] @ a + m[:3, 3]
                t = m[:3, :3] @ t + m[:3, 3]
            node = int(node_of_bone[b]) if node_of_bone is not None else b
            out.append(
                {
                    "node": node,
                    "shape": {
                        "capsule": {
                            "offset": [float(x) for x in a],
                            "radius": float(max(self.r0[i], self.r1[i])),
                            "tail": [float(x) for x in t],
                        }
                    },
                }
            )
        return out

    @classmethod
    def from_vrm_colliders(cls, colliders, bone_of_node=None, bone_names=None, bone_from_node=None, source="vrm"):
        """Build a rig from VRM 1.0 colliders (capsule shapes; sphere shapes become short capsules).

        Parameters
        ----------
        colliders : list of dict
            ``VRMC_springBone.colliders`` entries.
        bone_of_node : mapping node index -> bone index, optional
            Default: node index equals bone index.
        bone_names : list of str, optional
        bone_from_node : array_like (B, 4, 4), optional
            Inverse of ``node_from_bone`` in :meth:`to_vrm_colliders`.
        """
        bone, p0, p1, r0, r1 = [], [], [], [], []
        for i, c in enumerate(colliders):
            try:
                node = int(c["node"])
                shape = c["shape"]
                if "capsule" in shape:
                    s = shape["capsule"]
                    a = np.array(s.get("offset", [0, 0, 0]), dtype=np.float64)
                    t = np.array(s.get("tail", [0, 0, 0]), dtype=np.float64)
                elif "sphere" in shape:
                    s = shape["sphere"]
                    a = np.array(s.get("offset", [0, 0, 0]), dtype=np.float64)
                    t = a.copy()
                else:
                    raise KisekaeError(f"collider {i}: unsupported shape {list(shape)}", source)
                r = float(s.get("radius", 0.0))
            except (KeyError, TypeError, ValueError) as exc:
                raise KisekaeError(f"collider {i}: bad or missing field ({exc})", source) from None
            b = int(bone_of_node[node]) if bone_of_node is not None else node
            if bone_from_node is not None:
                m = np.asarray(bone_from_node, dtype=np.float64)[b]
                a = m[:3, :3] @ a + m[:3, 3]
                t = m[:3, :3] @ t + m[:3, 3]
            if np.linalg.norm(t - a) < MIN_SEGMENT:  # a sphere: give it a tiny segment
                t = a + np.array([0.0, 1e-5, 0.0])
            bone.append(b)
            p0.append(a)
            p1.append(t)
            r0.append(r)
            r1.append(r)
        return cls(
            np.array(bone, dtype=np.int32),
            np.array(p0, dtype=np.float64).reshape(-1, 3),
            np.array(p1, dtype=np.float64).reshape(-1, 3),
            np.array(r0, dtype=np.float64),
            np.array(r1, dtype=np.float64),
            list(bone_names or []),
        )

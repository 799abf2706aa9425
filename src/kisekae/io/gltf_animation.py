"""glTF animations: channels, the node graph they drive, and their evaluation at any time.

An :class:`Animation` keeps the channels of the file (key times, key values, interpolation) and a
:class:`NodeRig` (the node graph and how its nodes map to the avatar's bones and parts), so it
can be evaluated at any time, not only at key times:

* :meth:`Animation.node_matrices` - world matrices of every node (glTF's own definition);
* :meth:`Animation.pose_at` - a :class:`~kisekae.avatar.Pose` for the avatar's skeleton;
* :meth:`Animation.skinning_matrices` - exact ``(B, 4, 4)`` skinning matrices (scale included);
* :meth:`Animation.morph_weights_at` - morph target weights per part.

Interpolation follows the glTF 2.0 specification (Appendix C): STEP holds the previous key,
LINEAR is ``(1 - t) v_k + t v_k+1`` (spherical along the shorter arc for rotations), CUBICSPLINE
is the Hermite spline with the file's in/out tangents scaled by the key interval (rotations
normalised). Times before the first key or after the last take the first or last key value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..avatar.pose import Pose
from ..avatar.skeleton import Skeleton
from ..errors import KisekaeError
from .gltf_read import GltfDocument, accessor_as, get_dict, get_list, get_str, index_into

PATHS = ("translation", "rotation", "scale", "weights")
INTERPOLATIONS = ("LINEAR", "STEP", "CUBICSPLINE")


# ============================================================================= sampling
def quaternion_matrices(q: np.ndarray) -> np.ndarray:
    """(T, 3, 3) rotations from (T, 4) quaternions (x, y, z, w), normalised first (zero -> identity)."""
    q = np.asarray(q, dtype=np.float64)
    n = np.linalg.norm(q, axis=1, keepdims=True)
    q = np.where(n > 0, q / np.where(n > 0, n, 1.0), [0.0, 0.0, 0.0, 1.0])
    x, y, z, w = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], 1)


def _slerp(q0: np.ndarray, q1: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Row-wise spherical interpolation of (T, 4) quaternions along the shorter arc (glTF Appendix C)."""
    q0 = q0 / np.linalg.norm(q0, axis=1, keepdims=True)
    q1 = q1 / np.linalg.norm(q1, axis=1, keepdims=True)
    d = np.einsum("ij,ij->i", q0, q1)
    q1 = np.where(d[:, None] < 0, -q1, q1)
    d = np.abs(d)
    theta = np.arccos(np.clip(d, -1.0, 1.0))
    sin = np.sin(theta)
    small = sin < 1e-9
    a = np.where(small, 1.0 - s, np.sin((1.0 - s) * theta) / np.where(small, 1.0, sin))
    b = np.where(small, s, np.sin(s * theta) / np.where(small, 1.0, sin))
    out = a[:, None] * q0 + b[:, None] * q1
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def sample_channel(times: np.ndarray, values: np.ndarray, interpolation: str, t: np.ndarray,
                   rotation: bool = False) -> np.ndarray:
    """Sample a glTF animation sampler at times ``t``.

    Parameters
    ----------
    times : (K,) strictly increasing key times, seconds
    values : (K, C) key values, or (3K, C) for CUBICSPLINE (in-tangent, value, out-tangent per key)
    interpolation : {"LINEAR", "STEP", "CUBICSPLINE"}
    t : (T,) sample times, seconds; clamped to the key range
    rotation : bool
        Quaternion output: LINEAR uses slerp, CUBICSPLINE results are normalised.

    Returns
    -------
    (T, C) float64
    """
    times = np.asarray(times, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    t = np.clip(np.atleast_1d(np.asarray(t, dtype=np.float64)), times[0], times[-1])
    k = len(times)
    if interpolation == "CUBICSPLINE":
        a_in, val, b_out = v[0::3], v[1::3], v[2::3]
    else:
        val = v
    if k == 1:
        return np.repeat(val[:1], len(t), axis=0)
    i = np.clip(np.searchsorted(times, t, side="right") - 1, 0, k - 2)
    td = times[i + 1] - times[i]
    s = np.clip((t - times[i]) / td, 0.0, 1.0)
    if interpolation == "STEP":
        out = val[np.where(t >= times[-1], k - 1, i)]
    elif interpolation == "LINEAR":
        if rotation:
            out = _slerp(val[i], val[i + 1], s)
        else:
            out = val[i] + s[:, None] * (val[i + 1] - val[i])
    else:
        s2, s3 = s * s, s * s * s
        h00 = 2 * s3 - 3 * s2 + 1
        h10 = s3 - 2 * s2 + s
        h01 = -2 * s3 + 3 * s2
        h11 = s3 - s2
        out = (h00[:, None] * val[i] + (h10 * td)[:, None] * b_out[i]
               + h01[:, None] * val[i + 1] + (h11 * td)[:, None] * a_in[i + 1])
        if rotation:
            out = out / np.linalg.norm(out, axis=1, keepdims=True)
    return out


@dataclass(frozen=True)
class Channel:
    """One animation channel: a sampler bound to a node property.

    Attributes
    ----------
    node : int, the glTF node it animates
    path : {"translation", "rotation", "scale", "weights"}
    times : (K,) float64 key times, seconds, strictly increasing, >= 0
    values : (K, C) or (3K, C) float64 key values (CUBICSPLINE: in-tangent, value, out-tangent);
        C is 3, 4 (quaternion x, y, z, w) or the number of morph targets
    interpolation : {"LINEAR", "STEP", "CUBICSPLINE"}
    """

    node: int
    path: str
    times: np.ndarray
    values: np.ndarray
    interpolation: str

    def sample(self, t) -> np.ndarray:
        """(T, C) float64 values at times ``t`` (seconds, clamped to the key range)."""
        return sample_channel(self.times, self.values, self.interpolation, t, rotation=self.path == "rotation")


def read_channels(doc: GltfDocument, ai: int) -> tuple:
    """``(name, channels, skipped)`` of ``animations[ai]``, every value checked.

    ``skipped`` counts channels without a node target (e.g. ``KHR_animation_pointer``), which
    kisekae does not apply.
    """
    anim = doc.array("animations")[ai]
    w = f"animations[{ai}]"
    name = get_str(anim, "name", w, doc.src) or f"animation{ai}"
    samplers = get_list(anim, "samplers", w, doc.src, doc.limits)
    channels = get_list(anim, "channels", w, doc.src, doc.limits)
    n_nodes = len(doc.array("nodes"))
    out, skipped, seen = [], 0, set()
    for ci, ch in enumerate(channels):
        cw = f"{w}.channels[{ci}]"
        if not isinstance(ch, dict):
            raise KisekaeError(f"{cw} must be an object", doc.src)
        target = get_dict(ch, "target", cw, doc.src)
        path = target.get("path")
        if "node" not in target or path not in PATHS:
            skipped += 1
            continue
        node = index_into(target["node"], n_nodes, "nodes", f"{cw}.target.node", doc.src)
        if (node, path) in seen:
            raise KisekaeError(f"{cw} animates nodes[{node}].{path} a second time in the same animation", doc.src)
        seen.add((node, path))
        si = index_into(ch.get("sampler"), len(samplers), "samplers", f"{cw}.sampler", doc.src)
        sm = samplers[si]
        sw = f"{w}.samplers[{si}]"
        if not isinstance(sm, dict):
            raise KisekaeError(f"{sw} must be an object", doc.src)
        interp = sm.get("interpolation", "LINEAR")
        if interp not in INTERPOLATIONS:
            raise KisekaeError(f"{sw}.interpolation {interp!r:.40} is not LINEAR, STEP or CUBICSPLINE", doc.src)
        times = accessor_as(doc, sm.get("input"), f"{sw}.input", types=("SCALAR",))
        if np.any(np.diff(times) <= 0):
            raise KisekaeError(f"{sw}.input key times must be strictly increasing", doc.src)
        if times[0] < 0:
            raise KisekaeError(f"{sw}.input key times must be >= 0", doc.src)
        if interp == "CUBICSPLINE" and len(times) < 2:
            raise KisekaeError(f"{sw} is CUBICSPLINE with {len(times)} key; the spec needs at least 2", doc.src)
        per_key = 3 if interp == "CUBICSPLINE" else 1
        if path == "weights":
            vals = accessor_as(doc, sm.get("output"), f"{sw}.output", types=("SCALAR",))
            if len(vals) % (len(times) * per_key):
                raise KisekaeError(f"{sw}.output has {len(vals)} values, not a multiple of "
                                   f"{len(times) * per_key} keys", doc.src)
            vals = vals.reshape(len(times) * per_key, -1)
        else:
            types = ("VEC4",) if path == "rotation" else ("VEC3",)
            vals = accessor_as(doc, sm.get("output"), f"{sw}.output", types=types, int_ok=False,
                               count=len(times) * per_key)
            if path == "rotation":
                keys = vals[1::3] if per_key == 3 else vals
                if np.any(np.linalg.norm(keys, axis=1) < 1e-6):
                    raise KisekaeError(f"{sw}.output has a zero rotation quaternion", doc.src)
        out.append(Channel(node, path, np.asarray(times, np.float64), np.asarray(vals, np.float64), interp))
    return name, out, skipped


# ============================================================================= node graph
def node_world_matrices(parents, order, base_local, trs_base, samples, n_frames: int, root=None) -> np.ndarray:
    """(T, n, 4, 4) world matrices of all nodes over T frames.

    ``base_local`` (n, 4, 4) are the rest local matrices; nodes with sampled ``translation``,
    ``rotation`` or ``scale`` (``samples[(node, path)]`` -> (T, C)) are rebuilt from their rest
    TRS (``trs_base``) with the samples substituted. ``root`` (4, 4) pre-multiplies every root
    (a global turn, e.g. VRM 0.x).
    """
    n = len(parents)
    animated = {node for node, path in samples if path != "weights"}
    world = np.empty((n_frames, n, 4, 4))
    for j in order:
        if j in animated:
            t0, q0, s0 = trs_base[j]
            t = samples.get((j, "translation"), np.broadcast_to(t0, (n_frames, 3)))
            q = samples.get((j, "rotation"), np.broadcast_to(q0, (n_frames, 4)))
            s = samples.get((j, "scale"), np.broadcast_to(s0, (n_frames, 3)))
            loc = np.zeros((n_frames, 4, 4))
            loc[:, :3, :3] = quaternion_matrices(q) * s[:, None, :]
            loc[:, :3, 3] = t
            loc[:, 3, 3] = 1.0
        else:
            loc = np.broadcast_to(base_local[j], (n_frames, 4, 4))
        p = parents[j]
        if p >= 0:
            world[:, j] = world[:, p] @ loc
        elif root is not None:
            world[:, j] = root @ loc
        else:
            world[:, j] = loc
    return world


def poses_from_world(skeleton: Skeleton, joint_world: np.ndarray, name: str) -> tuple:
    """Convert posed joint world matrices (T, B, 4, 4) to :class:`Pose` objects.

    Each bone's local rotation is the rotation (polar part, so scale is dropped) that takes its
    parent's posed frame times its rest offset to its posed frame. The first root's translation
    becomes the pose translation; every other difference between a joint's position and its rest
    offset (animated non-root translation, other roots, a parent's scale) becomes
    ``Pose.offsets``, so joint positions are reproduced exactly.

    Returns
    -------
    poses : list of T Pose
    dropped : float, metres, largest joint-position difference between ``joint_world`` and the
        forward kinematics of the returned poses (round-off only).
    dropped_scale : float, largest ``|singular value - 1|`` of the joints' relative transforms.
    """
    t_count, b = joint_world.shape[:2]
    local = skeleton.local_rest
    rest = skeleton.rest.astype(np.float64)
    rots = np.empty((t_count, b, 3, 3))
    offsets = np.zeros((t_count, b, 3))
    ours = np.empty((t_count, b, 4, 4))
    scale = np.ones(t_count)
    roots = np.nonzero(skeleton.parents < 0)[0]
    trans = joint_world[:, roots[0], :3, 3] - rest[roots[0], :3, 3]
    for j, p in enumerate(skeleton.parents):
        frame = (ours[:, p, :3, :3] if p >= 0 else np.eye(3)) @ local[j, :3, :3]
        rel = np.linalg.inv(frame) @ joint_world[:, j, :3, :3]
        u, sv, vt = np.linalg.svd(rel)
        scale = np.maximum(scale, np.max(np.abs(sv - 1.0), axis=1) + 1.0)
        d = np.sign(np.linalg.det(u @ vt))
        d[d == 0] = 1.0
        u[:, :, 2] *= d[:, None]
        rots[:, j] = u @ vt
        m = np.broadcast_to(local[j], (t_count, 4, 4)).copy()
        m[:, :3, :3] = m[:, :3, :3] @ rots[:, j]
        if p < 0:
            offsets[:, j] = joint_world[:, j, :3, 3] - rest[j, :3, 3] - trans
            m[:, :3, 3] += trans + offsets[:, j]
            ours[:, j] = m
        else:
            # position in the parent's posed frame, minus the rest offset
            rel_t = np.linalg.solve(ours[:, p, :3, :3], (joint_world[:, j, :3, 3] - ours[:, p, :3, 3])[..., None])[..., 0]
            offsets[:, j] = rel_t - local[j, :3, 3]
            m[:, :3, 3] += offsets[:, j]
            ours[:, j] = ours[:, p] @ m
    dropped = float(np.max(np.linalg.norm(ours[:, :, :3, 3] - joint_world[:, :, :3, 3], axis=-1))) if b else 0.0
    keep = np.abs(offsets).max(axis=(1, 2)) > 1e-9 if b else np.zeros(t_count, bool)
    poses = [Pose(rots[i], trans[i], f"{name}:{i}", offsets[i] if keep[i] else None) for i in range(t_count)]
    return poses, dropped, float(np.max(np.abs(scale - 1.0))) if b else 0.0


@dataclass
class NodeRig:
    """The node graph of a file and how its nodes drive the avatar (built by the importer).

    Attributes
    ----------
    parents : (n,) int64, -1 for roots
    order : (n,) int64, parents-first node order
    local : (n, 4, 4) float64 rest local matrices
    trs : list of n (translation (3,), quaternion (4,), scale (3,)) rest TRS
    root : (4, 4) float64 or None, pre-multiplied to every root (VRM 0.x turn)
    skeleton : Skeleton
    bone_nodes : (B,) int64, the node each bone follows, -1 for a static bone
    bone_fix : (B, 4, 4) float64, right-multiplied to the node's world matrix to get the bone
        frame (identity for skin joints; removes a mesh node's rest scale)
    part_nodes : dict part -> node index (the node whose ``weights`` drive its morph targets)
    morph_counts : dict part -> number of morph targets
    default_weights : dict part -> (M,) float64 weights at rest (``node.weights`` or ``mesh.weights``)
    """

    parents: np.ndarray
    order: np.ndarray
    local: np.ndarray
    trs: list
    root: np.ndarray | None
    skeleton: Skeleton
    bone_nodes: np.ndarray
    bone_fix: np.ndarray
    part_nodes: dict = field(default_factory=dict)
    morph_counts: dict = field(default_factory=dict)
    default_weights: dict = field(default_factory=dict)

    def world(self, channels, times) -> np.ndarray:
        """(T, n, 4, 4) node world matrices at ``times`` with ``channels`` applied."""
        times = np.atleast_1d(np.asarray(times, dtype=np.float64))
        samples = {(c.node, c.path): c.sample(times) for c in channels if c.path != "weights"}
        return node_world_matrices(self.parents, self.order, self.local, self.trs, samples, len(times), self.root)

    def joint_world(self, world: np.ndarray) -> np.ndarray:
        """(T, B, 4, 4) bone frames from node world matrices (static bones keep their rest)."""
        t = len(world)
        rest = self.skeleton.rest.astype(np.float64)
        out = np.broadcast_to(rest, (t,) + rest.shape).copy()
        moving = np.nonzero(self.bone_nodes >= 0)[0]
        out[:, moving] = world[:, self.bone_nodes[moving]] @ self.bone_fix[moving]
        return out


def _times(t, where: str) -> np.ndarray:
    a = np.atleast_1d(np.asarray(t, dtype=np.float64))
    if a.ndim != 1 or not np.all(np.isfinite(a)):
        raise KisekaeError(f"times must be finite seconds, a number or a 1-D array, got {np.asarray(t)!r:.60}", where)
    return a


@dataclass
class Animation:
    """A glTF animation: its channels, evaluable at any time, and poses sampled on import.

    Attributes
    ----------
    name : str
    times : (T,) float64 seconds at which :attr:`poses` were sampled (the union of key times, or
        a regular grid when the importer was given ``fps``)
    poses : list of T :class:`Pose` (local rotations, root translation and joint offsets)
    morph_weights : dict part name -> (T, M) float64 morph-target weights at :attr:`times`, for
        parts whose weights are animated
    dropped_translation_m : float
        Largest distance (metres) between a joint's position in the file and in our pose
        (round-off: translations are kept as ``Pose.offsets``).
    dropped_scale : float
        Largest deviation from 1 of a joint's animated scale relative to its rest frame. Scale is
        not part of :class:`Pose`; :meth:`skinning_matrices` and
        :meth:`kisekae.io.gltf.GltfAsset.posed_vertices` apply it.
    channels : list of Channel
    rig : NodeRig or None (None for an animation built by hand)
    """

    name: str
    times: np.ndarray
    poses: list
    morph_weights: dict = field(default_factory=dict)
    dropped_translation_m: float = 0.0
    dropped_scale: float = 0.0
    channels: list = field(default_factory=list)
    rig: NodeRig | None = field(default=None, repr=False)

    @property
    def start(self) -> float:
        """First key time of any channel, seconds (0 without channels)."""
        return min((float(c.times[0]) for c in self.channels), default=0.0)

    @property
    def end(self) -> float:
        """Last key time of any channel, seconds (0 without channels)."""
        return max((float(c.times[-1]) for c in self.channels), default=0.0)

    def _need_rig(self) -> NodeRig:
        if self.rig is None:
            raise KisekaeError("this animation has no node graph to evaluate (not read from a glTF file)", self.name)
        return self.rig

    def node_matrices(self, t) -> np.ndarray:
        """World matrices of every glTF node at time(s) ``t``.

        Parameters
        ----------
        t : float or (T,) array of seconds (any value; outside a channel's keys its first or
            last key value holds)

        Returns
        -------
        (T, n_nodes, 4, 4) float64, metres, glTF frame (with the VRM 0.x turn when the importer
        applied it)
        """
        return self._need_rig().world(self.channels, _times(t, self.name))

    def skinning_matrices(self, t) -> np.ndarray:
        """Exact skinning matrices of the avatar's bones at time(s) ``t``.

        ``joint_world(t) @ inv(rest)`` per bone, from the node graph directly: animated scale
        and every translation are included (a :class:`Pose` drops scale).

        Returns
        -------
        (T, B, 4, 4) float64
        """
        rig = self._need_rig()
        jw = rig.joint_world(self.node_matrices(t))
        return jw @ np.linalg.inv(rig.skeleton.rest.astype(np.float64))

    def poses_at(self, t) -> list:
        """:class:`Pose` objects at time(s) ``t`` (seconds), one per time."""
        rig = self._need_rig()
        times = _times(t, self.name)
        poses, _, _ = poses_from_world(rig.skeleton, rig.joint_world(self.node_matrices(times)), self.name)
        for p, tt in zip(poses, times):
            p.name = f"{self.name}@{tt:.4g}s"
        return poses

    def pose_at(self, t: float) -> Pose:
        """The :class:`Pose` at one time ``t`` (seconds)."""
        times = _times(t, self.name)
        if len(times) != 1:
            raise KisekaeError(f"pose_at takes one time, got {len(times)}; use poses_at", self.name)
        return self.poses_at(times)[0]

    def morph_weights_at(self, t) -> dict:
        """Morph-target weights of every part with morph targets at time(s) ``t``.

        Parts whose weights are not animated keep their rest weights (``node.weights``, else
        ``mesh.weights``, else 0).

        Returns
        -------
        dict part -> (T, M) float64
        """
        rig = self._need_rig()
        times = _times(t, self.name)
        animated = {c.node: c for c in self.channels if c.path == "weights"}
        out = {}
        for part, m in rig.morph_counts.items():
            node = rig.part_nodes.get(part)
            if node in animated:
                out[part] = animated[node].sample(times)
            else:
                out[part] = np.broadcast_to(rig.default_weights[part], (len(times), m)).copy()
        return out

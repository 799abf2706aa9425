"""glTF 2.0 / GLB / VRM import and export of skinned avatars.

Import (:func:`load_gltf`) turns a file into an :class:`~kisekae.avatar.Avatar` plus what the
avatar model has no place for (morph targets, extra vertex attributes, animations that can be
evaluated at any time (:mod:`kisekae.io.gltf_animation`), VRM humanoid data, the capsule rig).
Every value the file declares is checked first (:mod:`kisekae.io.gltf_read`). What is read but
not applied is listed in :attr:`GltfAsset.warnings` (and by ``kisekae info``).

Export (:func:`save_gltf`) writes plain arrays (:class:`ExportPart` per mesh) with pygltflib;
:func:`avatar_parts` builds those parts from an avatar, so the outputs of the fit, tension and
wound stages can be passed in as arrays.

Conventions: metres, glTF frame (+Y up, character facing +Z). VRM 0.x models face -Z; they are
turned 180 degrees about Y on import unless ``vrm0_turn=False``.
"""

from __future__ import annotations

import io
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..avatar.avatar import Avatar, SkinnedMesh
from ..avatar.capsules import CapsuleRig
from ..avatar.humanoid import guess_humanoid
from ..avatar.mesh import Mesh
from ..avatar.pose import Pose
from ..avatar.skeleton import Skeleton
from ..avatar.skinning import Skin, lbs
from ..errors import KisekaeError
from . import vrm as vrm_mod
from .gltf_animation import (  # noqa: F401  (Channel, NodeRig, sample_channel... are part of this module's API)
    Animation,
    Channel,
    NodeRig,
    node_world_matrices,
    poses_from_world,
    quaternion_matrices,
    read_channels,
    sample_channel,
)
from .gltf_read import (
    DEFAULT_LIMITS,
    GltfDocument,
    Limits,
    accessor_as,
    decompose_trs,
    get_dict,
    get_int,
    get_list,
    get_numbers,
    get_str,
    index_into,
    load_document,
    matrix_quaternion,
    polar_rotation,
    trs_matrix,
)

#: Name of the extras block our exporter writes (root ``extras``).
EXTRAS_KEY = "kisekae"

_TRI_MODES = (4, 5, 6)
_MODE_NAMES = {0: "POINTS", 1: "LINES", 2: "LINE_LOOP", 3: "LINE_STRIP"}
#: Extensions whose content the importer applies (others in ``extensionsUsed`` are reported).
APPLIED_EXTENSIONS = {"KHR_mesh_quantization", "VRM", "VRMC_vrm", "VRMC_springBone"}


# ============================================================================= import results
@dataclass
class GltfAsset:
    """Everything :func:`load_gltf` reads.

    Attributes
    ----------
    avatar : Avatar
        Body, garments and skeleton (bones ordered parents-first).
    morph_targets : dict part -> dict target name -> (N, 3) float32 position deltas, metres
    morph_default_weights : dict part -> (M,) float64 rest weights (``node.weights``, else
        ``mesh.weights``, else 0), already applied to the part's ``mesh.vertices``
    attributes : dict part -> dict attribute name -> array
        Per-vertex data besides positions, UV0/UV1 (also in ``mesh.uvs``) and skinning:
        ``COLOR_n`` (N, 4) float, ``TEXCOORD_n`` for n >= 2, custom ``_NAME`` attributes, ``NORMAL``.
    animations : list of Animation
    capsules : CapsuleRig or None
        From our ``extras`` if present (exact), else from VRM springBone colliders.
    vrm : VrmData or None
    node_of_bone : (B,) int, glTF node of each bone
    part_nodes : dict part -> glTF node index
    ignored : list of str, mesh nodes that are neither body nor garment
    images : dict image name -> encoded bytes (PNG/JPEG) for images stored in buffers or data URIs
    notes : list of str, what was converted
    warnings : list of str, what the file holds that is read but not applied (or only partly)
    extras : dict, our exporter's extras block (empty for other files)
    """

    avatar: Avatar
    morph_targets: dict = field(default_factory=dict)
    morph_default_weights: dict = field(default_factory=dict)
    attributes: dict = field(default_factory=dict)
    animations: list = field(default_factory=list)
    capsules: object = None
    vrm: object = None
    node_of_bone: np.ndarray | None = None
    part_nodes: dict = field(default_factory=dict)
    ignored: list = field(default_factory=list)
    images: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    extras: dict = field(default_factory=dict)

    def animation(self, animation: int | str = 0) -> Animation:
        """One animation, by index or name."""
        if isinstance(animation, Animation):
            return animation
        if isinstance(animation, str):
            for a in self.animations:
                if a.name == animation:
                    return a
            raise KisekaeError(f"no animation {animation!r}; have {[a.name for a in self.animations]}", "animation")
        if isinstance(animation, bool) or not isinstance(animation, (int, np.integer)) \
                or not 0 <= animation < len(self.animations):
            raise KisekaeError(f"animation {animation!r} does not exist ({len(self.animations)} in file)", "animation")
        return self.animations[int(animation)]

    def poses(self, animation: int | str = 0) -> list:
        """The poses of one animation (sampled on import), by index or name."""
        return self.animation(animation).poses

    def morphed_vertices(self, part: str, weights) -> np.ndarray:
        """Bind-pose vertices of ``part`` with morph-target ``weights`` instead of its rest weights.

        Parameters
        ----------
        part : str, ``"body"`` or a garment name
        weights : (M,) float, one weight per morph target (in ``morph_targets[part]`` order)

        Returns
        -------
        (N, 3) float32, metres: ``mesh.vertices + sum_i (w_i - rest_i) * delta_i``
        """
        mesh = self.avatar.part(part).mesh
        targets = self.morph_targets.get(part, {})
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if len(w) != len(targets):
            raise KisekaeError(f"{len(w)} weights for {len(targets)} morph targets", f"part {part}")
        if not np.all(np.isfinite(w)):
            raise KisekaeError("morph weights must be finite", f"part {part}")
        v = mesh.vertices.astype(np.float64)
        for wi, ri, d in zip(w, self.morph_default_weights.get(part, []), targets.values()):
            if wi != ri:
                v = v + (wi - ri) * d
        return v.astype(np.float32)

    def posed_vertices(self, part: str, animation: int | str = 0, t: float = 0.0) -> np.ndarray:
        """Vertices of ``part`` at time ``t`` of an animation, as a glTF viewer shows them.

        Morph weights (animated or rest) are applied first, then skinning with the exact
        skinning matrices of :meth:`Animation.skinning_matrices` (so animated scale is applied,
        which a :class:`~kisekae.avatar.Pose` cannot carry).

        Parameters
        ----------
        part : str, ``"body"`` or a garment name
        animation : int or str, index or name in :attr:`animations`
        t : float, seconds (clamped per channel to its key range)

        Returns
        -------
        (N, 3) float32, metres, glTF frame
        """
        anim = self.animation(animation)
        sm = self.avatar.part(part)
        weights = anim.morph_weights_at(t)
        v = self.morphed_vertices(part, weights[part][0]) if part in weights else sm.mesh.vertices
        mats = anim.skinning_matrices(t)
        if len(mats) != 1:
            raise KisekaeError("posed_vertices takes one time", "t")
        return lbs(v, sm.skin.indices, sm.skin.weights, mats[0])


# ============================================================================= node graph
def node_hierarchy(doc: GltfDocument) -> tuple:
    """Parents and a parents-first order of all nodes; cycles and shared children are errors.

    Returns
    -------
    parents : (n,) int64, -1 for roots
    order : (n,) int64 preorder (every parent before its children)
    """
    nodes = doc.array("nodes")
    n = len(nodes)
    parents = np.full(n, -1, dtype=np.int64)
    children = []
    for i, node in enumerate(nodes):
        ch = get_list(node, "children", f"nodes[{i}]", doc.src, doc.limits)
        kids = []
        for k, c in enumerate(ch):
            c = index_into(c, n, "nodes", f"nodes[{i}].children[{k}]", doc.src)
            if c == i:
                raise KisekaeError(f"nodes[{i}] lists itself as a child (cycle in the node graph)", doc.src)
            if parents[c] >= 0:
                raise KisekaeError(f"nodes[{c}] has two parents (nodes[{parents[c]}] and nodes[{i}]); "
                                   "the node graph must be a forest", doc.src)
            parents[c] = i
            kids.append(c)
        children.append(kids)
    order, seen = [], np.zeros(n, bool)
    for r in np.nonzero(parents < 0)[0]:
        stack = [int(r)]
        while stack:
            j = stack.pop()
            seen[j] = True
            order.append(j)
            stack.extend(reversed(children[j]))
    if not seen.all():
        bad = int(np.nonzero(~seen)[0][0])
        raise KisekaeError(f"the node graph has a cycle through nodes[{bad}]", doc.src)
    return parents, np.asarray(order, dtype=np.int64)


def node_trs(doc: GltfDocument, i: int) -> tuple:
    """(translation, quaternion xyzw, scale, matrix or None) of node ``i``, checked."""
    node = doc.array("nodes")[i]
    w = f"nodes[{i}]"
    m = get_numbers(node, "matrix", 16, w, doc.src)
    if m is not None:
        mat = m.reshape(4, 4).T
        if not np.allclose(mat[3], [0, 0, 0, 1]):
            raise KisekaeError(f"{w}.matrix is not affine (last row {mat[3].tolist()})", doc.src)
        t, q, s = decompose_trs(mat)
        return t, q, s, mat
    t = get_numbers(node, "translation", 3, w, doc.src, default=[0.0, 0.0, 0.0])
    q = get_numbers(node, "rotation", 4, w, doc.src, default=[0.0, 0.0, 0.0, 1.0])
    s = get_numbers(node, "scale", 3, w, doc.src, default=[1.0, 1.0, 1.0])
    nq = np.linalg.norm(q)
    if abs(nq - 1.0) > 1e-3:
        raise KisekaeError(f"{w}.rotation is not a unit quaternion (norm {nq:.4g})", doc.src)
    return t, q / nq, s, None


# ============================================================================= meshes
def _primitive_arrays(doc: GltfDocument, mi: int, pi: int, prim: dict) -> dict | None:
    """Arrays of one triangle primitive (None for points/lines)."""
    w = f"meshes[{mi}].primitives[{pi}]"
    src = doc.src
    mode = get_int(prim, "mode", w, src, default=4, hi=7)
    if mode not in _TRI_MODES:
        return None
    attrs = get_dict(prim, "attributes", w, src)
    if "POSITION" not in attrs:
        raise KisekaeError(f"{w} has no POSITION attribute", src)
    pos = accessor_as(doc, attrs["POSITION"], f"{w}.attributes.POSITION", types=("VEC3",), int_ok=True)
    n = len(pos)
    out = {"POSITION": pos.astype(np.float64)}
    for key, acc in attrs.items():
        if key == "POSITION" or not isinstance(key, str):
            continue
        aw = f"{w}.attributes.{key}"
        if key.startswith("JOINTS_"):
            out[key] = accessor_as(doc, acc, aw, types=("VEC4",), float_ok=False, int_ok=True, count=n)
        elif key.startswith("WEIGHTS_"):
            out[key] = accessor_as(doc, acc, aw, types=("VEC4",), count=n)
        elif key == "NORMAL":
            out[key] = accessor_as(doc, acc, aw, types=("VEC3",), count=n)
        elif key.startswith("TEXCOORD_"):
            out[key] = accessor_as(doc, acc, aw, types=("VEC2",), int_ok=True, count=n).astype(np.float64)
        elif key.startswith("COLOR_"):
            c = accessor_as(doc, acc, aw, types=("VEC3", "VEC4"), count=n)
            if c.shape[1] == 3:
                c = np.concatenate([c, np.ones((n, 1))], axis=1)
            out[key] = c
        elif key.startswith("_"):
            a = accessor_as(doc, acc, aw, types=("SCALAR", "VEC2", "VEC3", "VEC4"), int_ok=True, count=n)
            out[key] = a
        # TANGENT and unknown attributes are not needed.
    if "indices" in prim:
        idx = accessor_as(doc, prim["indices"], f"{w}.indices", types=("SCALAR",), float_ok=False, int_ok=True)
        idx = idx.astype(np.int64)
        if idx.size and idx.max() >= n:
            raise KisekaeError(f"{w}.indices reach {idx.max()}, the primitive has {n} vertices", src)
    else:
        idx = np.arange(n, dtype=np.int64)
    if mode == 4:
        if len(idx) % 3:
            raise KisekaeError(f"{w}: {len(idx)} triangle indices is not a multiple of 3", src)
        faces = idx.reshape(-1, 3)
    elif mode == 5:
        k = np.arange(max(len(idx) - 2, 0))
        faces = np.stack([idx[k], idx[k + 1 + (k % 2)], idx[k + 2 - (k % 2)]], 1)
    else:
        k = np.arange(1, max(len(idx) - 1, 1))
        faces = np.stack([np.full(len(k), idx[0]), idx[k], idx[k + 1]], 1) if len(idx) >= 3 else np.zeros((0, 3), np.int64)
    out["faces"] = faces.reshape(-1, 3)
    targets = get_list(prim, "targets", w, src, doc.limits)
    deltas = []
    out["target_attributes"] = set()
    for ti, tg in enumerate(targets):
        tw = f"{w}.targets[{ti}]"
        if not isinstance(tg, dict):
            raise KisekaeError(f"{tw} must be an object", src)
        out["target_attributes"].update(str(key) for key in tg if key != "POSITION")
        if "POSITION" in tg:
            deltas.append(accessor_as(doc, tg["POSITION"], f"{tw}.POSITION", types=("VEC3",), int_ok=True, count=n))
        else:
            deltas.append(np.zeros((n, 3)))
    out["targets"] = deltas
    return out


def _read_mesh(doc: GltfDocument, mi: int) -> dict:
    """All triangle primitives of mesh ``mi`` merged into one vertex array."""
    mesh = doc.array("meshes")[mi]
    w = f"meshes[{mi}]"
    prims = [p for p in get_list(mesh, "primitives", w, doc.src, doc.limits)]
    parts, skipped = [], []
    for pi, prim in enumerate(prims):
        if not isinstance(prim, dict):
            raise KisekaeError(f"{w}.primitives[{pi}] must be an object", doc.src)
        arr = _primitive_arrays(doc, mi, pi, prim)
        if arr is not None:
            parts.append(arr)
        else:
            skipped.append(get_int(prim, "mode", w, doc.src, default=4))
    if not parts:
        return {"skipped_modes": sorted(set(skipped))}
    n_targets = {len(p["targets"]) for p in parts}
    if len(n_targets) > 1:
        raise KisekaeError(f"{w}: primitives have different numbers of morph targets {sorted(n_targets)}", doc.src)
    target_attributes = sorted(set().union(*(p.pop("target_attributes") for p in parts)))
    keys = set().union(*(p.keys() for p in parts)) - {"POSITION", "faces", "targets"}
    sizes = [len(p["POSITION"]) for p in parts]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    merged = {
        "POSITION": np.concatenate([p["POSITION"] for p in parts]),
        "faces": np.concatenate([p["faces"] + offsets[i] for i, p in enumerate(parts)]),
        "targets": [np.concatenate([p["targets"][k] for p in parts]) for k in range(n_targets.pop())],
        "primitive_offsets": offsets,
    }
    for key in sorted(keys):
        cols = max(p[key].shape[1] if p.get(key) is not None and p[key].ndim == 2 else 1 for p in parts if key in p)
        blocks = []
        for p in parts:
            a = p.get(key)
            if a is None:
                a = np.zeros((len(p["POSITION"]), cols) if cols > 1 or key.startswith(("JOINTS", "WEIGHTS")) else
                             (len(p["POSITION"]),))
            blocks.append(np.asarray(a, dtype=np.float64 if not key.startswith("JOINTS") else np.int64))
        try:
            merged[key] = np.concatenate(blocks)
        except ValueError:
            raise KisekaeError(f"{w}: primitives disagree on the shape of attribute {key}", doc.src) from None
    names = get_dict(mesh, "extras", w, doc.src).get("targetNames") if isinstance(mesh.get("extras"), dict) else None
    k = len(merged["targets"])
    if not (isinstance(names, list) and len(names) == k and all(isinstance(s, str) for s in names)):
        names = [f"target{i}" for i in range(k)]
    merged["target_names"] = names
    dw = get_numbers(mesh, "weights", k, w, doc.src) if k and "weights" in mesh else np.zeros(k)
    merged["default_weights"] = dw
    merged["extras"] = mesh.get("extras") if isinstance(mesh.get("extras"), dict) else {}
    merged["skipped_modes"] = sorted(set(skipped))
    merged["target_attributes"] = target_attributes
    return merged


def _skin_rows(merged: dict, joint_to_bone: np.ndarray, src, where: str) -> Skin:
    """Skin of a merged mesh from its JOINTS_n/WEIGHTS_n sets (4 influences per set)."""
    n = len(merged["POSITION"])
    sets = sorted(int(k.split("_")[1]) for k in merged if k.startswith("JOINTS_") and k.split("_")[1].isdigit())
    if not sets or any(f"WEIGHTS_{s}" not in merged for s in sets):
        raise KisekaeError(f"{where} is skinned but lacks matching JOINTS_n/WEIGHTS_n attributes", src)
    j = np.concatenate([merged[f"JOINTS_{s}"] for s in sets], axis=1).astype(np.int64)
    wts = np.concatenate([merged[f"WEIGHTS_{s}"] for s in sets], axis=1)
    if np.any(wts < 0):
        raise KisekaeError(f"{where} has negative skin weights", src)
    used = wts > 0
    if np.any(j[used] >= len(joint_to_bone)):
        raise KisekaeError(f"{where}: JOINTS reach {int(j[used].max())}, the skin has {len(joint_to_bone)} joints", src)
    s = wts.sum(axis=1)
    if np.any(s <= 0):
        raise KisekaeError(f"{where}: {int((s <= 0).sum())} of {n} vertices have no skin weight", src)
    bones = np.where(used, joint_to_bone[np.where(used, j, 0)], 0)
    return Skin(bones.astype(np.int32), (wts / s[:, None]).astype(np.float32))


# ============================================================================= main importer
def load_gltf(path, *, body: str | None = None, garments=None, mapping: dict | None = None,
              fps: float | None = None, vrm0_turn: bool = True, limits: Limits = DEFAULT_LIMITS) -> GltfAsset:
    """Import a .glb, .gltf or .vrm file.

    Parameters
    ----------
    path : str or PathLike
    body : str, optional
        Node or mesh name of the body. Default: our exporter's roles, else a part named "body"
        (any case), else the part with most vertices.
    garments : sequence of str, optional
        Node or mesh names of the garments. Default: every other mesh part.
    mapping : dict file name -> role, optional
        Explicit roles (``{"Body_mesh": "body", "Skirt.001": "skirt"}``), node or mesh names to
        ``"body"``, a garment name, or ``"ignore"``. Overrides ``body``/``garments`` for the
        names it lists.
    fps : float, optional
        Sample animations at this rate; default: at the union of their key times.
    vrm0_turn : bool, default True
        Turn VRM 0.x models (which face -Z) by 180 degrees about Y to face +Z.
    limits : Limits
        Size caps (see :class:`kisekae.io.gltf_read.Limits`).

    Returns
    -------
    GltfAsset

    Raises
    ------
    KisekaeError
        For every malformed, unsafe or unsupported input.
    """
    doc = load_document(path, limits)
    src = doc.src
    if fps is not None and (not np.isfinite(fps) or fps <= 0 or fps > 1000):
        raise KisekaeError(f"fps must be in (0, 1000], got {fps}", "fps")
    nodes = doc.array("nodes")
    meshes = doc.array("meshes")
    skins = doc.array("skins")
    parents, order = node_hierarchy(doc)
    n_nodes = len(nodes)
    notes, warnings = [], []
    ext = get_dict(doc.json, "extensions", "glTF", src)
    vrm = vrm_mod.read_vrm(ext, n_nodes, src)
    root = None
    if vrm is not None and vrm.version == "0" and vrm0_turn:
        root = np.diag([-1.0, 1.0, -1.0, 1.0])
        notes.append("VRM 0.x model turned 180 degrees about +Y to face +Z")

    trs_base, local = [], np.empty((n_nodes, 4, 4))
    for i in range(n_nodes):
        t, q, s, mat = node_trs(doc, i)
        trs_base.append((t, q, s))
        local[i] = mat if mat is not None else trs_matrix(t, q, s)
    world = node_world_matrices(parents, order, local, trs_base, {}, 1, root)[0]

    # --- scene nodes
    scenes = doc.array("scenes")
    in_scene = np.zeros(n_nodes, bool)
    if scenes:
        si = get_int(doc.json, "scene", "glTF", src, default=0, hi=len(scenes))
        for k, r in enumerate(get_list(scenes[si], "nodes", f"scenes[{si}]", src, limits)):
            r = index_into(r, n_nodes, "nodes", f"scenes[{si}].nodes[{k}]", src)
            in_scene[r] = True
    else:
        in_scene[parents < 0] = True
    for j in order:
        if parents[j] >= 0 and in_scene[parents[j]]:
            in_scene[j] = True
    mesh_nodes = []
    for j in order:
        if in_scene[j] and "mesh" in nodes[j]:
            index_into(nodes[j]["mesh"], len(meshes), "meshes", f"nodes[{j}].mesh", src)
            mesh_nodes.append(int(j))

    # --- skins and skeleton
    skin_data = []
    for si, sk in enumerate(skins):
        w = f"skins[{si}]"
        joints = get_list(sk, "joints", w, src, limits)
        if not joints:
            raise KisekaeError(f"{w}.joints is empty", src)
        joints = [index_into(j, n_nodes, "nodes", f"{w}.joints[{k}]", src) for k, j in enumerate(joints)]
        if len(set(joints)) != len(joints):
            raise KisekaeError(f"{w}.joints lists a node twice", src)
        if "inverseBindMatrices" in sk:
            ibm = accessor_as(doc, sk["inverseBindMatrices"], f"{w}.inverseBindMatrices", types=("MAT4",),
                              count=len(joints))
        else:
            ibm = np.tile(np.eye(4), (len(joints), 1, 1))
        if root is not None:
            ibm = ibm @ np.linalg.inv(root)
        skin_data.append((joints, ibm))
    used_skins = sorted({get_int(nodes[j], "skin", f"nodes[{j}]", src, hi=len(skins))
                         for j in mesh_nodes if "skin" in nodes[j]})
    skin_order = used_skins + [s for s in range(len(skins)) if s not in used_skins]
    rest_of = {}
    for s in skin_order:
        for j, m in zip(*skin_data[s]):
            if j not in rest_of:
                det = np.linalg.det(m[:3, :3])
                if not np.isfinite(det) or abs(det) < 1e-12:
                    raise KisekaeError(f"skins[{s}] has a singular inverse bind matrix for joint nodes[{j}]", src)
                rest_of[j] = np.linalg.inv(m)
    joint_nodes = _bone_order(rest_of, skin_order, skin_data, parents, order)

    # --- animation channels, read before the skeleton: unskinned meshes they move get bones
    anim_channels = [read_channels(doc, ai) for ai in range(len(doc.array("animations")))]
    moved = {c.node for _, chans, _ in anim_channels for c in chans if c.path != "weights"}
    bone_set = set(joint_nodes)
    node_bones, static_outside = [], False
    for j in mesh_nodes:
        if "skin" in nodes[j]:
            continue
        p, animated = j, False
        while p >= 0 and p not in bone_set:
            animated = animated or int(p) in moved
            p = parents[p]
        if animated:
            node_bones.append(j)
            bone_set.add(j)
        elif p < 0:
            static_outside = True
    # bones: skin joints, then a static 'root' (files without skins whose static meshes need one),
    # then one bone per animated unskinned mesh node; -1 marks the static bone
    bone_nodes = list(joint_nodes)
    if not joint_nodes and (static_outside or not node_bones):
        bone_nodes.append(-1)
        notes.append("no skin in the file: one 'root' bone added")
    bone_nodes += node_bones
    bone_of_node = {j: b for b, j in enumerate(bone_nodes) if j >= 0}
    names_used, bone_names, bparents = set(), [], []
    rest = np.empty((len(bone_nodes), 4, 4))
    fix = np.tile(np.eye(4), (len(bone_nodes), 1, 1))
    for b, j in enumerate(bone_nodes):
        if j < 0:
            nm, rest[b], p = "root", np.eye(4), -1
        else:
            nm = get_str(nodes[j], "name", f"nodes[{j}]", src)
            if j in rest_of:
                rest[b] = rest_of[j]
            else:  # a mesh node: its rigid world frame at rest (any scale stays in its vertices)
                nm = nm or get_str(meshes[nodes[j]["mesh"]], "name", f"meshes[{nodes[j]['mesh']}]", src)
                rest[b] = np.eye(4)
                rest[b, :3, :3] = polar_rotation(world[j, :3, :3])
                rest[b, :3, 3] = world[j, :3, 3]
                fix[b] = np.linalg.inv(world[j]) @ rest[b]
            nm = nm or f"node{j}"
            p = parents[j]
            while p >= 0 and p not in bone_of_node:
                p = parents[p]
        base, k = nm, 1
        while nm in names_used:
            nm, k = f"{base}.{k}", k + 1
        names_used.add(nm)
        bone_names.append(nm)
        bparents.append(bone_of_node[int(p)] if p >= 0 else -1)
    tails = _tails(rest, np.asarray(bparents))
    skeleton = Skeleton(bone_names, np.asarray(bparents, dtype=np.int32), rest.astype(np.float32), tails)
    static_bone = bone_nodes.index(-1) if -1 in bone_nodes else 0

    # bind-space correction per skin: A = rest_j @ IBM_j must be one matrix for all joints
    skin_fix = {}
    for s in used_skins:
        joints, ibm = skin_data[s]
        a = np.stack([rest_of[j] @ m for j, m in zip(joints, ibm)])
        if not np.allclose(a, a[0], atol=1e-4 * max(1.0, float(np.abs(a[0]).max()))):
            raise KisekaeError(f"skins[{s}] disagrees with another skin on the bind pose of its joints", src)
        skin_fix[s] = a[0]

    # --- parts
    parts, part_nodes, taken = {}, {}, set()
    outside = []
    for j in mesh_nodes:
        node = nodes[j]
        mi = node["mesh"]
        merged = _read_mesh(doc, mi)
        for mode in merged.get("skipped_modes", []):
            warnings.append(f"nodes[{j}]: {_MODE_NAMES.get(mode, mode)} primitives are not read (triangles only)")
        if merged.get("target_attributes"):
            warnings.append(f"nodes[{j}]: morph target {'/'.join(merged['target_attributes'])} deltas are not "
                            "applied (positions only)")
        if "faces" not in merged or len(merged["faces"]) == 0:
            notes.append(f"nodes[{j}]: mesh has no triangles, skipped")
            continue
        k_targets = len(merged["targets"])
        if k_targets and "weights" in node:
            merged["default_weights"] = get_numbers(node, "weights", k_targets, f"nodes[{j}]", src)
        nname = get_str(node, "name", f"nodes[{j}]", src)
        mname = get_str(meshes[mi], "name", f"meshes[{mi}]", src)
        pname = nname or mname or f"mesh{mi}"
        base, k = pname, 1
        while pname in taken or pname == "":
            pname, k = f"{base}.{k}", k + 1
        taken.add(pname)
        where = f"nodes[{j}] ({pname})"
        n = len(merged["POSITION"])
        if "skin" in node:
            s = int(node["skin"])
            joints = skin_data[s][0]
            skin = _skin_rows(merged, np.asarray([bone_of_node[x] for x in joints]), src, where)
            xf = skin_fix[s] if root is None else skin_fix[s] @ root  # bind-space vertices turn with the model
        else:
            p = j
            while p >= 0 and p not in bone_of_node:
                p = parents[p]
            if p >= 0:
                b = bone_of_node[int(p)]
                # where the mesh sits in the bone's frame in the scene, placed on the bone's bind pose
                xf = rest[b] @ np.linalg.inv(world[p] @ fix[b]) @ world[j]
            else:
                b, xf = static_bone, world[j]
                if joint_nodes:
                    outside.append((pname, bone_names[b]))
            skin = Skin(np.full((n, 1), b, np.int32), np.ones((n, 1), np.float32))
        parts[pname] = (merged, skin, xf, j, nname, mname)
        part_nodes[pname] = j
    if not parts:
        raise KisekaeError("the file has no triangle mesh in its scene", src)

    roles = _assign_roles(parts, doc, body, garments, mapping, src)
    asset = GltfAsset(avatar=None, node_of_bone=np.asarray(bone_nodes, dtype=np.int64), part_nodes=part_nodes,
                      notes=notes, warnings=warnings, vrm=vrm)
    extras = doc.json.get("extras") if isinstance(doc.json.get("extras"), dict) else {}
    ours = extras.get(EXTRAS_KEY) if isinstance(extras.get(EXTRAS_KEY), dict) else {}
    asset.extras = ours
    built = {}
    for pname, (merged, skin, xf, j, nname, mname) in parts.items():
        role = roles.get(pname)
        if role is None or role == "ignore":
            asset.ignored.append(pname)
            continue
        v = merged["POSITION"]
        for wt, d in zip(merged["default_weights"], merged["targets"]):  # the shape at rest (glTF: base + sum w d)
            if wt != 0:
                v = v + wt * d
        v = v @ xf[:3, :3].T + xf[:3, 3]
        if not np.all(np.isfinite(v)):
            raise KisekaeError(f"nodes[{j}] ({pname}) has non-finite vertex positions after its transform", src)
        faces = merged["faces"]
        quads = _quads_from_extras(merged["extras"], faces)
        uvs = {}
        for k in (0, 1):
            if f"TEXCOORD_{k}" in merged:
                uvs[f"uv{k}"] = merged[f"TEXCOORD_{k}"].astype(np.float32)
        mesh = Mesh(v.astype(np.float32), faces.astype(np.int32), quads, uvs, name=role)
        built[role] = SkinnedMesh(mesh, skin)
        lin = xf[:3, :3]
        targets = {nm: (d @ lin.T).astype(np.float32) for nm, d in zip(merged["target_names"], merged["targets"])}
        if targets:
            asset.morph_targets[role] = targets
            asset.morph_default_weights[role] = np.asarray(merged["default_weights"], np.float64)
        extra_attr = {}
        for key, a in merged.items():
            if key.startswith(("COLOR_", "_")) or key == "NORMAL" or (key.startswith("TEXCOORD_") and key not in
                                                                     ("TEXCOORD_0", "TEXCOORD_1")):
                if key == "NORMAL":
                    nrm = a @ np.linalg.inv(lin)
                    ln = np.linalg.norm(nrm, axis=1, keepdims=True)
                    a = np.divide(nrm, ln, out=np.zeros_like(nrm), where=ln > 0)
                extra_attr[key] = a
        if extra_attr:
            asset.attributes[role] = extra_attr
    if "body" not in built:
        raise KisekaeError("no body mesh: name one with body=/mapping (parts: "
                           f"{', '.join(parts)})", src)
    body_part = built.pop("body")
    rig_name = ours.get("rig", "") if isinstance(ours.get("rig", ""), str) else ""
    name = ours.get("name") if isinstance(ours.get("name"), str) else Path(src).stem
    asset.avatar = Avatar(skeleton, body_part, built, name=name, rig=rig_name)
    asset.part_nodes = {roles[p]: n for p, n in part_nodes.items() if roles.get(p) not in (None, "ignore")}
    for pname, bname in outside:
        if roles.get(pname) not in (None, "ignore"):
            warnings.append(f"{pname}: unskinned mesh outside the skeleton, bound rigidly to bone {bname!r} "
                            "(it moves with that bone; in the file it stays still)")

    # --- animations
    rig = NodeRig(parents, order, local, trs_base, root, skeleton, np.asarray(bone_nodes, dtype=np.int64), fix,
                  dict(asset.part_nodes), {r: len(t) for r, t in asset.morph_targets.items()},
                  dict(asset.morph_default_weights))
    _read_animations(asset, rig, anim_channels, doc, fps, warnings)
    _warn_unapplied(asset, doc, parents, in_scene, warnings)

    # --- capsules: ours (exact, tapered) first, else VRM colliders
    if "capsules" in ours:
        where = f"{src}: extras.{EXTRAS_KEY}.capsules"
        try:
            rig = CapsuleRig.from_json_dict(ours["capsules"], source=where)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            if isinstance(exc, KisekaeError):
                raise
            raise KisekaeError(f"malformed capsule rig ({type(exc).__name__}: {str(exc)[:80]})", where) from None
        asset.capsules = rig.remap(skeleton.names) if rig.bone_names else rig
    elif vrm is not None and vrm.colliders:
        asset.capsules = vrm_mod.colliders_to_rig(vrm, bone_of_node, world, skeleton, src, parents)
    asset.images = _images(doc)
    return asset


def _read_animations(asset: GltfAsset, rig: NodeRig, anim_channels, doc: GltfDocument, fps, warnings: list):
    """Build :class:`Animation` objects (poses sampled at key times or ``fps``) into ``asset``."""
    src = doc.src
    for ai, (aname, chans, skipped) in enumerate(anim_channels):
        w = f"animations[{ai}]"
        if skipped:
            warnings.append(f"animation {aname!r}: {skipped} channel(s) without a node target (e.g. "
                            "KHR_animation_pointer) are not applied")
        for c in chans:
            part = next((p for p, n in rig.part_nodes.items() if n == c.node), None)
            if c.path == "weights" and part is not None and c.values.shape[1] != rig.morph_counts.get(part, 0):
                raise KisekaeError(f"{w}: the weights channel of nodes[{c.node}] has {c.values.shape[1]} values per "
                                   f"key, its mesh has {rig.morph_counts.get(part, 0)} morph targets", src)
        if not chans:
            continue
        if fps:
            t_end = max(float(c.times[-1]) for c in chans)
            n = int(np.floor(t_end * fps + 1e-9)) + 1
            if n > doc.limits.max_frames:
                raise KisekaeError(f"{w} lasts {t_end:.3g} s: {n} frames at {fps} fps is more than the cap "
                                   f"{doc.limits.max_frames}", src)
            times = np.arange(n) / float(fps)
        else:
            total = sum(len(c.times) for c in chans)
            if total > 50 * doc.limits.max_frames:
                raise KisekaeError(f"{w} has {total} keys, too many to merge", src)
            times = np.unique(np.concatenate([c.times for c in chans]))
            if len(times) > doc.limits.max_frames:
                raise KisekaeError(f"{w} has {len(times)} distinct key times, more than the cap "
                                   f"{doc.limits.max_frames}; pass fps to resample", src)
        anim = Animation(aname, times, [], channels=chans, rig=rig)
        jw = rig.joint_world(rig.world(chans, times))
        anim.poses, anim.dropped_translation_m, anim.dropped_scale = poses_from_world(rig.skeleton, jw, aname)
        weighted = {c.node for c in chans if c.path == "weights"}
        anim.morph_weights = {p: wts for p, wts in anim.morph_weights_at(times).items()
                              if rig.part_nodes.get(p) in weighted}
        asset.animations.append(anim)
        if anim.dropped_scale > 1e-4:
            warnings.append(f"animation {aname!r}: animated scale (up to {anim.dropped_scale:.4g} from 1) is not in "
                            "its poses (a Pose has no scale); GltfAsset.posed_vertices and "
                            "Animation.skinning_matrices apply it")
        if anim.dropped_translation_m > 1e-4:
            warnings.append(f"animation {aname!r}: joints off by up to {anim.dropped_translation_m:.4g} m in its poses")
        if anim.morph_weights:
            warnings.append(f"animation {aname!r} animates morph weights of {', '.join(sorted(anim.morph_weights))}: "
                            "applied by GltfAsset.posed_vertices, not by commands that take poses")


def _warn_unapplied(asset: GltfAsset, doc: GltfDocument, parents: np.ndarray, in_scene: np.ndarray,
                    warnings: list) -> None:
    """Add warnings for data the file holds that the import does not apply."""
    nodes = doc.array("nodes")
    if asset.animations:
        # nodes whose motion reaches a bone or an imported part: ancestors-or-self of them
        followed = set()
        for j in [int(n) for n in asset.node_of_bone if n >= 0] + list(asset.part_nodes.values()):
            while j >= 0 and j not in followed:
                followed.add(j)
                j = int(parents[j])
        morphed = {asset.part_nodes[p] for p in asset.morph_targets if p in asset.part_nodes}
        for a in asset.animations:
            idle = sorted({c.node for c in a.channels
                           if (c.node not in morphed if c.path == "weights" else c.node not in followed)})
            if idle:
                shown = ", ".join(f"nodes[{j}]" for j in idle[:8]) + (" ..." if len(idle) > 8 else "")
                warnings.append(f"animation {a.name!r}: channels on {shown} move nothing that was imported "
                                "(no bone or imported mesh follows them)")
    outside = [i for i, nd in enumerate(nodes) if "mesh" in nd and not in_scene[i]]
    if outside:
        warnings.append(f"{len(outside)} mesh node(s) outside the default scene are not imported")
    used = get_list(doc.json, "extensionsUsed", "glTF", doc.src, doc.limits)
    unapplied = sorted({str(e) for e in used} - APPLIED_EXTENSIONS)
    if unapplied:
        warnings.append(f"extensions not applied: {', '.join(unapplied)}")


def _bone_order(rest_of: dict, skin_order, skin_data, parents, order) -> list:
    """Joint nodes in the skins' own order when that lists parents first, else in node preorder."""
    listed = []
    for s in skin_order:
        listed.extend(j for j in skin_data[s][0] if j not in listed)
    pos = {j: i for i, j in enumerate(listed)}
    for j in listed:
        p = parents[j]
        while p >= 0 and int(p) not in pos:
            p = parents[p]
        if p >= 0 and pos[int(p)] > pos[j]:
            return [int(j) for j in order if int(j) in rest_of]
    return [int(j) for j in listed]


def _tails(rest: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Tail positions: the mean head of a bone's children, else the head plus half the parent's length
    along the bone's own +Y axis (10 cm for lone roots)."""
    heads = rest[:, :3, 3]
    tails = np.empty_like(heads)
    for i in range(len(heads)):
        kids = np.nonzero(parents == i)[0]
        if len(kids):
            tails[i] = heads[kids].mean(axis=0)
            if np.linalg.norm(tails[i] - heads[i]) > 1e-6:
                continue
        p = parents[i]
        length = 0.5 * np.linalg.norm(heads[i] - heads[p]) if p >= 0 else 0.1
        axis = rest[i, :3, 1]
        ln = np.linalg.norm(axis)
        tails[i] = heads[i] + (axis / ln if ln > 0 else np.array([0.0, 1.0, 0.0])) * max(length, 1e-3)
    return tails


def _quads_from_extras(extras: dict, faces: np.ndarray):
    """Quads recorded by our exporter: the first ``quadCount`` triangle pairs are (a,b,c),(a,c,d)."""
    info = extras.get(EXTRAS_KEY) if isinstance(extras, dict) else None
    if not isinstance(info, dict) or "quadCount" not in info:
        return None
    q = info["quadCount"]
    if isinstance(q, bool) or not isinstance(q, int) or q < 0 or 2 * q > len(faces):
        return None
    t0, t1 = faces[0:2 * q:2], faces[1:2 * q:2]
    if not (np.array_equal(t0[:, 0], t1[:, 0]) and np.array_equal(t0[:, 2], t1[:, 1])):
        return None
    return np.stack([t0[:, 0], t0[:, 1], t0[:, 2], t1[:, 2]], axis=1).astype(np.int32)


def _assign_roles(parts: dict, doc: GltfDocument, body, garments, mapping, src) -> dict:
    """Part name -> role ("body", a garment name, or "ignore")."""
    def names_of(p):
        _, _, _, _, nname, mname = parts[p]
        return {p, nname, mname} - {None}

    roles = {}
    if mapping is not None:
        if not isinstance(mapping, dict):
            raise KisekaeError("mapping must be a dict of name -> role", "mapping")
        for key, role in mapping.items():
            hits = [p for p in parts if key in names_of(p)]
            if not hits:
                raise KisekaeError(f"no mesh or node named {key!r} (parts: {', '.join(parts)})", "mapping")
            for p in hits:
                roles[p] = str(role)
    if body is not None:
        hits = [p for p in parts if body in names_of(p)]
        if not hits:
            raise KisekaeError(f"no mesh or node named {body!r} (parts: {', '.join(parts)})", "body")
        roles.setdefault(hits[0], "body")
    if "body" not in roles.values():
        ours = {}
        for p, (merged, *_rest) in parts.items():
            info = merged["extras"].get(EXTRAS_KEY) if isinstance(merged["extras"], dict) else None
            if isinstance(info, dict) and isinstance(info.get("role"), str):
                ours[p] = info["role"]
        body_like = [p for p, r in ours.items() if r == "body"]
        if not body_like:
            body_like = [p for p in parts if any(n.lower() == "body" for n in names_of(p))]
        if not body_like:
            body_like = [max(parts, key=lambda p: len(parts[p][0]["POSITION"]))]
        roles.setdefault(body_like[0], "body")
    if garments is not None:
        for g in garments:
            hits = [p for p in parts if g in names_of(p)]
            if not hits:
                raise KisekaeError(f"no mesh or node named {g!r} (parts: {', '.join(parts)})", "garments")
            for p in hits:
                roles.setdefault(p, g)
    else:
        for p in parts:
            roles.setdefault(p, p)
    used = [r for r in roles.values() if r != "ignore"]
    dup = sorted({r for r in used if used.count(r) > 1})
    if dup:
        raise KisekaeError(f"several meshes map to the same role {dup}", "mapping")
    return roles


def _images(doc: GltfDocument) -> dict:
    """Encoded images held in bufferViews (GLB) or data URIs, by name."""
    out = {}
    for i, im in enumerate(doc.array("images")):
        name = im.get("name") if isinstance(im.get("name"), str) else f"image{i}"
        if "bufferView" in im:
            from .gltf_read import _view_slice

            mem, _ = _view_slice(doc, im["bufferView"], f"images[{i}]")
            out[name] = bytes(mem)
        elif isinstance(im.get("uri"), str) and im["uri"].startswith("data:"):
            from .gltf_read import decode_data_uri

            out[name] = decode_data_uri(im["uri"], doc.src, f"images[{i}]", doc.limits.max_data_uri_bytes)
    return out


def load_avatar(path, *, garments=None, mapping=None, body=None) -> Avatar:
    """The avatar of a .glb/.gltf/.vrm file (see :func:`load_gltf`).

    A VRM file's humanoid mapping is kept on ``avatar.skeleton.humanoid`` (VRM bone name -> bone
    index), so named poses (``kisekae.avatar.poses``) work on any VRM avatar.
    """
    asset = load_gltf(path, garments=garments, mapping=mapping, body=body)
    if asset.vrm is not None and asset.node_of_bone is not None:
        bone_of_node = {int(n): b for b, n in enumerate(asset.node_of_bone)}
        asset.avatar.skeleton.humanoid = vrm_mod.humanoid_bones(asset.vrm, bone_of_node)
    return asset.avatar


# ============================================================================= description
def describe(path, limits: Limits = DEFAULT_LIMITS) -> str:
    """A multi-line summary: meshes, skins, animations, VRM data, garments (``kisekae info``).

    Ends with ``note:`` lines (what was converted) and ``warning:`` lines (what the file holds
    that is read but not applied, :attr:`GltfAsset.warnings`).
    """
    doc = load_document(path, limits)
    j = doc.json
    lines = [f"{path}: glTF {j['asset'].get('version')} ({'GLB' if doc.is_glb else 'JSON'}), generator "
             f"{j['asset'].get('generator', '?')!s:.60}, {sum(len(b) for b in doc.buffers)} buffer bytes"]
    for mi, m in enumerate(doc.array("meshes")):
        prims = m.get("primitives", []) if isinstance(m.get("primitives"), list) else []
        nt = max((len(p.get("targets", [])) for p in prims if isinstance(p, dict)), default=0)
        lines.append(f"  mesh {mi} {m.get('name', '')!s:.40}: {len(prims)} primitives, {nt} morph targets")
    for si, s in enumerate(doc.array("skins")):
        lines.append(f"  skin {si} {s.get('name', '')!s:.40}: {len(s.get('joints', []))} joints")
    for ai, a in enumerate(doc.array("animations")):
        lines.append(f"  animation {ai} {a.get('name', '')!s:.40}: {len(a.get('channels', []))} channels")
    asset = load_gltf(path, limits=limits)
    av = asset.avatar
    lines.append(f"  avatar: {av.skeleton.n_bones} bones, body {av.body.mesh.n_vertices} vertices")
    for g, sm in av.garments.items():
        lines.append(f"  garment {g}: {sm.mesh.n_vertices} vertices, {sm.skin.indices.shape[1]} influences")
    if asset.ignored:
        lines.append(f"  ignored meshes: {', '.join(asset.ignored)}")
    for a in asset.animations:
        moved = sorted({asset.avatar.skeleton.names[b] for b, n in enumerate(asset.node_of_bone)
                        if n >= 0 and any(c.node == n for c in a.channels)})
        what = f", moves {len(moved)} bone(s)" if moved else ""
        what += f", morphs {', '.join(sorted(a.morph_weights))}" if a.morph_weights else ""
        lines.append(f"  animation {a.name!r}: {len(a.poses)} frames over {a.start:.3f}..{a.end:.3f} s, "
                     f"{len(a.channels)} node channels{what}")
    if asset.vrm is not None:
        lines.append(f"  VRM {asset.vrm.version}: {len(asset.vrm.humanoid)} humanoid bones, "
                     f"{len(asset.vrm.colliders)} springBone colliders")
    if asset.capsules is not None:
        lines.append(f"  capsule rig: {len(asset.capsules)} capsules")
    for n in asset.notes:
        lines.append(f"  note: {n}")
    for w in asset.warnings:
        lines.append(f"  warning: {w}")
    return "\n".join(lines)


# ============================================================================= export
@dataclass
class ExportPart:
    """One skinned mesh to write.

    Parameters
    ----------
    name : str
        Node and mesh name; also the role on re-import (``"body"`` or a garment name).
    vertices : (N, 3) float, metres, bind pose
    faces : (F, 3) int triangles
    joints, weights : (N, K) bone indices and weights (K <= 8; padded to 4 or 8)
    quads : (Q, 4) int, optional; when given the first ``2Q`` faces must be their triangulation
        (``(a,b,c), (a,c,d)``), recorded in the mesh extras so that import restores the quads
    normals : (N, 3), optional (computed when absent)
    uvs : dict ``"uv0"``/``"uv1"``/... -> (N, 2), written as TEXCOORD_n
    colors : list of (N, 3|4) float in [0, 1], written as COLOR_0, COLOR_1, ...
    attributes : dict ``"_NAME"`` -> (N,) or (N, 2..4) float, custom attributes
    morph_targets : dict name -> (N, 3) position deltas, metres
    material : int, optional index into the ``materials`` passed to :func:`save_gltf`
    """

    name: str
    vertices: np.ndarray
    faces: np.ndarray
    joints: np.ndarray
    weights: np.ndarray
    quads: np.ndarray | None = None
    normals: np.ndarray | None = None
    uvs: dict = field(default_factory=dict)
    colors: list = field(default_factory=list)
    attributes: dict = field(default_factory=dict)
    morph_targets: dict = field(default_factory=dict)
    material: int | None = None


class _Blob:
    """Binary buffer builder: bufferViews and accessors on one GLB chunk."""

    def __init__(self):
        self.data = io.BytesIO()
        self.views, self.accessors = [], []

    def view(self, raw: bytes, target=None) -> int:
        pad = -self.data.tell() % 4
        self.data.write(b"\0" * pad)
        v = {"buffer": 0, "byteOffset": self.data.tell(), "byteLength": len(raw)}
        if target:
            v["target"] = target
        self.data.write(raw)
        self.views.append(v)
        return len(self.views) - 1

    def accessor(self, a: np.ndarray, ctype: int, atype: str, *, target=None, minmax=False, normalized=False) -> int:
        dt = {5121: "<u1", 5123: "<u2", 5125: "<u4", 5126: "<f4"}[ctype]
        arr = np.ascontiguousarray(a, dtype=dt)
        n = len(arr)
        acc = {"bufferView": self.view(arr.tobytes(), target), "componentType": ctype, "count": n, "type": atype}
        if normalized:
            acc["normalized"] = True
        if minmax:
            flat = arr.reshape(n, -1)
            acc["min"] = [float(x) if ctype == 5126 else int(x) for x in flat.min(axis=0)]
            acc["max"] = [float(x) if ctype == 5126 else int(x) for x in flat.max(axis=0)]
        self.accessors.append(acc)
        return len(self.accessors) - 1


def _unit_normals(n: np.ndarray) -> np.ndarray:
    n = np.asarray(n, dtype=np.float64)
    ln = np.linalg.norm(n, axis=1, keepdims=True)
    out = np.divide(n, ln, out=np.tile([0.0, 1.0, 0.0], (len(n), 1)), where=ln > 1e-12)
    return out


def _png_bytes(image) -> tuple:
    """(bytes, mimeType) of an image given as encoded PNG/JPEG bytes or an (H, W[, C]) uint8/float array."""
    if isinstance(image, (bytes, bytearray)):
        raw = bytes(image)
        if raw[:8] == b"\x89PNG\r\n\x1a\n":
            return raw, "image/png"
        if raw[:3] == b"\xff\xd8\xff":
            return raw, "image/jpeg"
        raise KisekaeError("texture bytes are neither PNG nor JPEG", "textures")
    from PIL import Image

    a = np.asarray(image)
    if a.dtype != np.uint8:
        a = np.clip(np.round(np.asarray(a, dtype=np.float64) * 255.0), 0, 255).astype(np.uint8)
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (1, 2, 3, 4)):
        raise KisekaeError(f"texture array must be (H, W) or (H, W, 1..4), got {a.shape}", "textures")
    buf = io.BytesIO()
    Image.fromarray(a.squeeze(-1) if a.ndim == 3 and a.shape[2] == 1 else a).save(buf, format="PNG")
    return buf.getvalue(), "image/png"


def save_gltf(path, names, parents, rest, parts, *, animations=None, capsules=None, textures=None,
              materials=None, humanoid=None, extras=None, vrm_colliders: bool = True) -> dict:
    """Write skinned meshes, a skeleton and animations as GLB (``.glb``/``.vrm``) or glTF JSON (``.gltf``).

    Parameters
    ----------
    path : str or PathLike
        ``.gltf`` writes JSON with the buffer embedded as a data URI; anything else writes GLB.
    names : list of B str
    parents : (B,) int, parents before children
    rest : (B, 4, 4) bone-to-world rest matrices, metres. Inverse bind matrices are ``inv(rest)``;
        joint nodes are placed at these rest transforms (any scale is dropped).
    parts : list of ExportPart
    animations : list of (name, times (T,), rotations (T, B, 3, 3), translations (T, 3)[, offsets (T, B, 3)])
        Bone-local rotations, root translations and bone offsets (metres) as in
        :class:`~kisekae.avatar.Pose`; written as LINEAR rotation channels for every bone and
        translation channels for the roots and for bones with a non-zero offset.
    capsules : CapsuleRig, optional
        Written to ``extras.kisekae.capsules`` (exact) and, with ``vrm_colliders``, as
        ``VRMC_springBone`` capsule colliders (one radius: ``max(r0, r1)``).
    textures : dict name -> image (PNG/JPEG bytes or (H, W, C) array), optional
    materials : list of dict, optional
        glTF material objects; a texture slot may name a texture by string, e.g.
        ``{"name": "wound", "pbrMetallicRoughness": {"baseColorTexture": {"index": "wound_mask",
        "texCoord": 1}}}``. Textures not used by any material are listed in the root extras.
    humanoid : dict VRM humanoid bone name -> bone index, optional
        Writes a ``VRMC_vrm`` humanoid block (VRM 1.0).
    extras : dict, optional
        Merged into ``extras.kisekae``.

    Returns
    -------
    dict summary: ``bytes``, ``nodes``, ``meshes``, ``accessors``, ``animations``.
    """
    import pygltflib

    path = Path(path)
    names = [str(n) for n in names]
    parents = np.asarray(parents, dtype=np.int64)
    rest = np.asarray(rest, dtype=np.float64)
    b = len(names)
    if parents.shape != (b,) or rest.shape != (b, 4, 4):
        raise KisekaeError(f"{b} names but parents {parents.shape} and rest {rest.shape}", "skeleton")
    if any(p >= i or p < -1 for i, p in enumerate(parents)):
        raise KisekaeError("parents must come before children", "skeleton")
    if not np.all(np.isfinite(rest)):
        raise KisekaeError("non-finite rest matrix", "skeleton")
    blob = _Blob()
    # --- joints: node i = bone i
    nodes = []
    rest_rot = np.stack([polar_rotation(r[:3, :3]) for r in rest])
    local_r, local_t = np.empty((b, 3, 3)), np.empty((b, 3))
    for i, p in enumerate(parents):
        if p >= 0:
            local_r[i] = rest_rot[p].T @ rest_rot[i]
            local_t[i] = rest_rot[p].T @ (rest[i, :3, 3] - rest[p, :3, 3])
        else:
            local_r[i], local_t[i] = rest_rot[i], rest[i, :3, 3]
        nodes.append({"name": names[i], "translation": [float(x) for x in local_t[i]],
                      "rotation": [float(x) for x in matrix_quaternion(local_r[i])]})
    for i, p in enumerate(parents):
        if p >= 0:
            nodes[p].setdefault("children", []).append(i)
    world_rest = np.tile(np.eye(4), (b, 1, 1))
    world_rest[:, :3, :3], world_rest[:, :3, 3] = rest_rot, rest[:, :3, 3]
    ibm = np.linalg.inv(world_rest)
    ibm[:, 3] = [0, 0, 0, 1]
    ibm_acc = blob.accessor(ibm.transpose(0, 2, 1).reshape(b, 16), 5126, "MAT4")
    roots = [int(i) for i in np.nonzero(parents < 0)[0]]
    skin = {"joints": list(range(b)), "inverseBindMatrices": ibm_acc, "skeleton": roots[0], "name": "skeleton"}

    # --- textures, materials
    tex_names, images, textures_j = {}, [], []
    for tname, image in (textures or {}).items():
        raw, mime = _png_bytes(image)
        images.append({"name": str(tname), "bufferView": blob.view(raw), "mimeType": mime})
        textures_j.append({"source": len(images) - 1, "sampler": 0, "name": str(tname)})
        tex_names[str(tname)] = len(textures_j) - 1
    mats = json.loads(json.dumps(materials or []))
    used_tex = set()

    def _link(obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k == "index" and isinstance(v, str):
                    if v not in tex_names:
                        raise KisekaeError(f"material refers to unknown texture {v!r}", "materials")
                    obj[k] = tex_names[v]
                    used_tex.add(v)
                else:
                    _link(v)
        elif isinstance(obj, list):
            for v in obj:
                _link(v)

    _link(mats)
    # --- meshes
    meshes, mesh_nodes = [], []
    for part in parts:
        meshes.append(_export_mesh(blob, part, b, len(mats)))
        mesh_nodes.append({"name": part.name, "mesh": len(meshes) - 1, "skin": 0})
    node_base = len(nodes)
    nodes.extend(mesh_nodes)
    scene_nodes = roots + list(range(node_base, len(nodes)))

    # --- animations
    anims = []
    for anim in animations or []:
        if len(anim) not in (4, 5):
            raise KisekaeError("an animation is (name, times, rotations, translations[, offsets])", "animations")
        aname, times, rots, trans = anim[:4]
        times = np.asarray(times, dtype=np.float64)
        rots = np.asarray(rots, dtype=np.float64)
        trans = np.asarray(trans, dtype=np.float64)
        t_count = len(times)
        offsets = np.zeros((t_count, b, 3)) if len(anim) == 4 or anim[4] is None else np.asarray(anim[4], np.float64)
        if times.ndim != 1 or t_count == 0 or np.any(np.diff(times) <= 0) or times[0] < 0:
            raise KisekaeError("animation times must be a non-empty, strictly increasing array of seconds >= 0",
                               f"animation {aname}")
        if rots.shape != (t_count, b, 3, 3) or trans.shape != (t_count, 3) or offsets.shape != (t_count, b, 3):
            raise KisekaeError(f"expected rotations ({t_count}, {b}, 3, 3), translations ({t_count}, 3) and offsets "
                               f"({t_count}, {b}, 3), got {rots.shape}, {trans.shape} and {offsets.shape}",
                               f"animation {aname}")
        if not (np.all(np.isfinite(rots)) and np.all(np.isfinite(trans)) and np.all(np.isfinite(offsets))):
            raise KisekaeError("non-finite rotation, translation or offset", f"animation {aname}")
        t_acc = blob.accessor(times, 5126, "SCALAR", minmax=True)
        samplers, channels = [], []
        for i in range(b):
            q = np.stack([matrix_quaternion(local_r[i] @ polar_rotation(r)) for r in rots[:, i]])
            # keep consecutive keys on the same hemisphere so LINEAR slerp takes the short way
            for k in range(1, t_count):
                if np.dot(q[k], q[k - 1]) < 0:
                    q[k] = -q[k]
            samplers.append({"input": t_acc, "output": blob.accessor(q, 5126, "VEC4"), "interpolation": "LINEAR"})
            channels.append({"sampler": len(samplers) - 1, "target": {"node": i, "path": "rotation"}})
        for i in range(b):
            if parents[i] >= 0 and not np.any(offsets[:, i]):
                continue  # a child bone that keeps its rest offset
            tr = local_t[i][None, :] + offsets[:, i] + (trans if parents[i] < 0 else 0.0)
            samplers.append({"input": t_acc, "output": blob.accessor(tr, 5126, "VEC3"), "interpolation": "LINEAR"})
            channels.append({"sampler": len(samplers) - 1, "target": {"node": i, "path": "translation"}})
        anims.append({"name": str(aname), "samplers": samplers, "channels": channels})

    ours = {"exporter": "kisekae", "units": "metres"}
    ours.update(extras or {})
    if capsules is not None:
        rig = capsules if not capsules.bone_names else capsules.remap(names)
        ours["capsules"] = rig.to_json_dict()
        if not rig.bone_names:
            ours["capsules"]["bones"] = names
    unused = sorted(set(tex_names) - used_tex)
    if unused:
        ours["textures"] = {t: tex_names[t] for t in unused}
    doc = {
        "asset": {"version": "2.0", "generator": "kisekae"},
        "scene": 0,
        "scenes": [{"nodes": scene_nodes}],
        "nodes": nodes,
        "meshes": meshes,
        "skins": [skin],
        "extras": {EXTRAS_KEY: ours},
    }
    if anims:
        doc["animations"] = anims
    if mats:
        doc["materials"] = mats
    if images:
        doc["images"], doc["textures"] = images, textures_j
        doc["samplers"] = [{"magFilter": 9729, "minFilter": 9987, "wrapS": 10497, "wrapT": 10497}]
    extensions = {}
    if capsules is not None and vrm_colliders and len(capsules):
        extensions["VRMC_springBone"] = vrm_mod.springbone_extension(rig)
    if humanoid:
        extensions["VRMC_vrm"] = vrm_mod.vrm1_extension(humanoid, b, ours.get("name", path.stem))
    if extensions:
        doc["extensions"] = extensions
        doc["extensionsUsed"] = sorted(extensions)
    raw = blob.data.getvalue()
    raw += b"\0" * (-len(raw) % 4)
    doc["buffers"] = [{"byteLength": len(raw)}]
    doc["bufferViews"], doc["accessors"] = blob.views, blob.accessors
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = pygltflib.GLTF2.from_dict(doc)
    if path.suffix.lower() == ".gltf":
        import base64

        g.buffers[0].uri = "data:application/octet-stream;base64," + base64.b64encode(raw).decode("ascii")
        out = g.gltf_to_json().encode("utf-8")
    else:
        g.set_binary_blob(raw)
        out = b"".join(g.save_to_bytes())
    path.write_bytes(out)
    return {"bytes": len(out), "nodes": len(nodes), "meshes": len(meshes), "accessors": len(blob.accessors),
            "animations": len(anims)}


def _export_mesh(blob: _Blob, part: ExportPart, n_bones: int, n_materials: int) -> dict:
    from ..validate import as_faces, as_per_vertex, as_points

    src = f"part {part.name}"
    v = as_points(part.vertices, f"{src}.vertices")
    n = len(v)
    f = as_faces(part.faces, n, f"{src}.faces")
    j = np.asarray(part.joints)
    w = as_per_vertex(part.weights, n, f"{src}.weights")
    if j.shape != w.shape or j.ndim != 2 or j.shape[1] > 8:
        raise KisekaeError(f"joints {j.shape} and weights {w.shape} must both be (N, K<=8)", src)
    if w.size and (np.any(w < 0) or np.any(w.sum(axis=1) <= 0)):
        raise KisekaeError("weights must be >= 0 with a positive sum per vertex", src)
    if j.size and (j.min() < 0 or j.max() >= n_bones):
        raise KisekaeError(f"joint index out of range 0..{n_bones - 1}", src)
    k = 4 if j.shape[1] <= 4 else 8
    jj = np.zeros((n, k), np.int64)
    ww = np.zeros((n, k))
    # order by weight, merge duplicates, zero unused slots (validator rules)
    dense_j, dense_w = j.astype(np.int64), w / w.sum(axis=1, keepdims=True)
    o = np.argsort(-dense_w, axis=1, kind="stable")
    dense_j, dense_w = np.take_along_axis(dense_j, o, 1), np.take_along_axis(dense_w, o, 1)
    for c in range(dense_j.shape[1]):
        for d in range(c):
            same = (dense_j[:, c] == dense_j[:, d]) & (dense_w[:, c] > 0)
            dense_w[same, d] += dense_w[same, c]
            dense_w[same, c] = 0
    jj[:, : dense_j.shape[1]] = np.where(dense_w > 0, dense_j, 0)
    ww[:, : dense_w.shape[1]] = dense_w
    ww32 = ww.astype(np.float32)
    # push the float32 rounding error into the largest weight so rows sum to 1 in float32
    ww32[:, 0] += np.float32(1.0) - ww32.sum(axis=1, dtype=np.float32)
    attrs = {"POSITION": blob.accessor(v, 5126, "VEC3", target=34962, minmax=True)}
    if part.normals is not None:
        nrm = as_per_vertex(part.normals, n, f"{src}.normals")
    else:
        from ..geom.normals import vertex_normals

        nrm = vertex_normals(v, f)
    attrs["NORMAL"] = blob.accessor(_unit_normals(nrm), 5126, "VEC3", target=34962)
    for key, uv in sorted(part.uvs.items()):
        if not (key.startswith("uv") and key[2:].isdigit()):
            raise KisekaeError(f"UV set names must be uv0, uv1, ..., got {key!r}", src)
        attrs[f"TEXCOORD_{int(key[2:])}"] = blob.accessor(as_per_vertex(uv, n, f"{src}.{key}").reshape(n, 2),
                                                          5126, "VEC2", target=34962)
    for ci, c in enumerate(part.colors):
        c = as_per_vertex(c, n, f"{src}.colors[{ci}]")
        if c.ndim != 2 or c.shape[1] not in (3, 4):
            raise KisekaeError(f"colors[{ci}] must be (N, 3) or (N, 4), got {c.shape}", src)
        attrs[f"COLOR_{ci}"] = blob.accessor(np.clip(c, 0.0, 1.0), 5126, f"VEC{c.shape[1]}", target=34962)
    for key, a in sorted(part.attributes.items()):
        if not key.startswith("_") or not key[1:].replace("_", "").isalnum():
            raise KisekaeError(f"custom attribute names must start with '_', got {key!r}", src)
        a = as_per_vertex(a, n, f"{src}.{key}")
        comps = 1 if a.ndim == 1 else a.shape[1]
        if a.ndim > 2 or comps > 4:
            raise KisekaeError(f"custom attribute {key} must be (N,) or (N, 1..4), got {a.shape}", src)
        attrs[key] = blob.accessor(a, 5126, "SCALAR" if comps == 1 else f"VEC{comps}", target=34962)
    for s in range(k // 4):
        attrs[f"JOINTS_{s}"] = blob.accessor(jj[:, 4 * s:4 * s + 4], 5121 if n_bones <= 256 else 5123, "VEC4",
                                             target=34962)
        attrs[f"WEIGHTS_{s}"] = blob.accessor(ww32[:, 4 * s:4 * s + 4], 5126, "VEC4", target=34962)
    ictype = 5123 if n < 65535 else 5125
    prim = {"attributes": attrs, "indices": blob.accessor(f.reshape(-1), ictype, "SCALAR", target=34963),
            "mode": 4}
    mesh = {"name": part.name, "primitives": [prim], "extras": {EXTRAS_KEY: {"role": part.name}}}
    if part.material is not None:
        if not 0 <= int(part.material) < n_materials:
            raise KisekaeError(f"material {part.material} does not exist ({n_materials} given)", src)
        prim["material"] = int(part.material)
    if part.quads is not None:
        q = as_faces(part.quads, n, f"{src}.quads", corners=4)
        tri = np.empty((2 * len(q), 3), np.int32)
        tri[0::2], tri[1::2] = q[:, [0, 1, 2]], q[:, [0, 2, 3]]
        if 2 * len(q) > len(f) or not np.array_equal(f[: 2 * len(q)], tri):
            raise KisekaeError("faces must start with the (a,b,c),(a,c,d) triangulation of quads", src)
        mesh["extras"][EXTRAS_KEY]["quadCount"] = int(len(q))
    if part.morph_targets:
        targets = []
        for tname, d in part.morph_targets.items():
            d = as_points(d, f"{src}.morph {tname}")
            if len(d) != n:
                raise KisekaeError(f"morph target {tname!r} has {len(d)} rows, mesh has {n}", src)
            targets.append({"POSITION": blob.accessor(d, 5126, "VEC3", target=34962, minmax=True)})
        prim["targets"] = targets
        mesh["weights"] = [0.0] * len(targets)
        mesh["extras"]["targetNames"] = [str(t) for t in part.morph_targets]
    return mesh


def avatar_parts(avatar: Avatar, *, vertices: dict | None = None, colors: dict | None = None,
                 attributes: dict | None = None, uvs: dict | None = None, morph_targets: dict | None = None,
                 materials: dict | None = None, parts=None) -> list:
    """:class:`ExportPart` list for an avatar's body and garments, with per-part arrays added.

    Parameters
    ----------
    avatar : Avatar
    vertices : dict part -> (N, 3), optional
        Replacement bind-pose positions, e.g. garments fixed by the push-out solver.
    colors : dict part -> list of (N, 3|4), optional
        COLOR_0, COLOR_1, ... (e.g. the wound bake's COLOR_0 and tension colours as COLOR_1).
    attributes : dict part -> dict ``"_NAME"`` -> (N,) or (N, c), optional (e.g. ``_TENSION``)
    uvs : dict part -> dict ``"uv1"`` -> (N, 2), optional, added to the mesh's own UV sets
        (e.g. the wound bake's TEXCOORD_1)
    morph_targets : dict part -> dict name -> (N, 3) deltas, optional (e.g. per-pose fixes)
    materials : dict part -> material index, optional
    parts : list of part names, optional (default: body then every garment)
    """
    out = []
    for name in parts or ["body", *avatar.garments]:
        sm = avatar.part(name)
        m = sm.mesh
        out.append(ExportPart(
            name=name,
            vertices=(vertices or {}).get(name, m.vertices),
            faces=m.faces,
            joints=sm.skin.indices,
            weights=sm.skin.weights,
            quads=m.quads,
            normals=None if name in (vertices or {}) else m.normals,
            uvs={**m.uvs, **(uvs or {}).get(name, {})},
            colors=list((colors or {}).get(name, [])),
            attributes=dict((attributes or {}).get(name, {})),
            morph_targets=dict((morph_targets or {}).get(name, {})),
            material=(materials or {}).get(name),
        ))
    return out


def save_avatar(path, avatar: Avatar, *, poses=None, fps: float = 30.0, animation_name: str = "motion",
                capsules=None, textures=None, materials=None, humanoid=None, **part_arrays) -> dict:
    """Write an avatar (body + garments + skeleton), optional poses as one animation.

    Parameters
    ----------
    path : str or PathLike (.glb, .vrm or .gltf)
    avatar : Avatar
    poses : list of Pose, optional
        Written as keyframes ``i / fps`` seconds apart (LINEAR).
    fps : float, frames per second of ``poses``
    capsules, textures, materials, humanoid : see :func:`save_gltf`
    **part_arrays : keyword arguments of :func:`avatar_parts` (``vertices``, ``colors``,
        ``attributes``, ``uvs``, ``morph_targets``, ``materials``... by part name)

    Returns
    -------
    dict, see :func:`save_gltf`
    """
    sk = avatar.skeleton
    anims = []
    if poses:
        if not np.isfinite(fps) or fps <= 0:
            raise KisekaeError(f"fps must be > 0, got {fps}", "fps")
        for p in poses:
            if len(p.rotations) != sk.n_bones:
                raise KisekaeError(f"pose has {len(p.rotations)} bones, skeleton has {sk.n_bones}", p.name)
        rots = np.stack([p.rotations for p in poses])
        trans = np.stack([p.translation for p in poses])
        offsets = None
        if any(p.offsets is not None for p in poses):
            offsets = np.stack([np.zeros((sk.n_bones, 3)) if p.offsets is None else p.offsets for p in poses])
        anims.append((animation_name, np.arange(len(poses)) / float(fps), rots, trans, offsets))
    part_materials = part_arrays.pop("part_materials", None)
    parts = avatar_parts(avatar, materials=part_materials, **part_arrays)
    if humanoid is None:
        humanoid = guess_humanoid(sk.names)
    return save_gltf(path, sk.names, sk.parents, sk.rest, parts, animations=anims, capsules=capsules,
                     textures=textures, materials=materials, humanoid=humanoid or None,
                     extras={"name": avatar.name, "rig": avatar.rig})

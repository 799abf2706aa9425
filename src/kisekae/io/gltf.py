"""glTF 2.0 / GLB / VRM import of skinned avatars (the export is :mod:`kisekae.io.gltf_write`).

Import (:func:`load_gltf`) turns a file into an :class:`~kisekae.avatar.Avatar` plus what the
avatar model has no place for (morph targets, extra vertex attributes, animations that can be
evaluated at any time (:mod:`kisekae.io.gltf_animation`), VRM humanoid data, the capsule rig).
Every value the file declares is checked first (:mod:`kisekae.io.gltf_read`). What is read but
not applied is listed in :attr:`GltfAsset.warnings` (and by ``kisekae info``).

Conventions: metres, glTF frame (+Y up, character facing +Z). VRM 0.x models face -Z; they are
turned 180 degrees about Y on import unless ``vrm0_turn=False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..avatar.avatar import Avatar, SkinnedMesh
from ..avatar.capsules import CapsuleRig
from ..avatar.mesh import Mesh
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


def _merged_attribute(parts: list, key: str, w: str, src) -> np.ndarray:
    """Attribute ``key`` of every primitive, one after the other; zeros where a primitive lacks it."""
    cols = max(p[key].shape[1] if p.get(key) is not None and p[key].ndim == 2 else 1 for p in parts if key in p)
    blocks = []
    for p in parts:
        a = p.get(key)
        if a is None:
            a = np.zeros((len(p["POSITION"]), cols) if cols > 1 or key.startswith(("JOINTS", "WEIGHTS")) else
                         (len(p["POSITION"]),))
        blocks.append(np.asarray(a, dtype=np.float64 if not key.startswith("JOINTS") else np.int64))
    try:
        return np.concatenate(blocks)
    except ValueError:
        raise KisekaeError(f"{w}: primitives disagree on the shape of attribute {key}", src) from None


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
        merged[key] = _merged_attribute(parts, key, w, doc.src)
    k = len(merged["targets"])
    names = get_dict(mesh, "extras", w, doc.src).get("targetNames") if isinstance(mesh.get("extras"), dict) else None
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
    if fps is not None and (not np.isfinite(fps) or fps <= 0 or fps > 1000):
        raise KisekaeError(f"fps must be in (0, 1000], got {fps}", "fps")
    imp = _Import(doc, vrm0_turn)
    imp.scene_nodes()
    imp.skins()
    imp.bones()
    imp.parts()
    asset = imp.avatar(body, garments, mapping)
    imp.animations(asset, fps)
    imp.capsules(asset)
    asset.images = _images(doc)
    return asset


class _Import:
    """State of one :func:`load_gltf` call, with one method per step, in the order they run.

    1. the node hierarchy, world matrices and the VRM data (construction);
    2. :meth:`scene_nodes`: the nodes of the default scene and its mesh nodes;
    3. :meth:`skins`: joints and inverse bind matrices, one rest matrix per joint node;
    4. :meth:`bones`: the skeleton (skin joints, a static root, a bone per animated unskinned mesh)
       and the bind-space correction of each skin;
    5. :meth:`parts`: each mesh node's merged triangles, its skin and its transform to bind space;
    6. :meth:`avatar`: roles (body, garments, ignored), meshes, morph targets, extra attributes;
    7. :meth:`animations` and :meth:`capsules` (ours first, else VRM colliders).
    """

    def __init__(self, doc: GltfDocument, vrm0_turn: bool):
        self.doc = doc
        self.src = src = doc.src
        self.nodes = doc.array("nodes")
        self.meshes = doc.array("meshes")
        self.skins_ = doc.array("skins")
        self.parents, self.order = node_hierarchy(doc)
        self.n_nodes = n_nodes = len(self.nodes)
        self.notes, self.warnings = [], []
        ext = get_dict(doc.json, "extensions", "glTF", src)
        self.vrm = vrm_mod.read_vrm(ext, n_nodes, src)
        self.root = None
        if self.vrm is not None and self.vrm.version == "0" and vrm0_turn:
            self.root = np.diag([-1.0, 1.0, -1.0, 1.0])
            self.notes.append("VRM 0.x model turned 180 degrees about +Y to face +Z")
        self.trs_base, self.local = [], np.empty((n_nodes, 4, 4))
        for i in range(n_nodes):
            t, q, s, mat = node_trs(doc, i)
            self.trs_base.append((t, q, s))
            self.local[i] = mat if mat is not None else trs_matrix(t, q, s)
        self.world = node_world_matrices(self.parents, self.order, self.local, self.trs_base, {}, 1, self.root)[0]

    def scene_nodes(self) -> None:
        """``in_scene`` (the default scene's nodes and their descendants) and ``mesh_nodes`` in it."""
        doc, src, nodes, parents = self.doc, self.src, self.nodes, self.parents
        scenes = doc.array("scenes")
        in_scene = np.zeros(self.n_nodes, bool)
        if scenes:
            si = get_int(doc.json, "scene", "glTF", src, default=0, hi=len(scenes))
            for k, r in enumerate(get_list(scenes[si], "nodes", f"scenes[{si}]", src, doc.limits)):
                r = index_into(r, self.n_nodes, "nodes", f"scenes[{si}].nodes[{k}]", src)
                in_scene[r] = True
        else:
            in_scene[parents < 0] = True
        for j in self.order:
            if parents[j] >= 0 and in_scene[parents[j]]:
                in_scene[j] = True
        self.in_scene = in_scene
        self.mesh_nodes = []
        for j in self.order:
            if in_scene[j] and "mesh" in nodes[j]:
                index_into(nodes[j]["mesh"], len(self.meshes), "meshes", f"nodes[{j}].mesh", src)
                self.mesh_nodes.append(int(j))

    def skins(self) -> None:
        """``skin_data`` (joints, inverse bind matrices), ``used_skins`` and ``rest_of`` joint node."""
        doc, src = self.doc, self.src
        self.skin_data = []
        for si, sk in enumerate(self.skins_):
            w = f"skins[{si}]"
            joints = get_list(sk, "joints", w, src, doc.limits)
            if not joints:
                raise KisekaeError(f"{w}.joints is empty", src)
            joints = [index_into(j, self.n_nodes, "nodes", f"{w}.joints[{k}]", src) for k, j in enumerate(joints)]
            if len(set(joints)) != len(joints):
                raise KisekaeError(f"{w}.joints lists a node twice", src)
            if "inverseBindMatrices" in sk:
                ibm = accessor_as(doc, sk["inverseBindMatrices"], f"{w}.inverseBindMatrices", types=("MAT4",),
                                  count=len(joints))
            else:
                ibm = np.tile(np.eye(4), (len(joints), 1, 1))
            if self.root is not None:
                ibm = ibm @ np.linalg.inv(self.root)
            self.skin_data.append((joints, ibm))
        self.used_skins = sorted({get_int(self.nodes[j], "skin", f"nodes[{j}]", src, hi=len(self.skins_))
                                  for j in self.mesh_nodes if "skin" in self.nodes[j]})
        skin_order = self.used_skins + [s for s in range(len(self.skins_)) if s not in self.used_skins]
        self.rest_of = {}
        for s in skin_order:
            for j, m in zip(*self.skin_data[s]):
                if j not in self.rest_of:
                    det = np.linalg.det(m[:3, :3])
                    if not np.isfinite(det) or abs(det) < 1e-12:
                        raise KisekaeError(f"skins[{s}] has a singular inverse bind matrix for joint nodes[{j}]",
                                           src)
                    self.rest_of[j] = np.linalg.inv(m)
        self.joint_nodes = _bone_order(self.rest_of, skin_order, self.skin_data, self.parents, self.order)

    def _animated_mesh_nodes(self):
        """Unskinned mesh nodes that an animation moves (each gets a bone), and whether a static
        unskinned mesh lies outside every bone. Reads the animation channels (kept for later)."""
        self.anim_channels = [read_channels(self.doc, ai) for ai in range(len(self.doc.array("animations")))]
        moved = {c.node for _, chans, _ in self.anim_channels for c in chans if c.path != "weights"}
        bone_set = set(self.joint_nodes)
        node_bones, static_outside = [], False
        for j in self.mesh_nodes:
            if "skin" in self.nodes[j]:
                continue
            p, animated = j, False
            while p >= 0 and p not in bone_set:
                animated = animated or int(p) in moved
                p = self.parents[p]
            if animated:
                node_bones.append(j)
                bone_set.add(j)
            elif p < 0:
                static_outside = True
        return node_bones, static_outside

    def bones(self) -> None:
        """The skeleton: skin joints, then a static 'root' (files without skins whose static meshes need
        one), then one bone per animated unskinned mesh node (-1 marks the static bone)."""
        node_bones, static_outside = self._animated_mesh_nodes()
        bone_nodes = list(self.joint_nodes)
        if not self.joint_nodes and (static_outside or not node_bones):
            bone_nodes.append(-1)
            self.notes.append("no skin in the file: one 'root' bone added")
        bone_nodes += node_bones
        self.bone_nodes = bone_nodes
        self.bone_of_node = {j: b for b, j in enumerate(bone_nodes) if j >= 0}
        names_used, bone_names, bparents = set(), [], []
        self.rest = np.empty((len(bone_nodes), 4, 4))
        self.fix = np.tile(np.eye(4), (len(bone_nodes), 1, 1))
        for b, j in enumerate(bone_nodes):
            nm, p = self._bone_rest(b, j)
            base, k = nm, 1
            while nm in names_used:
                nm, k = f"{base}.{k}", k + 1
            names_used.add(nm)
            bone_names.append(nm)
            bparents.append(self.bone_of_node[int(p)] if p >= 0 else -1)
        self.bone_names = bone_names
        tails = _tails(self.rest, np.asarray(bparents))
        self.skeleton = Skeleton(bone_names, np.asarray(bparents, dtype=np.int32), self.rest.astype(np.float32),
                                 tails)
        self.static_bone = bone_nodes.index(-1) if -1 in bone_nodes else 0
        self._skin_fixes()

    def _bone_rest(self, b: int, j: int):
        """Name and parent node of bone ``b`` (node ``j``, -1 for the static root); sets its rest matrix
        (and, for a mesh node, the correction from its world frame to the rigid rest frame)."""
        nodes, src = self.nodes, self.src
        if j < 0:
            self.rest[b] = np.eye(4)
            return "root", -1
        nm = get_str(nodes[j], "name", f"nodes[{j}]", src)
        if j in self.rest_of:
            self.rest[b] = self.rest_of[j]
        else:  # a mesh node: its rigid world frame at rest (any scale stays in its vertices)
            nm = nm or get_str(self.meshes[nodes[j]["mesh"]], "name", f"meshes[{nodes[j]['mesh']}]", src)
            self.rest[b] = np.eye(4)
            self.rest[b, :3, :3] = polar_rotation(self.world[j, :3, :3])
            self.rest[b, :3, 3] = self.world[j, :3, 3]
            self.fix[b] = np.linalg.inv(self.world[j]) @ self.rest[b]
        p = self.parents[j]
        while p >= 0 and p not in self.bone_of_node:
            p = self.parents[p]
        return nm or f"node{j}", p

    def _skin_fixes(self) -> None:
        """Bind-space correction per skin: ``A = rest_j @ IBM_j`` must be one matrix for all joints."""
        self.skin_fix = {}
        for s in self.used_skins:
            joints, ibm = self.skin_data[s]
            a = np.stack([self.rest_of[j] @ m for j, m in zip(joints, ibm)])
            if not np.allclose(a, a[0], atol=1e-4 * max(1.0, float(np.abs(a[0]).max()))):
                raise KisekaeError(f"skins[{s}] disagrees with another skin on the bind pose of its joints", self.src)
            self.skin_fix[s] = a[0]

    def parts(self) -> None:
        """``parts``: part name -> (merged mesh, skin, transform to bind space, node, node name, mesh name)."""
        self.parts_, self.part_nodes, self.outside = {}, {}, []
        taken = set()
        for j in self.mesh_nodes:
            merged = self._merged_mesh(j)
            if merged is None:
                continue
            node, mi = self.nodes[j], self.nodes[j]["mesh"]
            nname = get_str(node, "name", f"nodes[{j}]", self.src)
            mname = get_str(self.meshes[mi], "name", f"meshes[{mi}]", self.src)
            pname = nname or mname or f"mesh{mi}"
            base, k = pname, 1
            while pname in taken or pname == "":
                pname, k = f"{base}.{k}", k + 1
            taken.add(pname)
            skin, xf = self._part_skin(j, merged, pname)
            self.parts_[pname] = (merged, skin, xf, j, nname, mname)
            self.part_nodes[pname] = j
        if not self.parts_:
            raise KisekaeError("the file has no triangle mesh in its scene", self.src)

    def _merged_mesh(self, j: int):
        """The merged triangles of mesh node ``j`` (None, with a note, when it has none)."""
        node = self.nodes[j]
        merged = _read_mesh(self.doc, node["mesh"])
        for mode in merged.get("skipped_modes", []):
            self.warnings.append(f"nodes[{j}]: {_MODE_NAMES.get(mode, mode)} primitives are not read "
                                 "(triangles only)")
        if merged.get("target_attributes"):
            self.warnings.append(f"nodes[{j}]: morph target {'/'.join(merged['target_attributes'])} deltas are not "
                                 "applied (positions only)")
        if "faces" not in merged or len(merged["faces"]) == 0:
            self.notes.append(f"nodes[{j}]: mesh has no triangles, skipped")
            return None
        k_targets = len(merged["targets"])
        if k_targets and "weights" in node:
            merged["default_weights"] = get_numbers(node, "weights", k_targets, f"nodes[{j}]", self.src)
        return merged

    def _part_skin(self, j: int, merged: dict, pname: str):
        """Skin and transform to bind space of part ``pname`` (node ``j``): its glTF skin, or rigidly its
        nearest bone ancestor (or the static bone)."""
        node, n = self.nodes[j], len(merged["POSITION"])
        if "skin" in node:
            s = int(node["skin"])
            joints = self.skin_data[s][0]
            skin = _skin_rows(merged, np.asarray([self.bone_of_node[x] for x in joints]), self.src,
                              f"nodes[{j}] ({pname})")
            # bind-space vertices turn with the model
            return skin, (self.skin_fix[s] if self.root is None else self.skin_fix[s] @ self.root)
        p = j
        while p >= 0 and p not in self.bone_of_node:
            p = self.parents[p]
        if p >= 0:
            b = self.bone_of_node[int(p)]
            # where the mesh sits in the bone's frame in the scene, placed on the bone's bind pose
            xf = self.rest[b] @ np.linalg.inv(self.world[p] @ self.fix[b]) @ self.world[j]
        else:
            b, xf = self.static_bone, self.world[j]
            if self.joint_nodes:
                self.outside.append((pname, self.bone_names[b]))
        return Skin(np.full((n, 1), b, np.int32), np.ones((n, 1), np.float32)), xf

    def avatar(self, body, garments, mapping) -> GltfAsset:
        """The asset with its avatar: each part with a role becomes a body or garment mesh."""
        src, parts = self.src, self.parts_
        roles = _assign_roles(parts, self.doc, body, garments, mapping, src)
        asset = GltfAsset(avatar=None, node_of_bone=np.asarray(self.bone_nodes, dtype=np.int64),
                          part_nodes=self.part_nodes, notes=self.notes, warnings=self.warnings, vrm=self.vrm)
        extras = self.doc.json.get("extras") if isinstance(self.doc.json.get("extras"), dict) else {}
        ours = extras.get(EXTRAS_KEY) if isinstance(extras.get(EXTRAS_KEY), dict) else {}
        asset.extras = ours
        built = {}
        for pname, (merged, skin, xf, j, nname, mname) in parts.items():
            role = roles.get(pname)
            if role is None or role == "ignore":
                asset.ignored.append(pname)
                continue
            built[role] = _built_part(asset, role, merged, skin, xf, f"nodes[{j}] ({pname})", src)
        if "body" not in built:
            raise KisekaeError("no body mesh: name one with body=/mapping (parts: "
                               f"{', '.join(parts)})", src)
        body_part = built.pop("body")
        rig_name = ours.get("rig", "") if isinstance(ours.get("rig", ""), str) else ""
        name = ours.get("name") if isinstance(ours.get("name"), str) else Path(src).stem
        asset.avatar = Avatar(self.skeleton, body_part, built, name=name, rig=rig_name)
        asset.part_nodes = {roles[p]: n for p, n in self.part_nodes.items() if roles.get(p) not in (None, "ignore")}
        for pname, bname in self.outside:
            if roles.get(pname) not in (None, "ignore"):
                self.warnings.append(f"{pname}: unskinned mesh outside the skeleton, bound rigidly to bone {bname!r} "
                                     "(it moves with that bone; in the file it stays still)")
        return asset

    def animations(self, asset: GltfAsset, fps) -> None:
        """The file's animations as poses (and morph weights), and warnings for what nothing follows."""
        rig = NodeRig(self.parents, self.order, self.local, self.trs_base, self.root, self.skeleton,
                      np.asarray(self.bone_nodes, dtype=np.int64), self.fix, dict(asset.part_nodes),
                      {r: len(t) for r, t in asset.morph_targets.items()}, dict(asset.morph_default_weights))
        _read_animations(asset, rig, self.anim_channels, self.doc, fps, self.warnings)
        _warn_unapplied(asset, self.doc, self.parents, self.in_scene, self.warnings)

    def capsules(self, asset: GltfAsset) -> None:
        """The capsule rig: ours (exact, tapered) first, else the VRM colliders."""
        ours, src = asset.extras, self.src
        if "capsules" in ours:
            where = f"{src}: extras.{EXTRAS_KEY}.capsules"
            try:
                rig = CapsuleRig.from_json_dict(ours["capsules"], source=where)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:
                if isinstance(exc, KisekaeError):
                    raise
                raise KisekaeError(f"malformed capsule rig ({type(exc).__name__}: {str(exc)[:80]})", where) from None
            asset.capsules = rig.remap(self.skeleton.names) if rig.bone_names else rig
        elif self.vrm is not None and self.vrm.colliders:
            asset.capsules = vrm_mod.colliders_to_rig(self.vrm, self.bone_of_node, self.world, self.skeleton, src,
                                                      self.parents)


def _built_part(asset: GltfAsset, role: str, merged: dict, skin: Skin, xf: np.ndarray, where: str, src) -> SkinnedMesh:
    """The skinned mesh of one part in bind space (the rest shape with its default morph weights); its
    morph targets and extra attributes (normals turned with it) go into ``asset``."""
    v = merged["POSITION"]
    for wt, d in zip(merged["default_weights"], merged["targets"]):  # the shape at rest (glTF: base + sum w d)
        if wt != 0:
            v = v + wt * d
    v = v @ xf[:3, :3].T + xf[:3, 3]
    if not np.all(np.isfinite(v)):
        raise KisekaeError(f"{where} has non-finite vertex positions after its transform", src)
    faces = merged["faces"]
    quads = _quads_from_extras(merged["extras"], faces)
    uvs = {f"uv{k}": merged[f"TEXCOORD_{k}"].astype(np.float32) for k in (0, 1) if f"TEXCOORD_{k}" in merged}
    mesh = Mesh(v.astype(np.float32), faces.astype(np.int32), quads, uvs, name=role)
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
    return SkinnedMesh(mesh, skin)


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


def _default_body(parts: dict, names_of) -> str:
    """The body part when none is named: our exporter's role, else a part named "body" (any case),
    else the part with most vertices."""
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
    return body_like[0]


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
        roles.setdefault(_default_body(parts, names_of), "body")
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

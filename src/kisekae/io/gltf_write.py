"""glTF 2.0 / GLB / VRM export of skinned avatars (the import is :mod:`kisekae.io.gltf`).

:func:`save_gltf` writes plain arrays (:class:`ExportPart` per mesh) with pygltflib;
:func:`avatar_parts` builds those parts from an avatar, so the outputs of the fit, tension and
wound stages can be passed in as arrays; :func:`save_avatar` writes an avatar with poses as one
animation. Metres, glTF frame (+Y up, character facing +Z).
"""

from __future__ import annotations

import io
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..avatar.avatar import Avatar
from ..avatar.humanoid import guess_humanoid
from ..avatar.mesh import triangulate_quads
from ..errors import KisekaeError
from ..geom.normals import vertex_normals
from . import vrm as vrm_mod
from .gltf import EXTRAS_KEY
from .gltf_read import matrix_quaternion, polar_rotation


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
    path = Path(path)
    names, parents, rest = _skeleton_arrays(names, parents, rest)
    b = len(names)
    blob = _Blob()
    nodes, skin, roots, local_r, local_t = _joint_nodes(blob, names, parents, rest)
    images, textures_j, mats, unused = _textures_and_materials(blob, textures, materials)
    meshes, mesh_nodes = [], []
    for part in parts:
        meshes.append(_export_mesh(blob, part, b, len(mats)))
        mesh_nodes.append({"name": part.name, "mesh": len(meshes) - 1, "skin": 0})
    node_base = len(nodes)
    nodes.extend(mesh_nodes)
    anims = [_export_animation(blob, anim, parents, local_r, local_t) for anim in animations or []]
    ours, rig = _kisekae_extras(extras, capsules, names, unused)
    doc = {
        "asset": {"version": "2.0", "generator": "kisekae"},
        "scene": 0,
        "scenes": [{"nodes": roots + list(range(node_base, len(nodes)))}],
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
    if rig is not None and vrm_colliders and len(capsules):
        extensions["VRMC_springBone"] = vrm_mod.springbone_extension(rig)
    if humanoid:
        extensions["VRMC_vrm"] = vrm_mod.vrm1_extension(humanoid, b, ours.get("name", path.stem))
    if extensions:
        doc["extensions"] = extensions
        doc["extensionsUsed"] = sorted(extensions)
    size = _write_document(path, doc, blob)
    return {"bytes": size, "nodes": len(nodes), "meshes": len(meshes), "accessors": len(blob.accessors),
            "animations": len(anims)}


def _kisekae_extras(extras, capsules, names, unused) -> tuple:
    """``(extras.kisekae block, capsule rig in the file's bone order or None)``: exporter, units, the
    caller's extras, the exact capsule rig and the textures no material uses."""
    ours = {"exporter": "kisekae", "units": "metres"}
    ours.update(extras or {})
    rig = None
    if capsules is not None:
        rig = capsules if not capsules.bone_names else capsules.remap(names)
        ours["capsules"] = rig.to_json_dict()
        if not rig.bone_names:
            ours["capsules"]["bones"] = names
    if unused:
        ours["textures"] = unused
    return ours, rig


def _skeleton_arrays(names, parents, rest):
    """``names`` as str, ``parents`` (B,) int64 (parents first) and ``rest`` (B, 4, 4) float64, checked."""
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
    return names, parents, rest


def _joint_nodes(blob, names, parents, rest):
    """Joint nodes (node i = bone i) at the rest transforms without scale, and the skin.

    Returns ``(nodes, skin, roots, local_r (B, 3, 3), local_t (B, 3))``.
    """
    b = len(names)
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
    return nodes, skin, roots, local_r, local_t


def _link_textures(obj, tex_names: dict, used: set) -> None:
    """Replace texture names in material ``index`` slots by texture indices (recursively, in place)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "index" and isinstance(v, str):
                if v not in tex_names:
                    raise KisekaeError(f"material refers to unknown texture {v!r}", "materials")
                obj[k] = tex_names[v]
                used.add(v)
            else:
                _link_textures(v, tex_names, used)
    elif isinstance(obj, list):
        for v in obj:
            _link_textures(v, tex_names, used)


def _textures_and_materials(blob, textures, materials):
    """``(images, textures, materials, unused)``: the images in the buffer, their textures, the materials
    with texture names resolved, and ``{name: index}`` of the textures no material uses."""
    tex_names, images, textures_j = {}, [], []
    for tname, image in (textures or {}).items():
        raw, mime = _png_bytes(image)
        images.append({"name": str(tname), "bufferView": blob.view(raw), "mimeType": mime})
        textures_j.append({"source": len(images) - 1, "sampler": 0, "name": str(tname)})
        tex_names[str(tname)] = len(textures_j) - 1
    mats = json.loads(json.dumps(materials or []))
    used = set()
    _link_textures(mats, tex_names, used)
    return images, textures_j, mats, {t: tex_names[t] for t in sorted(set(tex_names) - used)}


def _export_animation(blob, anim, parents, local_r, local_t) -> dict:
    """One animation ``(name, times, rotations, translations[, offsets])`` as LINEAR channels: rotations
    of every bone, translations of the roots and of bones with a non-zero offset."""
    b = len(parents)
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
    return {"name": str(aname), "samplers": samplers, "channels": channels}


def _write_document(path: Path, doc: dict, blob) -> int:
    """Write ``doc`` with the buffer: GLB, or ``.gltf`` JSON with the buffer as a data URI. Returns bytes written."""
    import pygltflib

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
    return len(out)


def _skin_slots(joints, weights, n: int, n_bones: int, src: str):
    """``(joints (N, k) int64, weights (N, k) float32, k)`` with k = 4 or 8, as the validator wants them:
    ordered by weight, duplicates merged, unused slots zero, rows summing to 1 in float32."""
    from ..validate import as_per_vertex

    j = np.asarray(joints)
    w = as_per_vertex(weights, n, f"{src}.weights")
    if j.shape != w.shape or j.ndim != 2 or j.shape[1] > 8:
        raise KisekaeError(f"joints {j.shape} and weights {w.shape} must both be (N, K<=8)", src)
    if w.size and (np.any(w < 0) or np.any(w.sum(axis=1) <= 0)):
        raise KisekaeError("weights must be >= 0 with a positive sum per vertex", src)
    if j.size and (j.min() < 0 or j.max() >= n_bones):
        raise KisekaeError(f"joint index out of range 0..{n_bones - 1}", src)
    k = 4 if j.shape[1] <= 4 else 8
    jj = np.zeros((n, k), np.int64)
    ww = np.zeros((n, k))
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
    return jj, ww32, k


def _extra_attributes(blob, part, n: int, src: str, attrs: dict) -> None:
    """TEXCOORD_n, COLOR_n and custom ``_NAME`` attributes of ``part`` into ``attrs``, validated."""
    from ..validate import as_per_vertex

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


def _export_mesh(blob: _Blob, part: ExportPart, n_bones: int, n_materials: int) -> dict:
    """The glTF mesh of one part: one triangle primitive with its attributes, skin, quads and morph targets."""
    from ..validate import as_faces, as_per_vertex, as_points

    src = f"part {part.name}"
    v = as_points(part.vertices, f"{src}.vertices")
    n = len(v)
    f = as_faces(part.faces, n, f"{src}.faces")
    jj, ww32, k = _skin_slots(part.joints, part.weights, n, n_bones, src)
    attrs = {"POSITION": blob.accessor(v, 5126, "VEC3", target=34962, minmax=True)}
    nrm = vertex_normals(v, f) if part.normals is None else as_per_vertex(part.normals, n, f"{src}.normals")
    attrs["NORMAL"] = blob.accessor(_unit_normals(nrm), 5126, "VEC3", target=34962)
    _extra_attributes(blob, part, n, src, attrs)
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
        if 2 * len(q) > len(f) or not np.array_equal(f[: 2 * len(q)], triangulate_quads(q)):
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

"""Wavefront OBJ: positions, UVs, polygon faces and groups (enough for MakeHuman assets).

Quads stay quads; other polygons are fan-triangulated. Groups with the same name are merged,
because MakeHuman's base mesh names ``helper-tights`` twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..avatar.mesh import Mesh, triangulate_quads
from ..errors import KisekaeError

#: Refuse OBJ files larger than this many bytes (a safety cap against runaway input).
MAX_OBJ_BYTES = 512 * 1024 * 1024


@dataclass
class ObjData:
    """Raw OBJ content in the file's own units and frame.

    ``polygons[i]`` is an int array of 0-based vertex indices, ``polygon_uvs[i]`` the matching UV
    indices (or None), ``polygon_group[i]`` the index into ``groups``.
    """

    vertices: np.ndarray
    uvs: np.ndarray
    polygons: list
    polygon_uvs: list
    polygon_group: np.ndarray
    groups: list = field(default_factory=list)
    path: str = "<obj>"

    def group_polygons(self, names) -> np.ndarray:
        """Indices of polygons in any of the named groups (names merged)."""
        names = [names] if isinstance(names, str) else list(names)
        ids = [i for i, g in enumerate(self.groups) if g in names]
        missing = [n for n in names if n not in self.groups]
        if missing:
            raise KisekaeError(f"no group named {missing}; groups are {sorted(set(self.groups))[:20]}", self.path)
        return np.nonzero(np.isin(self.polygon_group, ids))[0]

    def group_vertices(self, names) -> np.ndarray:
        """Sorted unique vertex indices used by the named groups."""
        polys = self.group_polygons(names)
        if len(polys) == 0:
            return np.zeros(0, np.int64)
        return np.unique(np.concatenate([self.polygons[i] for i in polys]))


def read_obj(path) -> ObjData:
    """Parse an OBJ file, with clear errors for truncated or malformed content."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise KisekaeError("file not found", path) from None
    if size > MAX_OBJ_BYTES:
        raise KisekaeError(f"file is {size} bytes, over the {MAX_OBJ_BYTES} byte limit", path)
    try:
        text = path.read_text(encoding="utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise KisekaeError(f"not a text OBJ file ({exc.reason} at byte {exc.start})", path) from None
    return parse_obj(text, str(path))


def parse_obj(text: str, source: str = "<obj>") -> ObjData:
    verts, uvs, polys, puvs, pgroup = [], [], [], [], []
    groups = ["default"]
    group_ids = {"default": 0}
    current = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        tag, _, rest = line.partition(" ")
        try:
            if tag == "v":
                xyz = [_obj_number(t, "a vertex") for t in rest.split()[:3]]
                if len(xyz) != 3:
                    raise ValueError("a vertex needs 3 coordinates")
                verts.append(xyz)
            elif tag == "vt":
                uv = [_obj_number(t, "a texture coordinate") for t in rest.split()[:2]]
                if len(uv) != 2:
                    raise ValueError("a texture coordinate needs 2 numbers")
                uvs.append(uv)
            elif tag == "f":
                corners = rest.split()
                if len(corners) < 3:
                    raise ValueError(f"a face needs at least 3 corners, found {len(corners)}")
                vi, ti = [], []
                for c in corners:
                    parts = c.split("/")
                    vi.append(_obj_index(parts[0], len(verts)))
                    if len(parts) > 1 and parts[1]:
                        ti.append(_obj_index(parts[1], len(uvs)))
                polys.append(np.array(vi, dtype=np.int64))
                puvs.append(np.array(ti, dtype=np.int64) if len(ti) == len(vi) else None)
                pgroup.append(current)
            elif tag in ("g", "o"):
                name = rest.strip() or "default"
                if name not in group_ids:
                    group_ids[name] = len(groups)
                    groups.append(name)
                current = group_ids[name]
        except ValueError as exc:
            # The problem and the line number only: never the line's text (the file may not be an OBJ at all).
            raise KisekaeError(f"line {lineno}: {exc}", source) from None
    if not verts:
        raise KisekaeError("no vertices (empty or truncated OBJ)", source)
    v = np.asarray(verts, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise KisekaeError("non-finite vertex coordinate", source)
    return ObjData(v, np.asarray(uvs, dtype=np.float64).reshape(-1, 2), polys, puvs,
                   np.asarray(pgroup, dtype=np.int32), groups, source)


def _obj_number(token: str, what: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise ValueError(f"{what} has a coordinate that is not a number") from None


def _obj_index(token: str, count: int) -> int:
    try:
        n = int(token)
    except ValueError:
        raise ValueError("a face corner's index is not a whole number") from None
    i = count + n if n < 0 else n - 1
    if not 0 <= i < count:
        raise ValueError(f"index {n} refers to an element not defined before it (have {count}); "
                         "truncated file?")
    return i


def obj_to_mesh(obj: ObjData, polygon_ids=None, *, scale: float = 1.0, name: str = "mesh",
                vertex_ids=None) -> tuple[Mesh, np.ndarray]:
    """Build a :class:`Mesh` from some polygons of an OBJ.

    Parameters
    ----------
    polygon_ids : int array or None (all polygons)
    scale : float, multiplies positions (0.1 turns MakeHuman decimetres into metres)
    vertex_ids : int array or None
        The source vertices to keep, in output order; default: those the polygons use, sorted.

    Returns
    -------
    mesh : Mesh
    source_index : (N,) int64, the OBJ vertex index of each mesh vertex
    """
    if polygon_ids is None:
        polygon_ids = np.arange(len(obj.polygons))
    polys = [obj.polygons[i] for i in polygon_ids]
    puvs = [obj.polygon_uvs[i] for i in polygon_ids]
    if vertex_ids is None:
        vertex_ids = np.unique(np.concatenate(polys)) if polys else np.zeros(0, np.int64)
    vertex_ids = np.asarray(vertex_ids, dtype=np.int64)
    remap = np.full(len(obj.vertices), -1, dtype=np.int64)
    remap[vertex_ids] = np.arange(len(vertex_ids))
    quads, tris, quv, tuv = [], [], [], []
    for p, t in zip(polys, puvs):
        rp = remap[p]
        if np.any(rp < 0):
            raise KisekaeError("a polygon uses a vertex outside the selected set", obj.path)
        if len(rp) == 4:
            quads.append(rp)
            quv.append(t)
        else:
            for k in range(1, len(rp) - 1):
                tris.append(rp[[0, k, k + 1]])
                tuv.append(None if t is None else t[[0, k, k + 1]])
    q = np.asarray(quads, dtype=np.int32).reshape(-1, 4)
    tri = np.asarray(tris, dtype=np.int32).reshape(-1, 3)
    faces = np.concatenate([triangulate_quads(q), tri])
    uv_faces = None
    uv_coords = None
    uvs = {}
    if len(obj.uvs) and all(t is not None for t in quv + tuv):
        qt = np.asarray(quv, dtype=np.int64).reshape(-1, 4)
        tt = np.asarray(tuv, dtype=np.int64).reshape(-1, 3)
        uv_faces = np.concatenate([triangulate_quads(qt), tt]).astype(np.int32)
        uv_coords = obj.uvs.astype(np.float32)
        per_vertex = np.zeros((len(vertex_ids), 2), np.float32)
        per_vertex[faces.ravel()[::-1]] = uv_coords[uv_faces.ravel()[::-1]]  # first corner wins
        uvs["uv0"] = per_vertex
    mesh = Mesh(obj.vertices[vertex_ids] * scale, faces, q if len(q) else None, uvs, uv_faces, uv_coords, name)
    return mesh, vertex_ids


def write_obj(path, mesh: Mesh, vertices=None, *, overwrite: bool = False, comment: str = "") -> None:
    """Write a mesh as OBJ (quads where the mesh has them, face-varying UVs when present).

    Parameters
    ----------
    path : output file; an existing file is only replaced with ``overwrite=True``
    mesh : Mesh (connectivity and UVs)
    vertices : (N, 3) positions to write instead of ``mesh.vertices`` (e.g. a fixed garment), metres
    """
    from pathlib import Path as _Path

    path = _Path(path)
    if path.exists() and not overwrite:
        raise KisekaeError("file exists; pass overwrite=True (--force) to replace it", path)
    v = mesh.vertices if vertices is None else np.asarray(vertices)
    if v.shape != mesh.vertices.shape or not np.all(np.isfinite(v)):
        raise KisekaeError(f"expected {mesh.vertices.shape} finite positions, got {v.shape}", path)
    lines = [f"# {comment}" if comment else "# written by kisekae", f"o {mesh.name}"]
    lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in v]
    has_uv = mesh.uv_faces is not None and mesh.uv_coords is not None
    if has_uv:
        lines += [f"vt {a:.6f} {b:.6f}" for a, b in mesh.uv_coords]
    nq = 0 if mesh.quads is None else len(mesh.quads)

    def corner(vi, ti):
        return f"{vi + 1}/{ti + 1}" if has_uv else f"{vi + 1}"

    for q in range(nq):
        f0, f1 = mesh.faces[2 * q], mesh.faces[2 * q + 1]
        vs = [f0[0], f0[1], f0[2], f1[2]]
        ts = [0, 0, 0, 0]
        if has_uv:
            u0, u1 = mesh.uv_faces[2 * q], mesh.uv_faces[2 * q + 1]
            ts = [u0[0], u0[1], u0[2], u1[2]]
        lines.append("f " + " ".join(corner(a, b) for a, b in zip(vs, ts)))
    for f in range(2 * nq, len(mesh.faces)):
        ts = mesh.uv_faces[f] if has_uv else [0, 0, 0]
        lines.append("f " + " ".join(corner(a, b) for a, b in zip(mesh.faces[f], ts)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

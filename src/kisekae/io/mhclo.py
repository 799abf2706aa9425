"""MakeHuman clothes (``.mhclo`` + ``.obj``) fitted to an avatar built from the MakeHuman base mesh.

Each garment vertex is ``wi·V[i] + wj·V[j] + wk·V[k] + offset ⊙ s`` over base-mesh vertices
V (or a copy ``V[i]`` for one-index lines), as MakeHuman's ``proxy.py`` (``getCoords`` and its
``TMatrix``) and MPFB2's ``ClothesService.fit_clothes_to_human`` compute it. The per-axis offset
scale ``s`` comes from, in MakeHuman's order of precedence:

- ``x_scale``/``y_scale``/``z_scale a b d``: ``s = |V[a] − V[b]|_axis / d`` (the shipped clothes
  measure the head: vertices 5399/11998, 791/881, 962/5320);
- else ``shear_x``/``shear_y``/``shear_z a b x1 x2`` (or the ``l_shear_*`` set, else ``r_shear_*``):
  the linear part of the affine map taking the box ``[x1, x2]`` per axis onto ``[V[a], V[b]]``, which
  for such an axis-aligned box is ``s = (V[b] − V[a])_axis / (x2 − x1)`` (signed);
- else no scale: offsets are in the base mesh's own units (decimetres), so ``s = MH_SCALE``.

A file must give all three axes of a scale or shear set (MakeHuman cannot fit one that does not).
Because kisekae's base positions are MakeHuman's times 0.1 plus a ground offset, evaluating the
same formula on them gives the fitted garment directly in metres. Skin weights transfer with the
same three weights, then keep the top k and renormalise. ``delete_verts`` (base vertices hidden
under the garment) is kept as ``covered_hint`` in body-vertex ids.

The files an ``.mhclo`` names (``obj_file``, ``material``) must lie inside its own folder
(:func:`kisekae.validate.inside_folder`), and errors name the line and the problem, never the
text of the line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..avatar.avatar import Avatar, SkinnedMesh
from ..avatar.skinning import top_k_weights
from ..errors import KisekaeError
from ..validate import inside_folder
from .makehuman import MH_SCALE
from .obj import obj_to_mesh, read_obj

#: Sets of per-axis lines that scale the offsets, in MakeHuman's order of precedence.
SHEAR_SETS = ("shear", "l_shear", "r_shear")


def parse_mhclo(path):
    """Read an ``.mhclo`` file.

    Returns
    -------
    dict with ``name``, ``obj_file`` and ``material`` (as written, or None), ``obj_path`` (the
    absolute OBJ path: ``obj_file``, default ``<stem>.obj``, inside the file's folder),
    ``scales`` ({axis: (a, b, d)}), ``shears`` ({set: {axis: (a, b, x1, x2)}} for the sets of
    :data:`SHEAR_SETS` the file gives), ``refs`` (M, 3) int, ``weights`` (M, 3), ``offsets`` (M, 3),
    ``delete_verts`` (K,) int.

    Raises
    ------
    KisekaeError
        Unreadable file, a malformed line (its number, not its text), no vertex lines, weights
        that are not finite, a scale or shear set that lacks an axis, or an
        ``obj_file``/``material`` outside the file's folder.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise KisekaeError("file not found", path) from None
    except UnicodeDecodeError as exc:
        raise KisekaeError(f"not a text file ({exc.reason})", path) from None
    info = {"name": path.stem, "obj_file": None, "material": None, "scales": {}, "shears": {}, "delete_verts": []}
    refs, weights, offsets = [], [], []
    section = "header"
    for lineno, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        try:
            if words[0] == "verts":
                if len(words) > 2 or (len(words) == 2 and not words[1].isdigit()):
                    raise ValueError("'verts' takes at most one whole number (the reference mesh, 0)")
                section = "verts"
                continue
            if words[0] == "delete_verts":
                if len(words) > 1:
                    raise ValueError("'delete_verts' takes no value; its vertices follow on the next lines")
                section = "delete"
                continue
            if section == "verts" and (words[0][0].isdigit() or words[0][0] in "-+."):
                _vertex_line(words, refs, weights, offsets)
            elif section == "delete":
                info["delete_verts"].extend(_delete_line(words))
            else:
                _header_line(words, info, path, lineno)
        except ValueError as exc:
            raise KisekaeError(f"line {lineno}: {exc}", path) from None
    if not refs:
        raise KisekaeError("no 'verts' section with vertex lines", path)
    _check_complete_sets(info, path)
    info["refs"] = np.asarray(refs, dtype=np.int64)
    info["weights"] = np.asarray(weights, dtype=np.float64)
    info["offsets"] = np.asarray(offsets, dtype=np.float64)
    info["delete_verts"] = np.asarray(info["delete_verts"], dtype=np.int64)
    info["obj_path"] = inside_folder(info["obj_file"] or (path.stem + ".obj"), path.parent, path, "obj_file")
    return info


def _vertex_line(words: list, refs: list, weights: list, offsets: list) -> None:
    """One vertex line: a single base vertex, or three base vertices, weights and an offset."""
    if len(words) == 1:
        refs.append([_index(words[0], "a vertex line")] * 3)
        weights.append([1.0, 0.0, 0.0])
        offsets.append([0.0, 0.0, 0.0])
    elif len(words) == 9:
        refs.append([_index(w, "a vertex line's first three numbers (base vertices)") for w in words[:3]])
        weights.append([_number(w, "a vertex line's weights and offsets") for w in words[3:6]])
        offsets.append([_number(w, "a vertex line's weights and offsets") for w in words[6:9]])
    else:
        raise ValueError(f"a vertex line needs 1 or 9 numbers, found {len(words)}")


def _delete_line(words: list) -> list:
    """Body vertices of one ``delete_verts`` line: single indices and ``a - b`` ranges (inclusive)."""
    out = []
    i = 0
    while i < len(words):
        if i + 2 < len(words) and words[i + 1] == "-":
            a = _index(words[i], "delete_verts")
            b = _index(words[i + 2], "delete_verts")
            if b < a:
                raise ValueError(f"delete_verts range {a} - {b} runs backwards")
            out.extend(range(a, b + 1))
            i += 3
        else:
            out.append(_index(words[i], "delete_verts"))
            i += 1
    return out


def _header_line(words: list, info: dict, path: Path, lineno: int) -> None:
    """A header line: a scale or shear axis, ``obj_file``, ``material`` or ``name`` (others are ignored)."""
    if words[0] in ("x_scale", "y_scale", "z_scale"):
        if len(words) != 4:
            raise ValueError(f"{words[0]} needs 'a b d'")
        a = _index(words[1], words[0])
        b = _index(words[2], words[0])
        d = _number(words[3], words[0])
        if d <= 0:
            raise ValueError(f"{words[0]} reference distance must be > 0")
        info["scales"]["xyz".index(words[0][0])] = (a, b, d)
    elif words[0].rpartition("_")[0] in SHEAR_SETS and words[0][-1] in "xyz":
        if len(words) != 5:
            raise ValueError(f"{words[0]} needs 'a b x1 x2'")
        a = _index(words[1], words[0])
        b = _index(words[2], words[0])
        x1 = _number(words[3], words[0])
        x2 = _number(words[4], words[0])
        if x1 == x2:
            raise ValueError(f"{words[0]} reference coordinates must differ")
        info["shears"].setdefault(words[0][:-2], {})["xyz".index(words[0][-1])] = (a, b, x1, x2)
    elif words[0] in ("obj_file", "material"):
        if len(words) < 2:
            raise ValueError(f"'{words[0]}' needs a file name")
        info[words[0]] = " ".join(words[1:])
        inside_folder(info[words[0]], path.parent, path, f"line {lineno}: {words[0]}")
    elif words[0] == "name":
        info["name"] = " ".join(words[1:])


def _check_complete_sets(info: dict, path) -> None:
    """A scale set or shear set that the file gives must have all three axes."""
    sets = [("scale", info["scales"], "{}_scale")] if info["scales"] else []
    sets += [(k, axes, k + "_{}") for k, axes in info["shears"].items()]
    for kind, axes, line in sets:
        missing = [line.format("xyz"[n]) for n in range(3) if n not in axes]
        if missing:
            raise KisekaeError(f"{' and '.join(missing)} missing: the {kind} lines need all three axes", path)


def _index(word: str, what: str) -> int:
    """A non-negative whole number of an ``.mhclo`` line; the error names ``what``, not the text."""
    if not word.isdigit() or len(word) > 9:
        raise ValueError(f"{what}: expected whole numbers from 0 to 999999999")
    return int(word)


def _number(word: str, what: str) -> float:
    """A finite number of an ``.mhclo`` line; the error names ``what``, not the text."""
    try:
        v = float(word)
    except ValueError:
        raise ValueError(f"{what}: expected numbers") from None
    if not np.isfinite(v):
        raise ValueError(f"{what}: expected finite numbers")
    return v


def offset_scale(info: dict, base_vertices) -> np.ndarray:
    """The per-axis factor ``(3,)`` that multiplies the offsets of parsed ``.mhclo`` data.

    Parameters
    ----------
    info : dict from :func:`parse_mhclo`
    base_vertices : (V, 3) float, base positions in metres (MakeHuman's times :data:`MH_SCALE`)

    Returns
    -------
    (3,) float64: metres per offset unit (see the module docstring for the rules).
    """
    v = np.asarray(base_vertices, dtype=np.float64)
    if info["scales"]:
        return np.array([abs(v[a, n] - v[b, n]) / d for n, (a, b, d) in sorted(info["scales"].items())])
    shears = info.get("shears", {})
    for kind in SHEAR_SETS:
        if kind in shears:
            return np.array([(v[b, n] - v[a, n]) / (x2 - x1) for n, (a, b, x1, x2) in sorted(shears[kind].items())])
    return np.full(3, MH_SCALE)


def fit_mhclo(info: dict, base_vertices: np.ndarray, source: str = "mhclo") -> np.ndarray:
    """Garment positions ``(M, 3)`` in metres from parsed ``.mhclo`` data and base positions in metres."""
    v = np.asarray(base_vertices, dtype=np.float64)
    n = len(v)
    refs = info["refs"]
    used = [refs] + [np.asarray(s[:2]) for s in info["scales"].values()]
    used += [np.asarray(s[:2]) for axes in info.get("shears", {}).values() for s in axes.values()]
    hi = max(int(np.max(u)) for u in used)
    lo = min(int(np.min(u)) for u in used)
    if lo < 0 or hi >= n:
        raise KisekaeError(f"refers to base vertex {hi if hi >= n else lo}, but the base mesh has {n} vertices", source)
    return np.einsum("mk,mkd->md", info["weights"], v[refs]) + info["offsets"] * offset_scale(info, v)


def load_mhclo(path, avatar: Avatar, *, name: str | None = None, k: int = 8) -> SkinnedMesh:
    """Load a MakeHuman garment fitted to ``avatar`` (which must come from the MakeHuman base mesh)."""
    path = Path(path)
    if avatar.base_vertices is None or avatar.base_skin is None:
        raise KisekaeError("this avatar was not built from the MakeHuman base mesh; .mhclo needs it", path)
    info = parse_mhclo(path)
    obj_path = info["obj_path"]
    obj = read_obj(obj_path)
    positions = fit_mhclo(info, avatar.base_vertices, str(path))
    if len(positions) != len(obj.vertices):
        raise KisekaeError(f"{len(positions)} vertex lines but {obj_path.name} has {len(obj.vertices)} vertices", path)
    mesh, _ = obj_to_mesh(obj, name=name or info["name"], vertex_ids=np.arange(len(obj.vertices)))
    mesh = mesh.with_vertices(positions.astype(np.float32))
    n_bones = avatar.skeleton.n_bones
    base = avatar.base_skin
    dense = np.zeros((len(positions), n_bones))
    for c in range(3):
        w = info["weights"][:, c:c + 1] * base.weights[info["refs"][:, c]]
        np.add.at(dense, (np.arange(len(positions))[:, None], base.indices[info["refs"][:, c]]), w)
    # Fitting weights may be slightly negative (extrapolation); a negative skin weight is meaningless.
    skin = top_k_weights(np.maximum(dense, 0.0), k, source=str(path))
    covered = None
    if avatar.body.source_index is not None and len(info["delete_verts"]):
        lookup = np.full(len(avatar.base_vertices), -1, dtype=np.int64)
        lookup[avatar.body.source_index] = np.arange(len(avatar.body.source_index))
        dv = info["delete_verts"]
        dv = dv[(dv >= 0) & (dv < len(lookup))]
        covered = lookup[dv]
        covered = covered[covered >= 0]
    return SkinnedMesh(mesh, skin, source_index=None, covered_hint=covered)


def add_garments(avatar: Avatar, specs) -> list:
    """The garments ``specs`` on ``avatar``: each a garment the avatar already has, by name, or a ``.mhclo`` file,
    fitted and added (once: a garment of the same name is kept). Returns their names, in order.

    Raises
    ------
    KisekaeError
        For another file type, a name the avatar has no garment of, or a ``.mhclo`` that does not load.
    """
    names = []
    for spec in specs:
        spec = str(spec)
        if spec.lower().endswith(".mhclo"):
            garment = load_mhclo(spec, avatar)
            if garment.name not in avatar.garments:
                avatar.add_garment(garment)
            names.append(garment.name)
        elif Path(spec).suffix:
            raise KisekaeError("unsupported garment file type (expected .mhclo or a garment name)", spec)
        else:
            avatar.part(spec)
            names.append(spec)
    return names

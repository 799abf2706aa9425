"""Files of a bake: PNG (8 and 16 bit), EXR (half and float), the start mesh as GLB, and a JSON sidecar.

Libraries: Pillow for 8-bit PNG, pypng for 16-bit RGB PNG (Pillow has no 16-bit RGB mode), the
Academy Software Foundation's ``OpenEXR`` bindings for EXR, pygltflib for GLB.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import KisekaeError, quote_name
from ..validate import inside_folder

SIDECAR_VERSION = 1


def write_png(path, image: np.ndarray) -> Path:
    """Write an ``(H, W, C)`` image, C in {1, 3, 4}, uint8 or uint16, as PNG (row 0 at the top)."""
    img = np.asarray(image)
    if img.ndim == 2:
        img = img[:, :, None]
    if img.ndim != 3 or img.shape[2] not in (1, 3, 4):
        raise KisekaeError(f"expected (H, W, 1|3|4), got {img.shape}", str(path))
    path = Path(path)
    if img.dtype == np.uint8:
        from PIL import Image
        mode = {1: "L", 3: "RGB", 4: "RGBA"}[img.shape[2]]
        Image.fromarray(img[:, :, 0] if img.shape[2] == 1 else img, mode=mode).save(path)
    elif img.dtype == np.uint16:
        import png
        h, w, c = img.shape
        writer = png.Writer(width=w, height=h, bitdepth=16, greyscale=(c == 1), alpha=(c == 4))
        with open(path, "wb") as fh:
            writer.write(fh, img.reshape(h, w * c).tolist())
    else:
        raise KisekaeError(f"PNG needs uint8 or uint16, got {img.dtype}", str(path))
    return path


def read_png(path) -> np.ndarray:
    """Read a PNG written by :func:`write_png` into ``(H, W, C)`` uint8 or uint16."""
    import png
    w, h, rows, info = png.Reader(filename=str(path)).read()
    planes = info["planes"]
    arr = np.vstack([np.asarray(r, dtype=np.uint16 if info["bitdepth"] > 8 else np.uint8) for r in rows])
    return arr.reshape(h, w, planes)


def write_exr(path, image: np.ndarray) -> Path:
    """Write an ``(H, W, 3)`` float16 or float32 image as an EXR (ZIP compression) with channels R, G, B."""
    import OpenEXR
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype not in (np.float16, np.float32):
        raise KisekaeError(f"EXR needs (H, W, 3) float16 or float32, got {img.shape} {img.dtype}", str(path))
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    OpenEXR.File(header, {"RGB": np.ascontiguousarray(img)}).write(str(path))
    return Path(path)


def read_exr(path) -> np.ndarray:
    """Read an RGB EXR into ``(H, W, 3)`` (dtype as stored)."""
    import OpenEXR
    with OpenEXR.File(str(path)) as f:
        return np.array(f.channels()["RGB"].pixels)


def write_glb(path, vertices, faces, normals=None, uvs=(), colors=None) -> Path:
    """Write a triangle mesh as a binary glTF.

    Parameters
    ----------
    vertices : (N, 3) float32 metres; faces : (F, 3) int.
    normals : (N, 3) float32, optional.
    uvs : sequence of (N, 2) float arrays (TEXCOORD_0, TEXCOORD_1, ...); ``None`` entries become zeros.
    colors : (N, 4) uint8, optional, COLOR_0 (normalised unsigned bytes).
    """
    import pygltflib as g

    v = np.ascontiguousarray(vertices, dtype=np.float32)
    f = np.ascontiguousarray(faces, dtype=np.uint32).reshape(-1)
    blobs = []
    accessors = []
    views = []
    offset = 0

    def add(arr, ctype, atype, target, normalized=False, minmax=False):
        nonlocal offset
        data = arr.tobytes()
        pad = (-len(data)) % 4
        views.append(g.BufferView(buffer=0, byteOffset=offset, byteLength=len(data), target=target))
        kw = {}
        if minmax:
            kw = {"min": arr.min(axis=0).tolist(), "max": arr.max(axis=0).tolist()}
        accessors.append(g.Accessor(bufferView=len(views) - 1, componentType=ctype, count=len(arr) if arr.ndim > 1
                                    else arr.size, type=atype, normalized=normalized or None, **kw))
        blobs.append(data + b"\0" * pad)
        offset += len(data) + pad
        return len(accessors) - 1

    attrs = g.Attributes(POSITION=add(v, g.FLOAT, g.VEC3, g.ARRAY_BUFFER, minmax=True))
    if normals is not None:
        attrs.NORMAL = add(np.ascontiguousarray(normals, dtype=np.float32), g.FLOAT, g.VEC3, g.ARRAY_BUFFER)
    for k, uv in enumerate(uvs):
        uv = np.zeros((len(v), 2), np.float32) if uv is None else np.ascontiguousarray(uv, dtype=np.float32)
        setattr(attrs, f"TEXCOORD_{k}", add(uv, g.FLOAT, g.VEC2, g.ARRAY_BUFFER))
    if colors is not None:
        attrs.COLOR_0 = add(np.ascontiguousarray(colors, dtype=np.uint8), g.UNSIGNED_BYTE, g.VEC4,
                            g.ARRAY_BUFFER, normalized=True)
    ind = add(f, g.UNSIGNED_INT, g.SCALAR, g.ELEMENT_ARRAY_BUFFER)
    gltf = g.GLTF2(
        scene=0, scenes=[g.Scene(nodes=[0])], nodes=[g.Node(mesh=0, name="wound_start")],
        meshes=[g.Mesh(primitives=[g.Primitive(attributes=attrs, indices=ind)])],
        accessors=accessors, bufferViews=views, buffers=[g.Buffer(byteLength=offset)])
    gltf.set_binary_blob(b"".join(blobs))
    gltf.save_binary(str(path))
    return Path(path)


def read_glb_attributes(path) -> dict:
    """Read back the arrays of the first primitive of a GLB written by :func:`write_glb`."""
    import pygltflib as g

    gltf = g.GLTF2().load_binary(str(path))
    blob = gltf.binary_blob()
    prim = gltf.meshes[0].primitives[0]
    dt = {g.FLOAT: np.float32, g.UNSIGNED_BYTE: np.uint8, g.UNSIGNED_INT: np.uint32}
    width = {g.SCALAR: 1, g.VEC2: 2, g.VEC3: 3, g.VEC4: 4}

    def get(i):
        a = gltf.accessors[i]
        bv = gltf.bufferViews[a.bufferView]
        arr = np.frombuffer(blob, dtype=dt[a.componentType], count=a.count * width[a.type],
                            offset=bv.byteOffset + (a.byteOffset or 0))
        return arr.reshape(a.count, width[a.type]) if width[a.type] > 1 else arr.copy()

    out = {k: get(v) for k, v in prim.attributes.__dict__.items() if v is not None}
    out["indices"] = get(prim.indices).reshape(-1, 3)
    return out


def bake_file_names(stem: str = "wound", encodings=None) -> dict:
    """Names of the files :func:`write_bake` writes for ``encodings``, known before baking.

    Parameters
    ----------
    stem : str
        File name prefix.
    encodings : iterable of str, optional
        Encoding names (default: every one in :data:`kisekae.wound.encode.ENCODINGS`, the most a
        bake can write).

    Returns
    -------
    dict
        ``"mesh"`` and ``"sidecar"``, and ``"<encoding>.<kind>"`` (kind ``vertex_colors``,
        ``positions``, ``normals``) -> file name. Float textures are EXR, integer ones PNG, and
        the 8-bit encodings keep positions in vertex colours (an image in texel order).
    """
    from .encode import ENCODINGS

    names = {"mesh": f"{stem}_start.glb"}
    for name in (ENCODINGS if encodings is None else encodings):
        if name not in ENCODINGS:
            raise KisekaeError(f"unknown encoding {name!r}; choose from {', '.join(ENCODINGS)}", "encodings")
        _, pos, nrm, _ = ENCODINGS[name]
        if pos == "vertex_color8":
            names[f"{name}.vertex_colors"] = f"{stem}_{name}_vc.png"
        for kind, short, storage in (("positions", "pos", pos), ("normals", "nrm", nrm)):
            if storage != "vertex_color8":
                names[f"{name}.{kind}"] = f"{stem}_{name}_{short}.{'exr' if storage.startswith('float') else 'png'}"
    names["sidecar"] = f"{stem}.json"
    return names


def write_bake(result, out_dir, stem: str = "wound") -> dict:
    """Write a :class:`~kisekae.wound.bake.BakeResult` to ``out_dir``.

    Files (``<stem>`` prefix):
    ``_start.glb`` the start mesh (POSITION, NORMAL, TEXCOORD_0 own UVs, TEXCOORD_1 correspondence
    UVs, TEXCOORD_2 texel address of the vertex data, COLOR_0 the 8-bit vertex colours of the
    ``article8`` (or first) encoding: RGB positions, A body part);
    ``_<enc>_vc.png`` vertex colours for the 8-bit encodings as an image in texel order;
    ``_<enc>_pos.png|exr`` and ``_<enc>_nrm.png|exr`` textures;
    ``.json`` the sidecar (bounds, encodings, correspondence report, error table).

    Returns
    -------
    dict name -> path of everything written.
    """
    out = Path(out_dir)
    names = bake_file_names(stem, result.encodings)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    first = "article8" if "article8" in result.encodings else next(iter(result.encodings), None)
    side = result.encodings[first].side if first else 1
    paths["mesh"] = write_glb(out / names["mesh"], result.start_vertices, result.start_faces,
                              result.start_normals, uvs=(result.uv0, result.uv1, result.texel_uv(first) if first
                                                         else None),
                              colors=result.encodings[first].vertex_colors if first else None)
    enc_meta = {}
    for name, e in result.encodings.items():
        files = {}
        if e.position_texture is None:
            vc = np.zeros((e.side * e.side, 4), np.uint8)
            vc[: len(e.vertex_colors)] = e.vertex_colors
            files["vertex_colors"] = write_png(out / names[f"{name}.vertex_colors"],
                                               vc.reshape(e.side, e.side, 4)).name
        for kind, tex in (("positions", e.position_texture), ("normals", e.normal_texture)):
            if tex is None:
                continue
            path = out / names[f"{name}.{kind}"]
            p = write_exr(path, tex) if path.suffix == ".exr" else write_png(path, tex)
            files[kind] = p.name
        paths.update({f"{name}.{k}": out / v for k, v in files.items()})
        enc_meta[name] = {**e.sidecar(), "files": files}
    sidecar = {
        "kisekae_wound": SIDECAR_VERSION,
        "units": "metres",
        "frame": "glTF (+Y up, right-handed, faces +Z)",
        "start_role": result.start_role,
        "morph_weight": "p" if result.start_role == "normal" else "1 - p",
        "vertices": int(len(result.start_vertices)),
        "texel_uv_side": int(side),
        "mesh": paths["mesh"].name,
        "mesh_attributes": {"TEXCOORD_0": "own UVs", "TEXCOORD_1": "correspondence UVs",
                            "TEXCOORD_2": f"texel centre of the vertex data ({first})",
                            "COLOR_0": f"{first} vertex colours: RGB positions (8-bit encodings), A body part"},
        "correspondence": result.correspondence.summary(),
        "encodings": enc_meta,
        "skipped_encodings": result.skipped,
        "errors": result.errors,
    }
    sp = out / names["sidecar"]
    sp.write_text(json.dumps(sidecar, indent=1))
    paths["sidecar"] = sp
    return paths


def _read_named(reader, path: Path, what: str, sidecar: Path):
    """Read a file a sidecar names; any failure becomes one line naming it (never the file's text)."""
    if not path.is_file():
        raise KisekaeError(f"{what}: file not found: {path.name}", str(sidecar))
    try:
        return reader(path)
    except Exception as exc:  # noqa: BLE001 - third-party readers raise many types; report which, not its text
        raise KisekaeError(f"{what}: cannot read {path.name} ({type(exc).__name__})", str(sidecar)) from None


def load_bake(sidecar, encoding: str | None = None) -> dict:
    """Read a bake written by :func:`write_bake` and decode one encoding as the shader would.

    Parameters
    ----------
    sidecar : path of the ``.json`` sidecar.
    encoding : str, optional; default the most precise one present (float, delta16, half, delta8, article8).

    Returns
    -------
    dict with ``vertices`` (N, 3) float32, ``faces`` (F, 3), ``normals`` (N, 3), ``parts`` (N,) uint8,
    ``target_positions`` and ``target_normals`` (N, 3) float64, ``encoding`` and ``sidecar`` (the JSON).
    """
    import json

    from .encode import ENCODINGS, Encoded, decode

    sp = Path(sidecar)
    if not sp.exists():
        raise KisekaeError("file not found", str(sp))
    try:
        meta = json.loads(sp.read_text())
        encs = meta["encodings"]
    except (ValueError, KeyError, TypeError) as exc:
        raise KisekaeError(f"not a kisekae wound sidecar ({type(exc).__name__})", str(sp)) from None
    if not isinstance(encs, dict) or not all(isinstance(k, str) for k in encs):
        raise KisekaeError("not a kisekae wound sidecar (encodings must be an object)", str(sp))
    if encoding is None:
        encoding = next((k for k in ("float", "delta16", "half", "delta8", "article8") if k in encs), None)
    if encoding not in encs:
        raise KisekaeError(f"encoding {encoding!r} is not in this bake (has {', '.join(map(quote_name, encs))})",
                           str(sp))
    e = encs[encoding]
    d = sp.parent
    try:
        files = e["files"]
        n = int(meta["vertices"])
        side = int(e["texture_side"])
        mesh_name = meta["mesh"]
        names = {k: files[k] for k in (("vertex_colors",) if ENCODINGS[encoding][1] == "vertex_color8"
                                       else ("positions",)) + ("normals",)}
    except (KeyError, TypeError, ValueError) as exc:
        what = f"missing key {quote_name(exc.args[0])}" if isinstance(exc, KeyError) else "malformed values"
        raise KisekaeError(f"not a kisekae wound sidecar ({what})", str(sp)) from None
    # Every file the sidecar names must lie in its own folder, checked before any of them is opened.
    mesh_path = inside_folder(mesh_name, d, str(sp), "mesh")
    paths = {k: inside_folder(v, d, str(sp), f"encodings.{encoding}.files.{k}") for k, v in names.items()}
    mesh = _read_named(read_glb_attributes, mesh_path, "mesh", sp)
    pos_store = ENCODINGS[encoding][1]
    vc = np.zeros((n, 4), np.uint8)
    pos_tex = None
    if pos_store == "vertex_color8":
        vc = _read_named(read_png, paths["vertex_colors"], "vertex_colors", sp).reshape(-1, 4)[:n].astype(np.uint8)
    else:
        f = paths["positions"]
        pos_tex = _read_named(read_exr if f.suffix == ".exr" else read_png, f, "positions", sp)
    f = paths["normals"]
    nrm_tex = _read_named(read_exr if f.suffix == ".exr" else read_png, f, "normals", sp)
    if ENCODINGS[encoding][2] == "unorm8":
        nrm_tex = nrm_tex.astype(np.uint8)
    enc = Encoded(encoding, side, np.array(e["bounds_min_m"]), np.array(e["bounds_max_m"]), vc, pos_tex, nrm_tex)
    tp, tn = decode(enc, mesh["POSITION"])
    parts = mesh["COLOR_0"][:, 3].copy() if "COLOR_0" in mesh else np.zeros(n, np.uint8)
    return {"vertices": mesh["POSITION"], "faces": mesh["indices"].astype(np.int32), "normals": mesh.get("NORMAL"),
            "parts": parts, "target_positions": tp, "target_normals": tn, "encoding": encoding, "sidecar": meta}

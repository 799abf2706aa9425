"""Checked low-level reading of glTF 2.0 / GLB containers, buffers and accessors.

Everything a stranger's file declares is checked before it is used: sizes against the file and
against :class:`Limits` before any allocation, every index against the array it points into, URIs
against the asset's folder. Every problem is a :class:`~kisekae.errors.KisekaeError` naming the
file and the JSON path (``accessors[3].count``) of the bad value.

pygltflib is not used for reading: its loader follows any URI it finds and allocates whatever a
file declares. It is used to write (:mod:`kisekae.io.gltf`).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import struct
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import KisekaeError
from ..validate import inside_folder

GLB_MAGIC = b"glTF"
CHUNK_JSON = 0x4E4F534A
CHUNK_BIN = 0x004E4942

#: componentType -> (little-endian NumPy dtype, byte size)
COMPONENT_TYPES = {
    5120: (np.dtype("<i1"), 1),
    5121: (np.dtype("<u1"), 1),
    5122: (np.dtype("<i2"), 2),
    5123: (np.dtype("<u2"), 2),
    5125: (np.dtype("<u4"), 4),
    5126: (np.dtype("<f4"), 4),
}
#: accessor type -> number of components
TYPE_SIZES = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}

#: Extensions whose data we can read (anything else in ``extensionsRequired`` is refused).
SUPPORTED_REQUIRED_EXTENSIONS = {"KHR_mesh_quantization", "KHR_texture_transform", "KHR_materials_unlit",
                                 "KHR_texture_basisu", "KHR_materials_emissive_strength"}

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


@dataclass(frozen=True)
class Limits:
    """Size caps applied before allocating (bytes unless noted).

    Attributes
    ----------
    max_file_bytes : int, default 1 GiB
        The .glb/.gltf file itself.
    max_json_bytes : int, default 64 MiB
        The JSON document (chunk or file).
    max_buffer_bytes : int, default 1 GiB
        All buffers together (GLB chunk, data URIs, external files).
    max_data_uri_bytes : int, default 256 MiB
        One decoded ``data:`` URI.
    max_accessor_elements : int, default 16 Mi
        ``count x components`` of one accessor.
    max_nodes : int, default 100,000
        Nodes, meshes, accessors, ... per array in the JSON.
    max_frames : int, default 20,000
        Animation frames sampled on import.
    """

    max_file_bytes: int = 1 << 30
    max_json_bytes: int = 64 << 20
    max_buffer_bytes: int = 1 << 30
    max_data_uri_bytes: int = 256 << 20
    max_accessor_elements: int = 16 << 20
    max_nodes: int = 100_000
    max_frames: int = 20_000


DEFAULT_LIMITS = Limits()


# ----------------------------------------------------------------------------- JSON field checks
def get_list(d: dict, key: str, where: str, src, limits: Limits = DEFAULT_LIMITS) -> list:
    """``d[key]`` as a list (``[]`` when absent)."""
    v = d.get(key, [])
    if not isinstance(v, list):
        raise KisekaeError(f"{where}.{key} must be an array", src)
    if len(v) > limits.max_nodes:
        raise KisekaeError(f"{where}.{key} has {len(v)} entries, more than the cap {limits.max_nodes}", src)
    return v


def get_dict(d: dict, key: str, where: str, src) -> dict:
    v = d.get(key, {})
    if not isinstance(v, dict):
        raise KisekaeError(f"{where}.{key} must be an object", src)
    return v


def get_int(d: dict, key: str, where: str, src, *, default=None, lo: int = 0, hi: int | None = None) -> int | None:
    """``d[key]`` as an int in ``[lo, hi)``, or ``default`` when the key is absent."""
    if key not in d:
        return default
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
        raise KisekaeError(f"{where}.{key} must be an integer, got {v!r:.40}", src)
    v = int(v)
    if v < lo or (hi is not None and v >= hi):
        rng = f"{lo}..{hi - 1}" if hi is not None else f">= {lo}"
        raise KisekaeError(f"{where}.{key} = {v} is out of range ({rng})", src)
    return v


def need_int(d: dict, key: str, where: str, src, *, lo: int = 0, hi: int | None = None) -> int:
    if key not in d:
        raise KisekaeError(f"{where}.{key} is missing", src)
    return get_int(d, key, where, src, lo=lo, hi=hi)


def index_into(v, n: int, what: str, where: str, src) -> int:
    """A reference ``v`` into an array of ``n`` items."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise KisekaeError(f"{where} must be an integer index into {what}, got {v!r:.40}", src)
    if not 0 <= v < n:
        raise KisekaeError(f"{where} = {v} does not exist ({what} has {n} entries)", src)
    return v


def get_numbers(d: dict, key: str, n: int, where: str, src, default=None) -> np.ndarray | None:
    """``d[key]`` as ``n`` finite floats."""
    if key not in d:
        return None if default is None else np.asarray(default, dtype=np.float64)
    v = d[key]
    if (not isinstance(v, list) or len(v) != n
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)):
        raise KisekaeError(f"{where}.{key} must be {n} numbers", src)
    a = np.asarray(v, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise KisekaeError(f"{where}.{key} is not finite", src)
    return a


def get_str(d: dict, key: str, where: str, src, default: str | None = None) -> str | None:
    v = d.get(key, default)
    if v is not None and not isinstance(v, str):
        raise KisekaeError(f"{where}.{key} must be a string", src)
    return v


# ----------------------------------------------------------------------------- container
@dataclass
class GltfDocument:
    """A parsed glTF asset: the JSON object and its buffers (checked, not yet interpreted).

    Attributes
    ----------
    json : dict
    buffers : list of bytes-like, one per ``buffers[i]``, each exactly ``byteLength`` long
    path : Path of the file, used in error messages and to resolve external URIs
    is_glb : bool
    limits : Limits
    """

    json: dict
    buffers: list
    path: Path
    is_glb: bool
    limits: Limits = DEFAULT_LIMITS
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def src(self) -> str:
        return str(self.path)

    def array(self, key: str) -> list:
        """A top-level array (``nodes``, ``meshes``, ...), checked to be a list of objects."""
        v = get_list(self.json, key, "glTF", self.src, self.limits)
        for i, item in enumerate(v):
            if not isinstance(item, dict):
                raise KisekaeError(f"{key}[{i}] must be an object", self.src)
        return v

    def accessor(self, index, where: str = "accessor") -> np.ndarray:
        """Read accessor ``index`` (see :func:`read_accessor`); results are cached."""
        accessors = self.array("accessors")
        i = index_into(index, len(accessors), "accessors", where, self.src)
        if i not in self._cache:
            self._cache[i] = read_accessor(self, i)
        return self._cache[i]

    def accessor_info(self, index) -> tuple:
        """``(type, componentType, normalized, count)`` of an accessor, checked."""
        acc = self.array("accessors")[index]
        return _accessor_header(acc, f"accessors[{index}]", self.src, self.limits)


def _check_json(doc, src, limits: Limits) -> dict:
    if not isinstance(doc, dict):
        raise KisekaeError("the glTF JSON must be an object", src)
    asset = doc.get("asset")
    if not isinstance(asset, dict) or not isinstance(asset.get("version"), str):
        raise KisekaeError("asset.version is missing; not a glTF file", src)
    major = asset["version"].split(".")[0]
    if major != "2":
        raise KisekaeError(f"glTF version {asset['version']!r} is not supported (need 2.x)", src)
    required = get_list(doc, "extensionsRequired", "glTF", src, limits)
    unsupported = [e for e in required if not isinstance(e, str) or e not in SUPPORTED_REQUIRED_EXTENSIONS]
    if unsupported:
        raise KisekaeError(f"the file requires extensions kisekae cannot read: {', '.join(map(str, unsupported))}", src)
    return doc


def _parse_json(raw: bytes, src, limits: Limits) -> dict:
    if len(raw) > limits.max_json_bytes:
        raise KisekaeError(f"JSON is {len(raw)} bytes, more than the cap {limits.max_json_bytes}", src)
    try:
        text = raw.decode("utf-8-sig")
        doc = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"{c} is not JSON")))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise KisekaeError(f"invalid JSON: {str(exc)[:200]}", src) from None
    return _check_json(doc, src, limits)


def _parse_glb(data: bytes, src, limits: Limits) -> tuple:
    if len(data) < 20:
        raise KisekaeError("GLB file is truncated (shorter than its header)", src)
    magic, version, length = struct.unpack_from("<4sII", data, 0)
    if version != 2:
        raise KisekaeError(f"GLB container version {version} is not supported (need 2)", src)
    if length > len(data):
        raise KisekaeError(f"GLB header declares {length} bytes but the file has {len(data)}", src)
    if length < 20:
        raise KisekaeError(f"GLB header declares an impossible length {length}", src)
    pos, chunks = 12, []
    while pos < length:
        if pos + 8 > length:
            raise KisekaeError(f"GLB chunk header at byte {pos} is truncated", src)
        clen, ctype = struct.unpack_from("<II", data, pos)
        start = pos + 8
        if clen > length - start:
            raise KisekaeError(f"GLB chunk at byte {pos} declares {clen} bytes, only {length - start} remain", src)
        chunks.append((ctype, start, clen))
        pos = start + clen + (-clen % 4)
    if not chunks or chunks[0][0] != CHUNK_JSON:
        raise KisekaeError("GLB does not start with a JSON chunk", src)
    _, js, jl = chunks[0]
    doc = _parse_json(bytes(data[js:js + jl]), src, limits)
    bin_chunk = None
    if len(chunks) > 1 and chunks[1][0] == CHUNK_BIN:
        _, bs, bl = chunks[1]
        bin_chunk = memoryview(data)[bs:bs + bl]
    return doc, bin_chunk


def resolve_uri(uri: str, folder: Path, src, where: str) -> Path:
    """The file an external URI names, which must lie inside ``folder``.

    Rejects URIs with a scheme (``http:``, ``file:``, ``C:``...), absolute paths, ``..`` segments
    and anything that resolves (after following links) outside the folder.
    """
    if not isinstance(uri, str) or not uri:
        raise KisekaeError(f"{where}.uri must be a non-empty string", src)
    if _SCHEME.match(uri):
        raise KisekaeError(f"{where}.uri {uri[:80]!r}: only relative file paths and data: URIs are allowed", src)
    path_part = urllib.parse.unquote(uri.split("#", 1)[0].split("?", 1)[0])
    if not path_part:
        raise KisekaeError(f"{where}.uri {uri[:80]!r} names no file", src)
    return inside_folder(path_part, folder, src, f"{where}.uri")


def decode_data_uri(uri: str, src, where: str, cap: int) -> bytes:
    """Decode a ``data:`` URI, checking its size against ``cap`` before decoding."""
    head, sep, payload = uri.partition(",")
    if not sep:
        raise KisekaeError(f"{where}.uri is a malformed data URI (no ',')", src)
    if len(payload) > cap * 4 // 3 + 8:
        raise KisekaeError(f"{where}.uri data URI is larger than the cap {cap} bytes", src)
    if head.endswith(";base64"):
        try:
            return base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise KisekaeError(f"{where}.uri has invalid base64 data ({exc})", src) from None
    return urllib.parse.unquote_to_bytes(payload)


def load_document(path, limits: Limits = DEFAULT_LIMITS) -> GltfDocument:
    """Read and check a .gltf, .glb or .vrm file and all of its buffers.

    Parameters
    ----------
    path : str or PathLike
    limits : Limits

    Returns
    -------
    GltfDocument

    Raises
    ------
    KisekaeError
        On any malformed container, JSON, buffer or URI, or a size over the limits.
    """
    path = Path(path)
    src = str(path)
    if not path.is_file():
        raise KisekaeError("file not found", src)
    size = path.stat().st_size
    if size > limits.max_file_bytes:
        raise KisekaeError(f"file is {size} bytes, more than the cap {limits.max_file_bytes}", src)
    data = path.read_bytes()
    if not data:
        raise KisekaeError("the file is empty (0 bytes)", src)
    is_glb = data[:4] == GLB_MAGIC
    if not is_glb and path.suffix.lower() in (".glb", ".vrm"):
        raise KisekaeError(f"not a binary glTF: a {path.suffix.lower()} file starts with the bytes 'glTF'", src)
    if is_glb:
        doc, bin_chunk = _parse_glb(data, src, limits)
    else:
        doc, bin_chunk = _parse_json(data, src, limits), None
    buffers, total = [], 0
    for i, b in enumerate(get_list(doc, "buffers", "glTF", src, limits)):
        where = f"buffers[{i}]"
        if not isinstance(b, dict):
            raise KisekaeError(f"{where} must be an object", src)
        n = need_int(b, "byteLength", where, src, lo=1)
        total += n
        if total > limits.max_buffer_bytes:
            raise KisekaeError(f"buffers declare {total} bytes, more than the cap {limits.max_buffer_bytes}", src)
        uri = b.get("uri")
        if uri is None:
            if i != 0 or bin_chunk is None:
                raise KisekaeError(f"{where} has no uri and there is no GLB binary chunk for it", src)
            blob = bin_chunk
        elif isinstance(uri, str) and uri.startswith("data:"):
            blob = decode_data_uri(uri, src, where, limits.max_data_uri_bytes)
            if len(blob) > n + 3:  # up to 3 bytes of padding are allowed, as in a GLB binary chunk
                raise KisekaeError(f"{where}.byteLength is {n} but its data URI holds {len(blob)} bytes "
                                   "(byteLength mismatch)", src)
        else:
            target = resolve_uri(uri, path.parent, src, where)
            if not target.is_file():
                raise KisekaeError(f"{where}.uri {uri[:80]!r}: file not found", src)
            fsize = target.stat().st_size
            if fsize < n:
                raise KisekaeError(f"{where} declares {n} bytes but {uri[:80]!r} has only {fsize}", src)
            with open(target, "rb") as fh:
                blob = fh.read(n)
        if len(blob) < n:
            raise KisekaeError(f"{where} declares {n} bytes but only {len(blob)} are present", src)
        buffers.append(memoryview(blob)[:n])
    return GltfDocument(doc, buffers, path, is_glb, limits)


# ----------------------------------------------------------------------------- accessors
def _accessor_header(acc: dict, where: str, src, limits: Limits) -> tuple:
    ctype = need_int(acc, "componentType", where, src)
    if ctype not in COMPONENT_TYPES:
        raise KisekaeError(f"{where}.componentType {ctype} is not a glTF component type", src)
    atype = acc.get("type")
    if not isinstance(atype, str) or atype not in TYPE_SIZES:
        raise KisekaeError(f"{where}.type {atype!r:.40} is not a glTF accessor type", src)
    count = need_int(acc, "count", where, src, lo=1)
    normalized = acc.get("normalized", False)
    if not isinstance(normalized, bool):
        raise KisekaeError(f"{where}.normalized must be true or false", src)
    if normalized and ctype in (5125, 5126):
        raise KisekaeError(f"{where} is normalized but its componentType {ctype} cannot be", src)
    if count * TYPE_SIZES[atype] > limits.max_accessor_elements:
        raise KisekaeError(f"{where} declares {count} x {TYPE_SIZES[atype]} values, more than the cap "
                           f"{limits.max_accessor_elements}", src)
    return atype, ctype, normalized, count


def _element_layout(atype: str, csize: int) -> tuple:
    """(columns, rows, column stride in bytes, element size in bytes) with glTF's matrix column padding."""
    if atype.startswith("MAT"):
        n = int(atype[3])
        col = n * csize
        col_stride = col + (-col % 4)
        return n, n, col_stride, col_stride * (n - 1) + col
    n = TYPE_SIZES[atype]
    return 1, n, n * csize, n * csize


def _view_slice(doc: GltfDocument, view_index, where: str) -> tuple:
    """(memoryview of the bufferView, byteStride or None)."""
    views = doc.array("bufferViews")
    vi = index_into(view_index, len(views), "bufferViews", f"{where}.bufferView", doc.src)
    v = views[vi]
    vw = f"bufferViews[{vi}]"
    bi = index_into(v.get("buffer"), len(doc.buffers), "buffers", f"{vw}.buffer", doc.src)
    off = get_int(v, "byteOffset", vw, doc.src, default=0)
    length = need_int(v, "byteLength", vw, doc.src, lo=1)
    buf = doc.buffers[bi]
    if off + length > len(buf):
        raise KisekaeError(f"{vw} spans bytes {off}..{off + length} but buffers[{bi}] has {len(buf)}", doc.src)
    stride = get_int(v, "byteStride", vw, doc.src, default=None, lo=4, hi=253)
    if stride is not None and stride % 4:
        raise KisekaeError(f"{vw}.byteStride {stride} is not a multiple of 4", doc.src)
    return buf[off:off + length], stride


def _read_strided(mem, offset: int, count: int, stride: int, atype: str, dtype, csize: int, src, where: str):
    cols, rows, col_stride, elem = _element_layout(atype, csize)
    if stride < elem:
        raise KisekaeError(f"{where}: byteStride {stride} is smaller than one element ({elem} bytes)", src)
    need = offset + stride * (count - 1) + elem
    if need > len(mem):
        raise KisekaeError(f"{where}: {count} elements at offset {offset} with stride {stride} need {need} bytes, "
                           f"the bufferView has {len(mem)}", src)
    raw = np.frombuffer(mem, dtype=np.uint8, count=need - offset, offset=offset)
    if atype.startswith("MAT"):
        out = np.lib.stride_tricks.as_strided(raw.view(np.uint8), shape=(count, cols, rows * csize),
                                              strides=(stride, col_stride, 1))
        out = np.ascontiguousarray(out).view(dtype).reshape(count, cols * rows)
    else:
        out = np.lib.stride_tricks.as_strided(raw, shape=(count, elem), strides=(stride, 1))
        out = np.ascontiguousarray(out).view(dtype).reshape(count, rows)
    return out


def _normalize(a: np.ndarray, ctype: int) -> np.ndarray:
    if ctype == 5120:
        return np.maximum(a.astype(np.float64) / 127.0, -1.0)
    if ctype == 5121:
        return a.astype(np.float64) / 255.0
    if ctype == 5122:
        return np.maximum(a.astype(np.float64) / 32767.0, -1.0)
    if ctype == 5123:
        return a.astype(np.float64) / 65535.0
    return a.astype(np.float64)


def read_accessor(doc: GltfDocument, index: int) -> np.ndarray:
    """Decode accessor ``index``: strides, matrix padding, sparse substitution, normalisation.

    Returns
    -------
    ndarray
        ``(count,)`` for SCALAR, ``(count, n)`` for VECn, ``(count, n, n)`` for MATn (row-major
        math matrices, converted from glTF's column-major storage). Float components and
        normalized integers come back as float64; other integers keep their integer dtype.
    """
    src = doc.src
    where = f"accessors[{index}]"
    acc = doc.array("accessors")[index]
    atype, ctype, normalized, count = _accessor_header(acc, where, src, doc.limits)
    dtype, csize = COMPONENT_TYPES[ctype]
    ncomp = TYPE_SIZES[atype]
    offset = get_int(acc, "byteOffset", where, src, default=0)
    if offset % csize:
        raise KisekaeError(f"{where}.byteOffset {offset} is not a multiple of the component size {csize}", src)
    if "bufferView" in acc:
        mem, stride = _view_slice(doc, acc["bufferView"], where)
        elem = _element_layout(atype, csize)[3]
        data = _read_strided(mem, offset, count, stride or elem, atype, dtype, csize, src, where)
    else:
        if "byteOffset" in acc and offset:
            raise KisekaeError(f"{where} has a byteOffset but no bufferView", src)
        data = np.zeros((count, ncomp), dtype=dtype)
    if "sparse" in acc:
        data = np.array(data)  # writable copy
        sp = acc["sparse"]
        sw = f"{where}.sparse"
        if not isinstance(sp, dict):
            raise KisekaeError(f"{sw} must be an object", src)
        scount = need_int(sp, "count", sw, src, lo=1, hi=count + 1)
        ind, val = sp.get("indices"), sp.get("values")
        if not isinstance(ind, dict) or not isinstance(val, dict):
            raise KisekaeError(f"{sw} needs 'indices' and 'values' objects", src)
        ictype = need_int(ind, "componentType", f"{sw}.indices", src)
        if ictype not in (5121, 5123, 5125):
            raise KisekaeError(f"{sw}.indices.componentType {ictype} must be an unsigned integer type", src)
        idtype, isize = COMPONENT_TYPES[ictype]
        imem, _ = _view_slice(doc, ind.get("bufferView"), f"{sw}.indices")
        ioff = get_int(ind, "byteOffset", f"{sw}.indices", src, default=0)
        idx = _read_strided(imem, ioff, scount, isize, "SCALAR", idtype, isize, src, f"{sw}.indices")[:, 0]
        idx = idx.astype(np.int64)
        if np.any(np.diff(idx) <= 0):
            raise KisekaeError(f"{sw}.indices must be strictly increasing", src)
        if idx.max() >= count:
            raise KisekaeError(f"{sw}.indices reach {idx.max()}, the accessor has {count} elements", src)
        vmem, _ = _view_slice(doc, val.get("bufferView"), f"{sw}.values")
        voff = get_int(val, "byteOffset", f"{sw}.values", src, default=0)
        elem = _element_layout(atype, csize)[3]
        vals = _read_strided(vmem, voff, scount, elem, atype, dtype, csize, src, f"{sw}.values")
        data[idx] = vals
    if ctype == 5126:
        with np.errstate(invalid="ignore"):  # signalling NaNs raise the flag on conversion; caught below
            data = data.astype(np.float64)
        if not np.all(np.isfinite(data)):
            raise KisekaeError(f"{where} contains NaN or infinite values", src)
    elif normalized:
        data = _normalize(data, ctype)
    if atype == "SCALAR":
        return data[:, 0]
    if atype.startswith("MAT"):
        n = int(atype[3])
        return np.ascontiguousarray(data.reshape(count, n, n).transpose(0, 2, 1))
    return data


def accessor_as(doc: GltfDocument, index, where: str, *, types, float_ok=True, int_ok=False,
                count: int | None = None) -> np.ndarray:
    """Read an accessor that must have one of ``types`` (and ``count`` elements when given)."""
    accessors = doc.array("accessors")
    i = index_into(index, len(accessors), "accessors", where, doc.src)
    atype, ctype, normalized, n = doc.accessor_info(i)
    if atype not in types:
        raise KisekaeError(f"{where}: accessors[{i}] has type {atype}, expected {' or '.join(types)}", doc.src)
    is_float = ctype == 5126 or normalized
    if (is_float and not float_ok) or (not is_float and not int_ok):
        kind = "float or normalized" if is_float else "integer"
        raise KisekaeError(f"{where}: accessors[{i}] holds {kind} values, which this attribute does not allow", doc.src)
    if count is not None and n != count:
        raise KisekaeError(f"{where}: accessors[{i}] has {n} elements, expected {count}", doc.src)
    return doc.accessor(i, where)


def quaternion_matrix(q) -> np.ndarray:
    """(3, 3) rotation of a unit quaternion ``(x, y, z, w)`` (normalised here; zero -> identity)."""
    x, y, z, w = np.asarray(q, dtype=np.float64)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if n == 0 or not math.isfinite(n):
        return np.eye(3)
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def matrix_quaternion(m) -> np.ndarray:
    """Unit quaternion ``(x, y, z, w)`` of a (3, 3) rotation (Shepperd's method), ``w >= 0``."""
    m = np.asarray(m, dtype=np.float64)
    t = np.trace(m)
    if t > 0:
        s = math.sqrt(t + 1.0) * 2
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = [0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = [(m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s, (m[1, 0] - m[0, 1]) / s]
    q = np.asarray(q)
    q /= np.linalg.norm(q)
    return -q if q[3] < 0 else q


def polar_rotation(m) -> np.ndarray:
    """The rotation nearest to a (3, 3) matrix (polar decomposition via SVD); reflections are kept out."""
    u, _, vt = np.linalg.svd(np.asarray(m, dtype=np.float64))
    d = np.sign(np.linalg.det(u @ vt)) or 1.0
    return u @ np.diag([1.0, 1.0, d]) @ vt


def trs_matrix(t, q, s) -> np.ndarray:
    """(4, 4) ``T @ R @ S`` from translation (3,), quaternion (x, y, z, w) and scale (3,)."""
    m = np.eye(4)
    m[:3, :3] = quaternion_matrix(q) * np.asarray(s, dtype=np.float64)[None, :]
    m[:3, 3] = t
    return m


def decompose_trs(m) -> tuple:
    """(translation, quaternion, scale) of an affine (4, 4) matrix without shear."""
    m = np.asarray(m, dtype=np.float64)
    t = m[:3, 3].copy()
    s = np.linalg.norm(m[:3, :3], axis=0)
    if np.linalg.det(m[:3, :3]) < 0:
        s[0] = -s[0]
    r = m[:3, :3] / np.where(s == 0, 1.0, s)[None, :]
    return t, matrix_quaternion(polar_rotation(r)), s

"""A tiny glTF writer for tests: hand-made files with exact, known contents (no kisekae code involved)."""

from __future__ import annotations

import base64
import json
import struct

import numpy as np
from scipy.spatial.transform import Rotation

DT = {5120: "<i1", 5121: "<u1", 5122: "<i2", 5123: "<u2", 5125: "<u4", 5126: "<f4"}
TYPES = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 16: "MAT4"}


class Kit:
    """Collects bufferViews/accessors on one buffer and writes .glb or .gltf."""

    def __init__(self):
        self.blob = bytearray()
        self.views, self.accessors = [], []

    def view(self, raw: bytes, stride=None) -> int:
        self.blob += b"\0" * (-len(self.blob) % 4)
        v = {"buffer": 0, "byteOffset": len(self.blob), "byteLength": len(raw)}
        if stride:
            v["byteStride"] = stride
        self.blob += raw
        self.views.append(v)
        return len(self.views) - 1

    def add(self, a, ctype=5126, atype=None, *, normalized=False, stride=None, sparse=None) -> int:
        a = np.asarray(a)
        n = len(a)
        comps = 1 if a.ndim == 1 else int(np.prod(a.shape[1:]))
        atype = atype or TYPES[comps]
        flat = np.ascontiguousarray(a.reshape(n, comps), dtype=DT[ctype])
        if stride:
            elem = flat.itemsize * comps
            raw = bytearray(stride * n)
            for i in range(n):
                raw[i * stride:i * stride + elem] = flat[i].tobytes()
            raw = bytes(raw)
        else:
            raw = flat.tobytes()
        acc = {"bufferView": self.view(raw, stride), "componentType": ctype, "count": n, "type": atype}
        if normalized:
            acc["normalized"] = True
        if atype == "VEC3" and ctype == 5126:
            acc["min"] = flat.min(0).tolist()
            acc["max"] = flat.max(0).tolist()
        if sparse is not None:
            idx, vals = sparse
            vals = np.ascontiguousarray(np.asarray(vals).reshape(len(idx), comps), dtype=DT[ctype])
            acc["sparse"] = {"count": len(idx),
                             "indices": {"bufferView": self.view(np.asarray(idx, "<u2").tobytes()), "componentType": 5123},
                             "values": {"bufferView": self.view(vals.tobytes())}}
        self.accessors.append(acc)
        return len(self.accessors) - 1

    def document(self, doc: dict) -> dict:
        d = dict(doc)
        d.setdefault("asset", {"version": "2.0"})
        d["bufferViews"], d["accessors"] = self.views, self.accessors
        return d

    def write_glb(self, path, doc: dict):
        d = self.document(doc)
        blob = bytes(self.blob) + b"\0" * (-len(self.blob) % 4)
        d["buffers"] = [{"byteLength": len(blob)}]
        js = json.dumps(d).encode()
        js += b" " * (-len(js) % 4)
        out = struct.pack("<4sII", b"glTF", 2, 12 + 8 + len(js) + 8 + len(blob))
        out += struct.pack("<II", len(js), 0x4E4F534A) + js + struct.pack("<II", len(blob), 0x004E4942) + blob
        path.write_bytes(out)
        return path

    def write_gltf(self, path, doc: dict, *, uri=None):
        d = self.document(doc)
        blob = bytes(self.blob)
        if uri is None:
            uri = "data:application/octet-stream;base64," + base64.b64encode(blob).decode()
        else:
            (path.parent / uri).write_bytes(blob)
        d["buffers"] = [{"byteLength": len(blob), "uri": uri}]
        path.write_text(json.dumps(d))
        return path


def quat(axis, degrees):
    """(x, y, z, w) quaternion (scipy)."""
    return Rotation.from_rotvec(np.radians(degrees) * np.asarray(axis, float) / np.linalg.norm(axis)).as_quat()


def trs(t=(0, 0, 0), q=(0, 0, 0, 1), s=(1, 1, 1)):
    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat(q).as_matrix() * np.asarray(s, float)
    m[:3, 3] = t
    return m


def cylinder(n_ring=8, n_rows=5, radius=0.05, y0=0.0, y1=0.8):
    """Open cylinder along +Y: vertices (n_rows*n_ring, 3), triangles."""
    a = np.linspace(0, 2 * np.pi, n_ring, endpoint=False)
    ys = np.linspace(y0, y1, n_rows)
    v = np.array([[radius * np.cos(t), y, radius * np.sin(t)] for y in ys for t in a])
    f = []
    for r in range(n_rows - 1):
        for k in range(n_ring):
            i0, i1 = r * n_ring + k, r * n_ring + (k + 1) % n_ring
            j0, j1 = i0 + n_ring, i1 + n_ring
            f += [[i0, j0, i1], [i1, j0, j1]]
    return v, np.array(f)

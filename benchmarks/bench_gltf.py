#!/usr/bin/env python3
"""glTF import/export of the built-in avatar (cmu_mb rig, body + 2 garments, 3 BVH frames).

Run: ``.venv/bin/python benchmarks/bench_gltf.py``. Prints best-of-N wall and CPU time. The
baseline, measured in the same run, is pygltflib's own GLB loader plus an unchecked
``np.frombuffer`` of every accessor: what reading costs without kisekae's checks, skeleton and
pose conversion.
"""

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import measure, table  # noqa: E402

from kisekae.avatar.builtin import load_builtin_avatar  # noqa: E402
from kisekae.io.bvh import load_bvh  # noqa: E402
from kisekae.io.gltf import load_gltf  # noqa: E402
from kisekae.io.gltf_write import save_avatar  # noqa: E402

BVH = Path(__file__).resolve().parents[1] / "src" / "kisekae" / "data" / "samples" / "cmu_35_01_excerpt.bvh"
DT = {5121: np.uint8, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
NC = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}


def pygltflib_baseline(path):
    import pygltflib

    g = pygltflib.GLTF2().load_binary(str(path))
    blob = g.binary_blob()
    out = []
    for a in g.accessors:
        v = g.bufferViews[a.bufferView]
        out.append(np.frombuffer(blob, DT[a.componentType], a.count * NC[a.type], v.byteOffset + (a.byteOffset or 0)))
    return out


def main():
    av = load_builtin_avatar("cmu_mb")
    poses = load_bvh(BVH, av.skeleton).poses
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "avatar.glb"
        info = save_avatar(path, av, poses=poses)
        n_vert = av.body.mesh.n_vertices + sum(g.mesh.n_vertices for g in av.garments.values())
        rows, base = [], None
        for name, fn in (("pygltflib load + frombuffer (baseline)", lambda: pygltflib_baseline(path)),
                         ("kisekae load_gltf (checked, avatar + poses)", lambda: load_gltf(path)),
                         ("kisekae save_avatar (GLB)", lambda: save_avatar(path, av, poses=poses))):
            wall, cpu = measure(fn, repeat=5)
            base = base or wall
            rows.append([name, f"{wall * 1e3:.1f}", f"{cpu * 1e3:.1f}", f"{wall / base:.2f}x"])
        print(f"built-in avatar: {n_vert} vertices, {av.skeleton.n_bones} bones, {len(poses)} frames, "
              f"GLB {info['bytes'] / 1e6:.2f} MB")
        print(table(rows, ["operation", "wall ms", "CPU ms", "vs baseline"]))


if __name__ == "__main__":
    main()

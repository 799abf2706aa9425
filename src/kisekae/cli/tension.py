"""``kisekae tension``: tension maps of the built-in avatar over poses or a BVH clip.

Evaluates cgvirus's Tension Map (edge mode, Blender-compatible) or the strain mode on the body or a
garment, for named poses (``--pose``, repeatable), pose files or a BVH clip (``--bvh FILE --frames
A:B``), and writes to ``--out DIR``: ``tension.json`` (T-value curves of chosen vertices in the
article's layout, plus per-frame statistics), ``tension.png`` (the T Value Plot) and ``tension.npz``
(per-frame ratio, compress, stretch and uint8 RGBA vertex colours).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import KisekaeError
from .common import add_body_arg, add_contact_args, add_force_arg, check_outputs


def register(subparsers) -> None:
    p = subparsers.add_parser("tension", help="tension maps (Blender Tension Map compatible) over poses or a clip",
                              description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    p.add_argument("--mesh", default="body", metavar="NAME|PATH",
                   help="part to measure: body, a garment name (tights, skirt) or a .mhclo file (default: body)")
    p.add_argument("--rig", choices=["game_engine", "cmu_mb"], default=None,
                   help="rig of the built-in avatar (default: game_engine, or cmu_mb with --bvh)")
    add_body_arg(p)
    add_contact_args(p)
    p.add_argument("--pose", action="append", metavar="NAME",
                   help="named pose (repeatable; default: stand leg_raise crouch)")
    p.add_argument("--pose-file", action="append", metavar="FILE", help="JSON pose file (repeatable)")
    p.add_argument("--bvh", metavar="FILE", help="BVH clip, retargeted by joint name onto the cmu_mb rig")
    p.add_argument("--frames", metavar="A:B", help="BVH frames (Python slice, B exclusive; default all)")
    p.add_argument("--falloff", type=float, default=1.0, help="Falloff (default 1.0)")
    p.add_argument("--stretch-area", type=float, default=1.0, help="Stretch Area (default 1.0)")
    p.add_argument("--compress-area", type=float, default=1.0, help="Compress Area (default 1.0)")
    p.add_argument("--weight-limit", type=float, default=1.0, help="Weight Limit (default 1.0)")
    p.add_argument("--mode", choices=["edge", "strain"], default="edge",
                   help="edge: the node group's edge mean (default); strain: deformation gradients")
    p.add_argument("--blur", type=int, default=0, metavar="N", help="neighbourhood blur passes (default 0)")
    p.add_argument("--rise", type=float, default=None, metavar="SECONDS",
                   help="temporal smoothing time constant for rising values (enables smoothing)")
    p.add_argument("--fall", type=float, default=None, metavar="SECONDS",
                   help="temporal smoothing time constant for falling values (enables smoothing)")
    p.add_argument("--vertices", default=None, metavar="I,J,...",
                   help="vertices whose T curves are exported (default: the two most compressed and two most stretched)")
    p.add_argument("-o", "--out", default="tension_out", metavar="DIR", help="output folder (default: tension_out)")
    p.add_argument("--glb", action="store_true",
                   help="also write tension.glb: the avatar with the poses as an animation, the first frame's "
                        "tension colour as COLOR_0 of the mesh, and per-frame compress/stretch as custom "
                        "attributes _COMPRESS_<i> and _STRETCH_<i> (at most 64 frames)")
    add_force_arg(p, "existing tension.* files in the output folder")
    p.set_defaults(func=run)


def _part(avatar, spec: str) -> str:
    if spec.lower().endswith(".mhclo"):
        from ..io.mhclo import load_mhclo

        garment = load_mhclo(spec, avatar)
        if garment.name not in avatar.garments:
            avatar.add_garment(garment)
        return garment.name
    if Path(spec).suffix:
        raise KisekaeError("unsupported mesh file type (expected .mhclo, body or a garment name)", "--mesh")
    try:
        avatar.part(spec)
    except KisekaeError as exc:
        raise KisekaeError(exc.message, "--mesh") from None
    return spec


def _vertices(spec, seq, n):
    if spec:
        try:
            return [int(s) for s in spec.split(",") if s.strip()]
        except ValueError:
            raise KisekaeError(f"expected comma-separated vertex indices, got {spec!r}", "--vertices") from None
    peak = seq.ratio.max(axis=0)
    low = seq.ratio.min(axis=0)
    picks = list(np.argsort(-peak)[:2]) + list(np.argsort(low)[:2])
    out = []
    for v in picks:
        if int(v) not in out:
            out.append(int(v))
    return out


def _strain_sequence(mesh, frames, plan, seq, params: dict, blur_iterations: int, smoother):
    """The strain mode: compress/stretch per frame from principal strains (blurred and smoothed like the
    edge mode), and the strain arrays the .npz keeps."""
    from ..tension import TensionSequence, blur, strain_tension

    res = [strain_tension(mesh.vertices, f, mesh.faces, weld=mesh.weld, **params) for f in frames]
    co = np.stack([r.compress for r in res])
    st = np.stack([r.stretch for r in res])
    if blur_iterations:
        co = np.stack([blur(c, plan.edges, iterations=blur_iterations, weld=plan.weld) for c in co])
        st = np.stack([blur(s, plan.edges, iterations=blur_iterations, weld=plan.weld) for s in st])
    if smoother is not None:
        smoother.reset()
        both = [smoother.update(np.stack([c, s])) for c, s in zip(co, st)]
        co, st = np.stack([b[0] for b in both]), np.stack([b[1] for b in both])
    seq = TensionSequence(seq.ratio, co.astype(np.float32), st.astype(np.float32), seq.frame_names)
    extra = dict(lambda_min=np.stack([r.lambda_min for r in res]), lambda_max=np.stack([r.lambda_max for r in res]),
                 area_ratio=np.stack([r.area_ratio for r in res]), direction=np.stack([r.direction for r in res]))
    return seq, extra


def _write_json(path, seq, verts, part: str, mode: str, params: dict) -> None:
    """T curves of the chosen vertices plus the run's part, mode, parameters and per-frame statistics."""
    from ..tension import write_t_curves_json

    js = write_t_curves_json(path, seq, verts, x_label="frame")
    data = json.loads(js.read_text())
    data["part"] = part
    data["mode"] = mode
    data["params"] = params
    data["stats"] = [
        dict(frame=nm, t_min=float(r.min()), t_max=float(r.max()), compress_mean=float(c.mean()),
             stretch_mean=float(s.mean()), compress_max=float(c.max()), stretch_max=float(s.max()))
        for nm, r, c, s in zip(seq.frame_names, seq.ratio, seq.compress, seq.stretch)
    ]
    js.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _write_glb(path, avatar, part: str, poses, seq) -> None:
    """The avatar with the poses as animation, frame 0's maps as COLOR_0 and every frame as custom attributes."""
    from ..io.gltf_write import save_avatar

    color = np.concatenate([seq.compress[0][:, None], seq.stretch[0][:, None],
                            np.zeros((len(seq.compress[0]), 1)), np.ones((len(seq.compress[0]), 1))], axis=1)
    attrs = {}
    for k in range(len(poses)):
        attrs[f"_COMPRESS_{k}"] = seq.compress[k].astype(np.float32)
        attrs[f"_STRETCH_{k}"] = seq.stretch[k].astype(np.float32)
    save_avatar(path, avatar, poses=poses, colors={part: [color.astype(np.float32)]}, attributes={part: attrs})


def run(args) -> int:
    from ..avatar.builtin import load_builtin_avatar
    from ..tension import TemporalSmoother, avatar_plan, plot_t_curves, save_npz, tension_sequence
    from .common import body_shape, load_poses, with_contact

    if args.blur < 0:
        raise KisekaeError(f"must be >= 0, got {args.blur}", "--blur")
    out = Path(args.out)
    written = check_outputs([out / n for n in ("tension.json", "tension.png", "tension.npz")
                             + (("tension.glb",) if args.glb else ())], force=args.force, folders=[out])
    rig = args.rig or ("cmu_mb" if args.bvh else "game_engine")
    avatar = with_contact(load_builtin_avatar(rig, body_shape(args)), args)
    part = _part(avatar, args.mesh)
    poses = load_poses(args, avatar)
    if args.glb and len(poses) > 64:
        raise KisekaeError(f"{len(poses)} frames; --glb writes at most 64 (select with --frames)", "--glb")
    params = dict(falloff=args.falloff, stretch_area=args.stretch_area, compress_area=args.compress_area,
                  weight_limit=args.weight_limit)
    plan = avatar_plan(avatar, part, **params)
    smoother = None
    if args.rise is not None or args.fall is not None:
        smoother = TemporalSmoother(args.rise if args.rise is not None else 0.05,
                                    args.fall if args.fall is not None else 0.15)
    names = [getattr(p, "name", str(k)) for k, p in enumerate(poses)]
    frames = [avatar.posed_vertices(part, pose) for pose in poses]
    seq = tension_sequence(plan, frames, frame_names=names, blur_iterations=args.blur, smoother=smoother)
    extra = {}
    if args.mode == "strain":
        seq, extra = _strain_sequence(avatar.part(part).mesh, frames, plan, seq, params, args.blur, smoother)
    verts = _vertices(args.vertices, seq, plan.n_vertices)
    out.mkdir(parents=True, exist_ok=True)
    _write_json(out / "tension.json", seq, verts, part, args.mode, params)
    plot_t_curves(out / "tension.png", seq, verts)
    save_npz(out / "tension.npz", seq, **extra)
    print(f"{part}: {plan.n_vertices} vertices, {len(plan.edges)} welded edges, mode {args.mode}")
    print(f"{'frame':<24} {'T min':>7} {'T max':>7} {'compress>0.5':>13} {'stretch>0.5':>12}")
    for nm, r, c, s in zip(seq.frame_names, seq.ratio, seq.compress, seq.stretch):
        print(f"{nm:<24} {r.min():7.3f} {r.max():7.3f} {np.mean(c > 0.5):13.2%} {np.mean(s > 0.5):12.2%}")
    if args.glb:
        _write_glb(out / "tension.glb", avatar, part, poses, seq)
    print("wrote " + ", ".join(str(w) for w in written))
    return 0

"""``kisekae wound``: bake a damaged shape into a mesh, and shoot hits at the built-in avatar.

``kisekae wound bake NORMAL DAMAGED -o DIR``
    NORMAL and DAMAGED are ``.obj`` or ``.npz`` meshes in metres (``.npz``: ``vertices``, ``faces``,
    optional ``uv0``, ``uv1``, ``parts``), or ``builtin`` / ``builtin-damaged`` for the built-in body and
    its documented damaged variant (:mod:`kisekae.wound.damage`). Prints the correspondence report and
    the encoding error table, writes the start mesh (GLB), PNG/EXR textures and the JSON sidecar.
``kisekae wound hit --ray OX OY OZ DX DY DZ [--ray ...] [--pose NAME] [--bake DIR/wound.json] -o OUT.npz``
    Shoots world rays at the built-in avatar in a named pose, stores the hits in bone space, and
    writes the per-vertex morph parameter (and, with ``--bake``, the morphed posed mesh).

Preview frames (``bake --preview``, ``hit --preview DIR``) render the morph weight going from 0 to 1
(PNG per frame, an animated GIF and a labelled sheet) with :mod:`kisekae.render`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import KisekaeError
from .common import add_body_arg, add_contact_args, add_force_arg, body_shape, check_outputs, with_contact


def register(subparsers) -> None:
    p = subparsers.add_parser("wound", help="wound morphs: bake a damaged shape, shoot hits",
                              description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    sub = p.add_subparsers(dest="wound_command", metavar="ACTION")
    b = sub.add_parser("bake", help="bake DAMAGED into NORMAL (or the reverse with --start damaged)")
    b.add_argument("normal", help="normal mesh (.obj/.npz) or 'builtin'")
    b.add_argument("damaged", help="damaged mesh (.obj/.npz) or 'builtin-damaged'")
    b.add_argument("-o", "--out", default="wound_bake", help="output folder (default: wound_bake)")
    b.add_argument("--stem", default="wound", help="file name prefix (default: wound)")
    b.add_argument("--method", choices=("closest", "uv"), default="closest",
                   help="correspondence: closest point in 3D (default) or the start mesh's uv1 against the target's uv0")
    b.add_argument("--start", choices=("normal", "damaged"), default="normal",
                   help="which shape is the runtime (start) mesh (default: normal)")
    b.add_argument("--encodings", default=None,
                   help="comma-separated encodings (default: every one the vertex count allows)")
    b.add_argument("--max-distance", type=float, default=float("inf"),
                   help="closest method: farther matches are reported unmatched, metres (default: no limit)")
    b.add_argument("--preview", action="store_true",
                   help="also render the morph from 0 to 1 into OUT/preview (PNG frames, GIF, sheet)")
    add_body_arg(b)
    _preview_options(b)
    add_force_arg(b, "existing files of the same names in the output folder")
    b.set_defaults(func=run_bake)
    h = sub.add_parser("hit", help="shoot rays at the built-in avatar and write the morph parameter")
    h.add_argument("--ray", nargs=6, type=float, action="append", metavar=("OX", "OY", "OZ", "DX", "DY", "DZ"),
                   required=True, help="world ray origin and direction, metres (repeatable)")
    h.add_argument("--pose", default="stand", help="named pose the rays are shot in (default: stand)")
    h.add_argument("--bake", default=None, help="sidecar .json of a bake of the built-in body, to morph")
    h.add_argument("--hole-size", type=float, default=0.03, help="HoleSize, metres (default 0.03)")
    h.add_argument("--hole-intensity", type=float, default=50.0, help="HoleIntensity, 1/metres (default 50)")
    h.add_argument("--part-reach", default=None,
                   help="comma-separated HoleSize multipliers per body part for same-part hits (e.g. 1,30,1)")
    h.add_argument("-o", "--out", default="wound_hits.npz",
                   help="output .npz (default: wound_hits.npz; .npz is added when missing)")
    h.add_argument("--preview", default=None, metavar="DIR",
                   help="render the hits' morph from 0 to 1, posed, into DIR (PNG frames, GIF, sheet); uses the "
                        "--bake target, or the built-in damaged variant without one")
    add_body_arg(h)
    add_contact_args(h)
    _preview_options(h)
    add_force_arg(h, "an existing output .npz and preview files")
    h.set_defaults(func=run_hit)
    p.set_defaults(func=lambda args: (p.print_help(), 1)[1])


def _preview_options(parser) -> None:
    parser.add_argument("--preview-steps", type=int, default=5, help="preview frames from p=0 to p=1 (default 5)")
    parser.add_argument("--preview-size", default="480x480", help="preview resolution WxH (default 480x480)")
    parser.add_argument("--preview-view", default="three_quarter",
                        help="camera view (kisekae.render.VIEWS, default three_quarter)")


def _write_preview(out_dir, vertices, normals, faces, target_positions, target_normals, p, args, **kw) -> dict:
    from ..app.wound_preview import morph_frames, write_frames

    frames = morph_frames(vertices, normals, faces, target_positions, target_normals, p, steps=args.preview_steps,
                          view=args.preview_view, size=args.preview_size, **kw)
    paths = write_frames(frames, out_dir)
    print(f"preview: {len(paths['frames'])} frames, {paths['gif'].name} and {paths['sheet'].name} in {out_dir}")
    return paths


def _mesh(spec: str, role: str, shape=None) -> dict:
    if spec in ("builtin", "builtin-damaged"):
        from ..avatar import load_builtin_avatar
        from ..wound.damage import damaged_builtin
        av = load_builtin_avatar(shape=shape)
        m = av.body.mesh
        d = damaged_builtin(av)
        v = m.vertices if spec == "builtin" else d.vertices
        return {"vertices": v, "faces": m.faces, "uv0": m.uvs.get("uv0"), "parts": d.parts}
    from ..io.arrays import load_mesh
    return load_mesh(spec)


def _preview_files(out_dir, args) -> list:
    """The files a ``--preview`` into ``out_dir`` will write."""
    from ..app.wound_preview import frame_file_names

    try:
        return [Path(out_dir) / n for n in frame_file_names(args.preview_steps)]
    except KisekaeError as exc:
        raise KisekaeError(exc.message, "--preview-steps") from None


def run_bake(args) -> int:
    from ..wound import bake, write_bake
    from ..wound.files import bake_file_names

    shape = body_shape(args)
    if shape is not None and not {args.normal, args.damaged} & {"builtin", "builtin-damaged"}:
        raise KisekaeError("--body shapes the built-in body; neither mesh is 'builtin' or 'builtin-damaged'", "--body")
    encs = None if args.encodings is None else [e.strip() for e in args.encodings.split(",") if e.strip()]
    out = Path(args.out)
    files = [out / n for n in bake_file_names(args.stem, encs).values()]
    if args.preview:
        files += _preview_files(out / "preview", args)
    normal = _mesh(args.normal, "normal", shape)
    damaged = _mesh(args.damaged, "damaged", shape)
    check_outputs(files, force=args.force, folders=[out])  # after reading the inputs, before the bake
    start, target = (normal, damaged) if args.start == "normal" else (damaged, normal)
    if args.method == "uv" and "uv1" not in start:
        raise KisekaeError("the UV method needs a second UV set 'uv1' on the start mesh "
                           "(an .npz array 'uv1'); use --method closest otherwise", f"{args.start} mesh")
    parts = start.get("parts")
    r = bake(start["vertices"], start["faces"], target["vertices"], target["faces"], args.method,
             start_uv0=start.get("uv0"), start_uv1=start.get("uv1"), target_uv0=target.get("uv0"), parts=parts,
             encodings=encs, start_role=args.start, max_distance=args.max_distance)
    paths = write_bake(r, args.out, args.stem)
    s = r.correspondence.summary()
    print(f"correspondence ({s['method']}): {s['matched']}/{s['vertices']} matched, {s['unmatched']} unmatched, "
          f"{s['ambiguous']} ambiguous, max distance {s['max_distance']}")
    for reg in s["regions"][:10]:
        print(f"  {reg['kind']:<9} {reg['count']:>6} vertices around {reg['centroid_m']} (max distance "
              f"{reg['max_distance']:.4g})")
    for k, why in r.skipped.items():
        print(f"  skipped encoding {k}: {why}")
    print(r.error_table())
    print(f"wrote {len(paths)} files to {args.out} (sidecar {paths['sidecar'].name})")
    if args.preview:
        enc = next(k for k in ("float", "delta16", "half", "delta8", "article8") if k in r.encodings)
        tp, tn = r.decoded(enc)
        _write_preview(Path(args.out) / "preview", r.start_vertices, r.start_normals, r.start_faces, tp, tn, None,
                       args, invert=(args.start == "damaged"), tint="displacement")
    return 0


def _normals(vertices, faces):
    from ..geom.normals import vertex_normals
    return vertex_normals(vertices, faces).astype(np.float32)


def _hit_arrays(hits) -> dict:
    """The hits as arrays for the .npz (none when there are no hits)."""
    if not hits:
        return {}
    return dict(hit_bind_position=np.stack([h.bind_position for h in hits]),
                hit_bone=np.array([h.bone for h in hits], np.int32),
                hit_local_position=np.stack([h.local_position for h in hits]),
                hit_local_normal=np.stack([h.local_normal for h in hits]),
                hit_part=np.array([h.part for h in hits], np.int32),
                hit_face=np.array([h.face for h in hits], np.int32),
                hit_bary=np.stack([h.bary for h in hits]))


def _morphed(baked: dict, p, body, skin_matrices) -> dict:
    """The baked morph at the hits' weights ``p``: bind-pose and posed positions."""
    from ..avatar.skinning import lbs
    from ..wound import morph_numba

    w = p if baked["sidecar"].get("start_role", "normal") == "normal" else 1.0 - p
    s = baked["vertices"]
    sn = baked["normals"] if baked["normals"] is not None else np.zeros_like(s)
    mp, mn = morph_numba(s, sn, baked["target_positions"].astype(np.float32),
                         baked["target_normals"].astype(np.float32), w.astype(np.float32),
                         np.empty_like(s), np.empty_like(s))
    posed = lbs(mp, body.skin.indices, body.skin.weights, skin_matrices)
    if body.deform is not None:  # the contact body: the same step after skinning as the unmorphed body
        posed = np.asarray(body.deform(posed, skin_matrices), dtype=np.float32)
    return {"morphed_bind": mp, "morphed_posed": posed}


def _hit_preview(args, av, baked, p, skin_matrices) -> None:
    """Preview frames of the morph at the hits' weights: the bake's target, or the built-in damage."""
    from ..wound.damage import damaged_builtin

    body = av.body
    if baked is not None:
        tp, tn = baked["target_positions"], baked["target_normals"]
        sn = baked["normals"] if baked["normals"] is not None else _normals(baked["vertices"], baked["faces"])
        sv, sf = baked["vertices"], baked["faces"]
        invert = baked["sidecar"].get("start_role", "normal") != "normal"
    else:
        dmg = damaged_builtin(av)
        sv, sf = body.mesh.vertices, body.mesh.faces
        sn, tp = _normals(sv, sf), dmg.vertices
        tn, invert = _normals(tp, sf), False
    _write_preview(args.preview, sv, sn, sf, tp, tn, p, args, invert=invert,
                   skin=(body.skin.indices, body.skin.weights, skin_matrices), deform=body.deform)


def run_hit(args) -> int:
    from ..avatar import load_builtin_avatar
    from ..avatar.poses import named_pose
    from ..wound import WoundState
    from ..wound.damage import damaged_builtin
    from ..wound.files import load_bake

    out_path = Path(args.out)
    if out_path.suffix != ".npz":  # what numpy.savez_compressed writes
        out_path = out_path.with_name(out_path.name + ".npz")
    files = [out_path] + (_preview_files(args.preview, args) if args.preview else [])
    check_outputs(files, force=args.force, folders=[args.preview] if args.preview else [])
    av = with_contact(load_builtin_avatar(shape=body_shape(args)), args)
    body = av.body
    reach = None
    if args.part_reach:
        try:
            reach = [float(x) for x in args.part_reach.split(",")]
        except ValueError:
            raise KisekaeError(f"expected comma-separated numbers, got {args.part_reach!r}", "--part-reach") from None
    parts = damaged_builtin(av).parts
    baked = None
    if args.bake:
        baked = load_bake(args.bake)
        if len(baked["vertices"]) != body.mesh.n_vertices:
            raise KisekaeError(f"the bake has {len(baked['vertices'])} vertices, the built-in body "
                               f"{body.mesh.n_vertices}", "--bake")
        parts = baked["parts"].astype(np.int64)
    n_parts = int(parts.max()) + 1
    if reach is not None and len(reach) < n_parts:
        raise KisekaeError(f"need {n_parts} values (one per body part), got {len(reach)}", "--part-reach")
    st = WoundState(body.mesh.vertices, body.mesh.faces, body.skin.indices, body.skin.weights, av.skeleton.rest,
                    parts, hole_size=args.hole_size, hole_intensity=args.hole_intensity, part_reach=reach)
    S = named_pose(av.skeleton, args.pose).skinning_matrices(av.skeleton)
    posed = body.posed(S)
    for k, ray in enumerate(args.ray):
        ray = np.asarray(ray, dtype=np.float64)
        if not np.all(np.isfinite(ray)):
            raise KisekaeError(f"ray {k + 1} has NaN or infinite coordinates: {ray.tolist()}", "--ray")
        h = st.shoot(ray[:3], ray[3:], posed)
        if h is None:
            print(f"ray {k + 1}: miss")
        else:
            print(f"ray {k + 1}: face {h.face}, bone {av.skeleton.names[h.bone]}, local "
                  f"{np.round(h.local_position, 4).tolist()} m, part {h.part}")
    p = st.p_flat()
    out = {"p": p, "pose": np.array(args.pose), **_hit_arrays(st.hits)}
    if baked is not None:
        out.update(_morphed(baked, p, body, S))
    if args.preview:
        _hit_preview(args, av, baked, p, S)
    np.savez_compressed(out_path, **out)
    print(f"{len(st.hits)} hits, {int((p > 0).sum())} vertices damaged ({int((p == 1).sum())} fully); "
          f"wrote {out_path}")
    return 0

"""``kisekae fit``: fit the capsule rig and write fixed garments per pose."""

from __future__ import annotations

import json
from pathlib import Path

from .common import (add_avatar_args, add_force_arg, add_push_args, check_outputs, compression_limit,
                     garment_correctives_choice, load_avatar, load_poses, push_params)


def register(sub):
    p = sub.add_parser("fit", help="fit the capsule rig and write the fixed garments",
                       description="Fits a capsule rig to the body (JSON, hand-editable, and VRM 1.0 colliders), "
                                   "runs the exact-skin push-out for every (pose, garment) and writes the fixed "
                                   "garments as OBJ, with a JSON report (fit per bone, check before/after, draw "
                                   "order), the body contact (body_contact.json), the body's pose-space correctives "
                                   "(body_correctives.json + .bytes, when the body has them), the body's part contact "
                                   "(body_parts.json + .bytes), per garment its own pose-space "
                                   "correctives where it has them (NAME.correctives.json + .bytes: the packaged ones "
                                   "of the built-in tights on the default body) and the surface "
                                   "push's bake for the engine glue (NAME.surface.json + NAME.surface.bytes) and the "
                                   "body triangles it covers, which an engine culls while it is worn "
                                   "(NAME.covered.json).")
    p.add_argument("--avatar", metavar="FILE", help="avatar file (.glb/.gltf/.vrm) instead of the built-in one")
    add_avatar_args(p)
    p.add_argument("--layered", action="store_true", help="fix the garments as one stack, innermost first")
    p.add_argument("--transparent", action="append", metavar="NAME", default=[],
                   help="garment drawn with transparency (goes last in the draw order)")
    add_push_args(p)
    p.add_argument("--garment-correctives", action="append", metavar="auto|off|FILE",
                   help="the garments' pose-space correctives to write for the engine (NAME.correctives.json + .bytes): "
                        "auto, the default: the packaged ones of the built-in tights on the default body; FILE, "
                        "repeatable: a bake from `kisekae bake-correctives --garment` for the garment it was made for, "
                        "the others auto; off: none")
    p.add_argument("--compression-limit", type=compression_limit, default=None, metavar="C",
                   help="the stretch limit's floor in the surface push bakes (their 'shortest' array): how far the "
                        "cloth that clings to the body (within 1 cm of it at rest) may shrink, as a fraction of each "
                        "edge's skinned length (default 0.15, as kisekae check --runtime; 0: no floor)")
    p.add_argument("-o", "--out", default="fit-out", help="output folder (default: fit-out)")
    add_force_arg(p, "existing files of the same names in the output folder")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import numpy as np
    from tqdm import tqdm

    from ..fit.fitting import fit_report
    from ..fit.garment_correctives import garment_correctives
    from ..fit.fix import fix_pose
    from ..fit.layers import draw_order
    from ..fit.surface import COMPRESSION_LIMIT
    from ..io.obj import write_obj
    from ..qa.check import body_topology, check_pose, format_table, json_record
    from ..qa.penetration import BodyQuery
    from ..shaders.corrective_bake import corrective_bake_paths
    from ..shaders.covered_bake import covered_bake_path
    from ..shaders.surface_bake import layer_bake_paths, surface_bake_paths

    avatar, garments = load_avatar(args)
    poses = load_poses(args, avatar)
    out = Path(args.out)
    obj_list = [((name, pose.name), out / f"{name}__{_safe(pose.name)}.obj") for pose in poses for name in garments]
    rig_path, vrm_path, report_path = out / "capsules.json", out / "capsules.vrm.json", out / "report.json"
    contact_path = out / "body_contact.json" if _contact(avatar) is not None else None
    part_paths = _part_paths(avatar, out)
    corrective_paths = corrective_bake_paths(out) if _correctives(avatar) is not None else ()
    choice = garment_correctives_choice(avatar, garments, args.garment_correctives)
    garment_corrective_paths = {name: corrective_bake_paths(out, name) for name in garments
                                if garment_correctives(avatar, name, choice) is not None}
    surface_paths = {name: surface_bake_paths(out, name) for name in garments}
    layer_paths = {(outer, inner): layer_bake_paths(out, outer, inner) for i, outer in enumerate(garments)
                   for inner in garments[:i]} if args.layered else {}
    covered_paths = {name: covered_bake_path(out, name) for name in garments}
    # a pose given twice (or two names that read the same in a file name) is refused here, not half-way
    check_outputs([rig_path, vrm_path, report_path, *([contact_path] if contact_path else []), *corrective_paths,
                   *part_paths,
                   *(p for pair in surface_paths.values() for p in pair), *covered_paths.values(),
                   *(p for pair in layer_paths.values() for p in pair),
                   *(p for pair in garment_corrective_paths.values() for p in pair),
                   *(p for _, p in obj_list)], force=args.force, folders=[out])
    objs = dict(obj_list)
    out.mkdir(parents=True, exist_ok=True)
    body = avatar.body
    sk = avatar.skeleton
    rig = _write_body_bakes(avatar, rig_path, vrm_path, contact_path, corrective_paths, garment_corrective_paths,
                            part_paths)
    _write_garment_bakes(avatar, surface_paths, covered_paths,
                         COMPRESSION_LIMIT if args.compression_limit is None else args.compression_limit)
    _write_layer_bakes(avatar, layer_paths)
    rest_query = BodyQuery(body_topology(avatar), body.mesh.vertices)
    report = {"capsules": len(rig.bone), "fit": fit_report(rig, body.mesh.vertices, body.skin.indices,
                                                           body.skin.weights, sk.rest, rest_query),
              "draw_order": draw_order(garments, args.transparent), "records": []}
    params = push_params(args)
    records = []
    for pose in tqdm(poses, desc="kisekae fit", unit="pose"):
        before = check_pose(avatar, pose, garments)
        fixed = fix_pose(avatar, pose, garments, params, layered=args.layered, method=args.fix_method)
        after = check_pose(avatar, pose, garments, posed_garments={k: v.positions for k, v in fixed.items()})
        for b, a in zip(before, after):
            b["stage"], a["stage"] = "before", "after"
            a.update(fixed[a["garment"]].metrics)
            records.extend([b, a])
            name = a["garment"]
            write_obj(objs[name, pose.name], avatar.part(name).mesh, fixed[name].positions,
                      overwrite=args.force, comment=f"kisekae fit: {name} fixed in pose {pose.name}")
    report["records"] = [json_record(r) for r in records]
    report_path.write_text(json.dumps(report, indent=1, default=lambda o: np.asarray(o).tolist()))
    print(format_table(records))
    extra = _summary(contact_path, corrective_paths, garment_corrective_paths, surface_paths, layer_paths, part_paths)
    print(f"wrote {rig_path} ({len(rig.bone)} capsules), {len(records) // 2} fixed garments and report.json{extra} "
          f"to {out}")
    return 0


def _write_body_bakes(avatar, rig_path, vrm_path, contact_path, corrective_paths, garment_corrective_paths,
                      part_paths=()):
    """Fit and write the capsule rig (JSON and VRM colliders), the body contact, the part contact and the pose-space
    correctives of the body and of the garments that have them; returns the rig."""
    from ..fit.fitting import fit_capsules
    from ..fit.garment_correctives import garment_correctives
    from ..shaders.corrective_bake import corrective_bake

    body, sk = avatar.body, avatar.skeleton
    rig = fit_capsules(body.mesh.vertices, body.skin.indices, body.skin.weights, sk.rest, sk.names,
                       faces=body.mesh.faces)
    rig.save(rig_path)
    vrm_path.write_text(json.dumps(rig.to_vrm_colliders(), indent=1))
    if contact_path is not None:
        from ..shaders.contact_bake import contact_bake

        contact_path.write_text(json.dumps(contact_bake(_contact(avatar), sk.names)))
    if part_paths:
        from ..shaders.part_bake import part_bake

        doc, blob = part_bake(avatar.body.deform, sk.names)
        part_paths[0].write_text(json.dumps(doc))
        part_paths[1].write_bytes(blob)
    bakes = [(corrective_paths, _correctives(avatar))] if corrective_paths else []
    bakes += [(paths, garment_correctives(avatar, name)) for name, paths in garment_corrective_paths.items()]
    for (head, blob_path), correctives in bakes:
        doc, blob = corrective_bake(correctives, sk)
        head.write_text(json.dumps(doc))
        blob_path.write_bytes(blob)
    return rig


def _part_paths(avatar, out) -> tuple:
    """Where the body's part contact bake goes (:func:`kisekae.shaders.part_bake.part_bake_paths`), or () when the
    body has none."""
    from ..avatar.part_contact import PartContact
    from ..shaders.part_bake import part_bake_paths

    return part_bake_paths(out) if isinstance(avatar.body.deform, PartContact) else ()


def _summary(contact_path, corrective_paths, garment_corrective_paths, surface_paths, layer_paths,
             part_paths=()) -> str:
    """What ``kisekae fit`` wrote besides the rig, garments and report, for its last line."""
    extra = f", {contact_path.name} (the body contact for the engine glue)" if contact_path is not None else ""
    extra += (f", {corrective_paths[0].name} + .bytes (the body's pose-space correctives)" if corrective_paths
              else "")
    extra += f", {part_paths[0].name} + .bytes (the body's part contact)" if part_paths else ""
    extra += (f", the pose-space correctives of {', '.join(garment_corrective_paths)} (GARMENT.correctives.json + "
              ".bytes)" if garment_corrective_paths else "")
    extra += (f", {len(surface_paths)} surface push bakes (*.surface.json + .bytes) and covered-skin culling lists "
              "(*.covered.json)")
    return extra + (f", {len(layer_paths)} layer push bakes (OUTER.over.INNER.surface.json + .bytes)"
                    if layer_paths else "")


def _write_garment_bakes(avatar, surface_paths: dict, covered_paths: dict, compression: float) -> None:
    """Per garment, the surface push's data (candidates baked over the range of motion, welded one-ring, chords, edge
    samples and their candidates, the stretch limit's floor of the compression limit ``compression``, the body
    follow's binding, the body's depth bound) and
    the body triangles it covers (:func:`kisekae.fit.runtime.covered_skin_triangles`), for the engine glue."""
    from ..fit.runtime import (DEPTH_BOUND, SELF_LAYERS, avatar_depth_bound, covered_skin_triangles,
                               garment_candidates, garment_chord, garment_follow, garment_lift, garment_own_layers,
                               garment_ring, garment_shortest)
    from ..shaders.covered_bake import covered_bake, write_covered
    from ..shaders.surface_bake import surface_bake, write_surface_bake

    body = avatar.body
    for name, (head_path, bin_path) in surface_paths.items():
        mesh = avatar.part(name).mesh
        doc = surface_bake(garment_candidates(avatar, name, progress=True), garment_ring(avatar, name),
                           body.mesh.faces, name, chord=garment_chord(avatar, name),
                           n_body_vertices=body.mesh.n_vertices, weld=mesh.weld,
                           lift=garment_lift(avatar, name, progress=True),
                           shortest=garment_shortest(avatar, name, compression),
                           follow=garment_follow(avatar, name),
                           depth_bound=avatar_depth_bound(avatar) if DEPTH_BOUND else None,
                           self_layers=garment_own_layers(avatar, name) if SELF_LAYERS else None)
        write_surface_bake(doc, head_path, bin_path)
        write_covered(covered_bake(covered_skin_triangles(avatar, name), name, body.mesh.n_vertices),
                      covered_paths[name])


def _write_layer_bakes(avatar, layer_paths: dict) -> None:
    """Per (outer, inner) garment pair of ``--layered``, the layer push's data: the outer garment's candidates and its
    samples' candidates on the inner garment's triangles (:func:`kisekae.fit.runtime.layer_candidates`), as a
    surface bake whose "body" is the inner garment (KisekaeSurfacePush.beneath in Unity)."""
    from ..fit.runtime import garment_chord, garment_ring, layer_candidates, layer_lift
    from ..shaders.surface_bake import surface_bake, write_surface_bake

    for (outer, inner), (head_path, bin_path) in layer_paths.items():
        mesh, under = avatar.part(outer).mesh, avatar.part(inner).mesh
        doc = surface_bake(layer_candidates(avatar, outer, inner, progress=True), garment_ring(avatar, outer),
                           under.faces, outer, chord=garment_chord(avatar, outer), n_body_vertices=under.n_vertices,
                           weld=mesh.weld, lift=layer_lift(avatar, outer, inner))
        write_surface_bake(doc, head_path, bin_path)


def _contact(avatar):
    """The avatar body's joint-plane contact step, or None (plain skinning, ``--no-contact``)."""
    from ..avatar.contact import joint_contact_of

    return joint_contact_of(avatar.body.deform)


def _correctives(avatar):
    """The avatar body's pose-space correctives, or None."""
    from ..avatar.correctives import BodyCorrectives
    from ..avatar.part_contact import inner_deform

    deform = inner_deform(avatar.body.deform)
    return deform.correctives if isinstance(deform, BodyCorrectives) else None


def _safe(pose_name: str) -> str:
    """A pose name as part of a file name."""
    return pose_name.replace(":", "_").replace("/", "_").replace("\\", "_")

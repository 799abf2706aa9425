"""``kisekae check``: how much of each garment is inside the posed body."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ..errors import KisekaeError
from .common import (add_avatar_args, add_force_arg, add_push_args, check_outputs, compression_limit,
                     garment_correctives_choice, load_avatar, load_poses, push_params)


def register(sub):
    p = sub.add_parser("check", help="measure garment vertices inside the body, depth and edge crossings",
                       description="For each (pose, garment): count and fraction of garment vertices inside the "
                                   "posed body (generalized winding number), their max and p95 depth, and garment "
                                   "edges crossing body triangles.")
    p.add_argument("--avatar", metavar="FILE", help="avatar file (.glb/.gltf/.vrm) instead of the built-in one")
    add_avatar_args(p)
    p.add_argument("--fix", action="store_true",
                   help="apply the push-out solver and report each (pose, garment) before and after")
    p.add_argument("--layered", action="store_true",
                   help="treat the garments as one stack, innermost first (implies --fix); with --runtime the "
                        "per-frame path also pushes each garment out of those beneath it (layer push) and reports "
                        "under_lower_layers and layer_crossings")
    add_push_args(p)
    p.add_argument("--pixels", action="store_true",
                   help="also count poke-through pixels (skin showing through garments) from 9 views at 720p and "
                        "2160p (offscreen OpenGL); adds poke_through_pixels to the records")
    p.add_argument("--runtime", action="store_true",
                   help="also run the per-frame path an engine runs (see --runtime-method) and report it with stage 'runtime'; with --pixels also poke_through_pixels_culled, with the "
                        "skin covered in the verification poses culled as the engine does, and culled_skin_seen_pixels, the holes that "
                        "culling makes (culled skin a view sees past the garment); with --bvh, pop_mm is the largest jump of the "
                        "correction from the previous selected frame")
    p.add_argument("--inbetweens", type=int, default=1, metavar="N",
                   help="check N - 1 slerped poses between consecutive poses too (bone rotations slerped, root "
                        "translation lerped; default 1: the poses only), to see a sparse clip or two named poses "
                        "as motion: with --runtime, pop_mm is then reported for every pose after the first, e.g. "
                        "--pose stand --pose crouch --inbetweens 30 for one second at 30 fps")
    p.add_argument("--runtime-method", choices=("carried", "surface", "capsules"), default="carried",
                   help="the per-frame method of --runtime: 'carried' (default: the surface push started from the "
                        "previous frame's correction; a clip (--bvh, --inbetweens) carries it from frame to frame, "
                        "a single pose warms up from the rest pose, and runtime_steps says how many steps were "
                        "taken), 'surface' (the same push without memory: each garment vertex kept outside the "
                        "nearest of its baked candidate body triangles, with one-ring smoothing and a stretch limit) "
                        "or 'capsules' (the first path: capsule field, then skin-bound clearance)")
    p.add_argument("--carry-keep", type=float, default=None, metavar="K",
                   help="with --runtime-method carried: the share of the previous frame's correction each frame "
                        "starts from, 0..1 (default 0.9; 0 gives the stateless push)")
    p.add_argument("--edge-lift", action=argparse.BooleanOptionalAction, default=True,
                   help="with --runtime-method carried or surface: end the per-frame correction with the edge lift "
                        "and the unflip (points on edges longer than 2 cm kept outside the body, faces the correction "
                        "turned over turned back), the default: over 17 poses x 4 garments a third of the edges "
                        "through the body and of the flipped faces (docs/fit.md); --no-edge-lift ends it with the "
                        "stretch limit; records say edge_lift")
    p.add_argument("--garment-correctives", action="append", metavar="auto|off|FILE",
                   help="with --runtime-method carried or surface: start each frame from the skinned garment plus its "
                        "pose-space correctives, learned from this path over the range of motion (auto, the default: "
                        "the packaged ones of the built-in tights, else none; FILE, repeatable: a bake from "
                        "`kisekae bake-correctives --garment`, for the garment it was made for, the others auto; "
                        "docs/fit.md 'Garment correctives'), or from plain skinning (off); pop_mm, flips and strain "
                        "are measured against plain skinning either way")
    _add_body_reading_flags(p)
    p.add_argument("--finish-step", type=_finish_step, default=None, metavar="M|none",
                   help="with the edge lift: the most it and the unflip may move a garment vertex in one frame, "
                        "metres (default 0.004: the carry takes the rest up in the next frames, and the lift's pops "
                        "stay small, docs/fit.md); none: no cap")
    p.add_argument("--compression-limit", type=compression_limit, default=None, metavar="C",
                   help="with --runtime-method carried or surface: how far the stretch limit lets the cloth that clings "
                        "to the body (within 1 cm of it at rest) shrink, as a fraction of each edge's skinned length "
                        "(default 0.15: edges keep at least 0.85 of it, docs/fit.md); 0: no floor, edges shrink "
                        "freely; records say compression_limit")
    p.add_argument("--self-contact", action="store_true",
                   help="also measure the posed body against itself: body_buried (vertices inside another body "
                        "part), body_self_crossings (body edges through body triangles), body_volume_change and "
                        "body_dihedral_p99_deg (how sharply the surface bends) and body_inverted_faces (triangles "
                        "turned inside out), with body_flipped_faces (triangles turned over against plain skinning), "
                        "body_new_inverted_faces and the plain-skinning numbers beside a contact body")
    p.add_argument("--json", metavar="FILE", help="write one record per (pose, garment) as a JSON list")
    add_force_arg(p, "an existing --json file")
    p.set_defaults(func=run)
    return p


#: The per-frame path's on/off switches (how it reads the posed body, and the garment's own layers): flag -> what it
#: does (``kisekae check --runtime``).
_BODY_READING = (
    ("--body-follow",
     "start each garment from its skinning plus the outward part of what the body does beyond skinning "
     "(its correctives, joint planes, volume bulge) at the point each garment vertex is bound to at "
     "rest, fully within 2 cm of the skin, fading out by 6 cm (docs/fit.md 'Body follow'; the "
     "default); --no-body-follow starts from skinning alone; records say body_follow"),
    ("--depth-bound",
     "trust no candidate triangle that puts a garment vertex deeper behind it than the body is thick "
     "there (half its rest thickness plus 5 mm; the list then misses the vertex's nearest skin, "
     "docs/fit.md 'The depth bound'; the default); --no-depth-bound trusts every candidate; records "
     "say depth_bound"),
    ("--normal-guard",
     "read the body's side through vertex normals that leave out the triangles the pose turned away "
     "from the skinned normals (a fold's inside-out triangles, docs/fit.md 'Body normals without the "
     "faces a pose turns inside out'; the default); --no-normal-guard sums every triangle; records say "
     "normal_guard"),
    ("--self-layers",
     "keep a garment's outer sheets outside its own inner sheets (a shirt's hem over the trousers' waistband, a "
     "jacket over a shirt: docs/fit.md 'Self layers'; the default, a garment of one sheet has none); "
     "--no-self-layers leaves them to the body push alone; records say self_layers"),
)


def _add_body_reading_flags(p) -> None:
    """Add :data:`_BODY_READING`'s switches (default None: the runtime's own default)."""
    for flag, text in _BODY_READING:
        p.add_argument(flag, action=argparse.BooleanOptionalAction, default=None,
                       help="with --runtime-method carried or surface: " + text)


def _add_pop(record, avatar, pose, positions, previous):
    """``pop_mm`` against the previous frame's correction of the same garment (clip frames and in-betweens only)."""
    from ..fit.runtime import pop_mm

    name = record["garment"]
    correction = positions - avatar.part(name).posed(pose.skinning_matrices(avatar.skeleton))
    if name in previous:
        record["pop_mm"] = pop_mm(previous[name], correction)
    previous[name] = correction


class _Step:
    """A parsed ``--finish-step``: ``value`` metres, or None for "none" (no cap)."""

    def __init__(self, value):
        self.value = value


def _finish_step(text: str) -> _Step:
    if text.strip().lower() == "none":
        return _Step(None)
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected metres >= 0 or none, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number of metres >= 0 or none, got {text!r}")
    return _Step(value)


def run(args) -> int:
    from ..qa.check import format_table, json_record

    check_outputs([args.json] if args.json else [], force=args.force)
    if args.inbetweens < 1:
        raise KisekaeError(f"must be at least 1, got {args.inbetweens}", "--inbetweens")
    surface_path = args.runtime and args.runtime_method != "capsules"  # the per-frame methods of the surface push
    if args.compression_limit is not None and not surface_path:
        raise KisekaeError("sets the per-frame path's stretch limit: needs --runtime with the carried or surface "
                           "method", "--compression-limit")
    if args.body_follow is not None and not surface_path:
        raise KisekaeError("sets where the per-frame path starts: needs --runtime with the carried or surface method",
                           "--body-follow")
    for flag in ("depth_bound", "normal_guard", "self_layers"):
        if getattr(args, flag) is not None and not surface_path:
            raise KisekaeError("sets the per-frame path's push: needs --runtime with the carried or surface method",
                               "--" + flag.replace("_", "-"))
    if args.finish_step is not None and not (args.runtime and args.edge_lift):
        raise KisekaeError("caps the edge lift of the per-frame path: needs --runtime and the edge lift (on unless "
                           "--no-edge-lift)", "--finish-step")
    avatar, garments = load_avatar(args)
    args.garment_correctives = garment_correctives_choice(avatar, garments, args.garment_correctives)
    poses = load_poses(args, avatar)
    if args.inbetweens > 1:
        from ..render.animation import inbetween

        if len(poses) < 2:
            raise KisekaeError("needs at least two poses (--pose, --pose-file, --bvh)", "--inbetweens")
        poses = inbetween(poses, args.inbetweens)
    records = []
    params = push_params(args)
    previous = {}
    from ..fit.carry import CarryState

    keep = {} if args.carry_keep is None else {"keep": args.carry_keep}
    CarryState(**keep).check()  # a bad --carry-keep is named before any work
    clip = CarryState(**keep) if (args.bvh or args.inbetweens > 1) else None  # a clip's frames share one memory
    for pose in poses:
        state = clip if clip is not None else CarryState(**keep)
        records.extend(_pose_records(args, avatar, pose, garments, params, previous, state))
    print(format_table(records))
    if args.pixels:
        from ..app.report import format_pixel_table

        print(format_pixel_table(records))
    if args.json:
        Path(args.json).write_text(json.dumps([json_record(r) for r in records], indent=1))
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def _pose_records(args, avatar, pose, garments, params, previous: dict, state) -> list:
    """The records of one pose: ``before`` per garment, each followed by its fixed stages."""
    from ..qa.check import check_pose, json_record, self_contact_pose

    before = check_pose(avatar, pose, garments)
    if args.self_contact:
        body = json_record(self_contact_pose(avatar, pose))
        for r in before:
            r.update({k: v for k, v in body.items() if k.startswith("body_")})
    if args.pixels:
        from ..app.report import add_poke_pixels

        add_poke_pixels(avatar, pose, before)
    stages = _fixed_stages(args, avatar, pose, garments, params, state)
    if not stages:
        return before
    for r in before:
        r["stage"] = "before"
    per_stage = [_stage_records(args, avatar, pose, garments, stage, positions, metrics, previous)
                 for stage, positions, metrics in stages]
    return [r for rows in zip(before, *per_stage) for r in rows]  # per garment: before, then each stage


def _fixed_stages(args, avatar, pose, garments, params, state) -> list:
    """``[(stage, positions by garment, metrics by garment)]`` of ``--fix``/``--layered`` and ``--runtime``."""
    stages = []
    if args.fix or args.layered:
        from ..fit.fix import fix_pose

        fixed = fix_pose(avatar, pose, garments, params, layered=args.layered, method=args.fix_method)
        stages.append(("after", {k: v.positions for k, v in fixed.items()}, {k: v.metrics for k, v in fixed.items()}))
    if args.runtime:
        from ..fit.runtime import BODY_FOLLOW, DEPTH_BOUND, NORMAL_GUARD, SELF_LAYERS, runtime_pose
        from ..fit.surface import COMPRESSION_LIMIT, FINISH_STEP

        follow = BODY_FOLLOW if args.body_follow is None else args.body_follow

        corrected = runtime_pose(avatar, pose, garments, params, method=args.runtime_method, state=state,
                                 edge_lift=args.edge_lift,
                                 finish_step=FINISH_STEP if args.finish_step is None else args.finish_step.value,
                                 layers=args.layered, correctives=args.garment_correctives,
                                 compression=COMPRESSION_LIMIT if args.compression_limit is None
                                 else args.compression_limit, body_follow=follow,
                                 depth_bound=DEPTH_BOUND if args.depth_bound is None else args.depth_bound,
                                 normal_guard=NORMAL_GUARD if args.normal_guard is None else args.normal_guard,
                                 self_layers=SELF_LAYERS if args.self_layers is None else args.self_layers)
        positions, metrics = {k: v[0] for k, v in corrected.items()}, {k: dict(v[1]) for k, v in corrected.items()}
        if args.layered:
            _add_layer_stats(avatar, garments, positions, metrics)
        stages.append(("runtime", positions, metrics))
    return stages


def _add_layer_stats(avatar, garments, positions, metrics) -> None:
    """Per garment, ``layer_stats`` against the garments before it (innermost first), into ``metrics``."""
    from ..fit.fix import THICKNESS
    from ..fit.layers import LayerSurface, layer_stats

    beneath = []
    for name in garments:
        metrics[name].update(layer_stats(positions[name], avatar.part(name).mesh.edges, beneath), layered=True)
        beneath.append(LayerSurface(positions[name], avatar.part(name).mesh.faces, THICKNESS, name=name))


def _stage_records(args, avatar, pose, garments, stage, positions, metrics, previous: dict) -> list:
    """The check of one fixed stage, with its metrics (and pixels, pop) per garment."""
    from ..qa.check import check_pose

    after = check_pose(avatar, pose, garments, posed_garments=positions)
    if args.pixels:
        from ..app.report import add_poke_pixels

        add_poke_pixels(avatar, pose, after, positions)
        if stage == "runtime":
            from ..fit.runtime import covered_skin_triangles

            cull = {g: covered_skin_triangles(avatar, g) for g in garments}
            add_poke_pixels(avatar, pose, after, positions, cull=cull, key="poke_through_pixels_culled",
                            seen_key="culled_skin_seen_pixels")
    for a in after:
        a["stage"] = stage
        a.update(metrics[a["garment"]])
        if stage == "after" and args.layered:
            a["layered"] = True
        if stage == "runtime" and (args.bvh or args.inbetweens > 1):
            _add_pop(a, avatar, pose, positions[a["garment"]], previous)
    return after

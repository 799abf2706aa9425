"""Argument helpers shared by subcommands: avatar, garments and poses."""

from __future__ import annotations

import math

from ..errors import KisekaeError
from ..outputs import check_outputs  # noqa: F401  (the one overwrite policy; commands import it from here)


BODY_HELP = ("MakeHuman body shape of the built-in avatar, e.g. \"gender=0.2,weight=0.9,muscle=0.3\" "
             "(macro parameters gender age muscle weight height proportions breast_size breast_firmness 0..1, "
             "default 0.5; regional upperleg_fat buttocks belly upperarm_fat -1..1, default 0); "
             "without it, the plain base mesh")


def add_body_arg(p):
    """``--body``: a MakeHuman body shape for the built-in avatar."""
    p.add_argument("--body", metavar="NAME=VALUE,...", help=BODY_HELP)


def body_shape(args):
    """The :class:`~kisekae.avatar.shape.BodyShape` of ``--body``, or None when it was not given."""
    text = getattr(args, "body", None)
    if text is None:
        return None
    from ..avatar.shape import parse_body

    if getattr(args, "avatar", None):
        raise KisekaeError("shapes the built-in avatar only; it does not apply to --avatar files", "--body")
    return parse_body(text, "--body")


def add_avatar_args(p, *, garments_default=("tights", "skirt")):
    add_body_arg(p)
    p.add_argument("--rig", choices=["game_engine", "cmu_mb"], default=None,
                   help="rig of the built-in avatar (default: game_engine, or cmu_mb with --bvh)")
    p.add_argument("--garment", action="append", metavar="NAME|PATH",
                   help=f"garment name or .mhclo file (repeatable; default: {' '.join(garments_default)}, or all garments of --avatar)")
    p.add_argument("--pose", action="append", metavar="NAME", help="named pose (repeatable; default: stand leg_raise crouch)")
    p.add_argument("--pose-file", action="append", metavar="FILE", help="JSON pose file (repeatable)")
    p.add_argument("--bvh", metavar="FILE", help="BVH clip, retargeted by joint name onto the cmu_mb rig")
    p.add_argument("--frames", metavar="A:B[:STEP]", help="BVH frames to use (Python slice, B exclusive, STEP > 0, e.g. 0:120:4 for 30 fps of a 120 fps clip; default all)")
    add_contact_args(p)
    p.set_defaults(garments_default=list(garments_default))


CONTACT_HELP = ("pose the body with the joint-plane contact after skinning, the default (docs/contact.md: it keeps "
                "the two sides of a bent knee, hip or elbow apart); GAP: metres left between them (default 0.004)")
NO_CONTACT_HELP = "plain linear blend skinning, without the joint-plane contact (for comparison)"


def add_contact_args(p):
    """``--contact [GAP]`` and ``--no-contact`` (exclusive): the contact body is the default."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--contact", nargs="?", const="default", metavar="GAP", help=CONTACT_HELP)
    g.add_argument("--no-contact", action="store_true", help=NO_CONTACT_HELP)
    p.add_argument("--correctives", metavar="auto|off|builtin|FILE", default="auto",
                   help="pose-space correctives of the body, learned from the offline contact solve, before the joint "
                        "planes (docs/contact.md): auto (default) uses the packaged bake where it fits the body (the "
                        "built-in avatar, its --body shapes and their glTF exports), off none, builtin the same as "
                        "auto but an error where it does not fit, FILE a bake from `kisekae bake-correctives`")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--part-contact", dest="part_contact", action="store_true", default=True,
                   help="the contact body also keeps apart body parts that share no joint (a hand on the hip, an arm "
                        "on the chest, the thighs), after the joint planes: the default (kisekae.avatar.part_contact; "
                        "docs/contact.md)")
    g.add_argument("--no-part-contact", dest="part_contact", action="store_false",
                   help="the contact body without the part contact (for comparison)")


def contact_gap(args) -> float | None:
    """The contact gap of ``--contact [GAP]`` / ``--no-contact`` in metres (the default gap when neither is given),
    or None for plain skinning."""
    from ..avatar.contact import GAP, contact_gap as _gap

    if getattr(args, "no_contact", False):
        return None
    text = getattr(args, "contact", None)
    if text is None or text == "default":
        return GAP
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value >= 0):
        raise KisekaeError(f"GAP must be a finite number of metres, at least 0, got {text!r}", "--contact")
    return _gap(value, "--contact")


def with_contact(avatar, args):
    """``avatar`` with the contact body ``args`` asks for (:func:`contact_gap`); a note on stderr when the body has
    no blended joint and stays plain."""
    import sys

    from ..avatar.contact import apply_contact
    from ..avatar.part_contact import inner_deform

    gap = contact_gap(args)
    which = getattr(args, "correctives", None) or "auto"
    explicit = None
    if which not in ("auto", "off", "builtin"):
        from ..avatar.correctives import load_correctives

        try:
            explicit = load_correctives(which)
        except KisekaeError as exc:
            raise KisekaeError(f"{exc}", "--correctives") from None
    try:
        posed = apply_contact(avatar, gap, correctives={"auto": "auto", "builtin": "auto", "off": None}.get(
            which, explicit), part_contact=getattr(args, "part_contact", True))
    except KisekaeError as exc:
        raise KisekaeError(f"{exc}", "--correctives") from None
    if which == "builtin" and not hasattr(inner_deform(posed.body.deform), "correctives"):
        raise KisekaeError("no packaged correctives fit this body (the built-in avatar and its shapes have them); "
                           "bake them with `kisekae bake-correctives`" if gap is not None else
                           "the packaged correctives go with the contact body; drop --no-contact", "--correctives")
    if gap is not None and posed.body.deform is None:
        print(f"kisekae: note: {avatar.name}: no joint of the body blends two bones; plain skinning (the contact "
              "step would move nothing)", file=sys.stderr)
    return posed


def load_avatar(args):
    """The avatar named by ``--avatar``/``--rig`` with the ``--garment`` files added; returns (avatar, garment names)."""
    from ..avatar.builtin import load_builtin_avatar

    rig = args.rig or ("cmu_mb" if getattr(args, "bvh", None) else "game_engine")
    shape = body_shape(args)
    avatar_path = getattr(args, "avatar", None)
    if avatar_path:
        from ..io import gltf  # noqa: F401  (provided by the glTF importer)

        avatar = gltf.load_avatar(avatar_path)
    else:
        avatar = load_builtin_avatar(rig, shape)
    from ..io.mhclo import add_garments

    avatar = with_contact(avatar, args)
    wanted = args.garment or (list(avatar.garments) if avatar_path else args.garments_default)
    if not wanted:
        raise KisekaeError("the avatar has no garments; name one with --garment", avatar_path or "--garment")
    return avatar, add_garments(avatar, wanted)


def load_poses(args, avatar):
    """Poses from ``--pose``, ``--pose-file`` and ``--bvh``/``--frames``, in that order."""
    from ..avatar.poses import VERIFICATION_POSES, load_pose_file, named_pose

    poses = []
    for name in args.pose or ([] if (args.pose_file or args.bvh) else list(VERIFICATION_POSES)):
        poses.append(named_pose(avatar.skeleton, name))
    for path in args.pose_file or []:
        poses.append(load_pose_file(avatar.skeleton, path))
    if args.bvh:
        from ..io.bvh import load_bvh

        poses.extend(load_bvh(args.bvh, avatar.skeleton, args.frames).poses)
    elif args.frames:
        raise KisekaeError("--frames needs --bvh", "--frames")
    return poses


def add_push_args(p):
    """Push-out parameters (metres; masks 0..1). Unset values keep the solver's defaults."""
    g = p.add_argument_group("push-out parameters (defaults from the seed note; skirts get skirt-bias 0.3)")
    g.add_argument("--margin", type=float, metavar="M", help="minimum clearance from the body, metres (0.002)")
    g.add_argument("--stiffness", type=float, metavar="S", help="0..1, how firmly clearance is kept (0.5)")
    g.add_argument("--max-push", type=float, metavar="M", help="cap on any displacement, metres (0.10)")
    g.add_argument("--skirt-bias", type=float, metavar="B", help="0..1 outward bulge for skirts (0.3 for skirts, else 0)")
    g.add_argument("--tightness", type=float, metavar="T", help="0..1 uniform tightness (0)")
    g.add_argument("--softness", type=float, metavar="S", help="0..1 uniform softness (0)")
    g.add_argument("--fix-method", choices=("auto", "shape", "exact", "path", "runtime"), default="auto",
                   help="runtime: the per-frame path's result (carried from the rest pose), finished by the shape "
                        "and exact solvers where it still clips; shape: the shape-preserving solve, the garment moves "
                        "as a smooth sheet; exact: per-vertex projection onto the body's union; path: the garment "
                        "carried from the rest pose, keeping the side of the body it was on, then finished the same "
                        "way; auto (default): runtime where it leaves no clipping, else the best of all by visible "
                        "defects (docs/fit.md)")


def push_params(args):
    """A PushParams from the command line, or None when no parameter was given (per-garment defaults)."""
    from ..fit.pushout import PushParams

    names = {"margin": "margin", "stiffness": "stiffness", "max_push": "max_push", "skirt_bias": "skirt_bias",
             "tightness": "tightness", "softness": "softness"}
    given = {k: getattr(args, a) for a, k in names.items() if getattr(args, a, None) is not None}
    if not given:
        return None
    return PushParams(**given)


def add_force_arg(p, what: str = "existing output files"):
    """``--force``: the one switch, shared by every writing command, that allows overwriting (see
    :func:`kisekae.outputs.check_outputs`)."""
    p.add_argument("--force", action="store_true",
                   help=f"overwrite {what} (without it the command refuses before writing anything)")


def compression_limit(text: str) -> float:
    """argparse type of ``--compression-limit``: a number in [0, 1) (the per-frame path's stretch-limit floor,
    :func:`kisekae.fit.runtime.garment_shortest`)."""
    import argparse

    from ..fit.surface import check_compression

    try:
        return check_compression(float(text))
    except (ValueError, KisekaeError):
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from None


def garment_correctives_choice(avatar, garments, values) -> str:
    """Register the bakes that ``--garment-correctives`` names (``values``, None: auto) on ``avatar``; returns the
    choice for the rest (``"auto"`` or ``"off"``, :func:`kisekae.fit.garment_correctives.garment_correctives`)."""
    from ..avatar.correctives import load_correctives
    from ..fit.garment_correctives import use_garment_correctives

    values = values or ["auto"]
    if "off" in values:
        if len(values) > 1:
            raise KisekaeError("off turns every garment's correctives off; give it alone", "--garment-correctives")
        return "off"
    for value in values:
        if value == "auto":
            continue
        try:
            c = load_correctives(value)
            name = c.settings.get("garment")
            if name not in garments:
                raise KisekaeError(f"made for garment {name!r}, which is not among --garment "
                                   f"({', '.join(garments)})" if name else
                                   "a body bake, not a garment's (`kisekae bake-correctives --garment`)", value)
            use_garment_correctives(avatar, name, c)
        except KisekaeError as exc:
            raise KisekaeError(f"{exc}", "--garment-correctives") from None
    return "auto"

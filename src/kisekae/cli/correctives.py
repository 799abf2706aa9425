"""``kisekae bake-correctives``: learn the body's pose-space correctives from the offline contact solve, or a
garment's from the per-frame path (``--garment``)."""

from __future__ import annotations

from pathlib import Path

from .common import add_body_arg, add_force_arg, check_outputs


def register(sub):
    p = sub.add_parser("bake-correctives", help="learn pose-space correctives of the body (docs/contact.md)",
                       description="Solves the body's self-contact offline (the continuation from rest) in POSES "
                                   "range-of-motion poses and M poses with the arms at the sides, and fits corrective "
                                   "shapes that follow the joint rotations, "
                                   "so the per-frame body keeps its parts apart (`--correctives FILE` on check, fit, "
                                   "tension, wound, demo). About a second a pose on one core (two with "
                                   "--keep-volume). With --garment NAME it "
                                   "learns that garment's correctives from the per-frame path instead, on the default "
                                   "contact body (`--garment-correctives FILE` on check; about 0.2 s a pose).")
    p.add_argument("--avatar", metavar="FILE", help="avatar file (.glb/.gltf/.vrm) instead of the built-in one")
    add_body_arg(p)
    p.add_argument("--rig", choices=["game_engine", "cmu_mb"], default="game_engine",
                   help="rig of the built-in avatar (default: game_engine)")
    p.add_argument("--garment", metavar="NAME|FILE.mhclo",
                   help="bake this garment's correctives (docs/fit.md 'Garment correctives') instead of the body's")
    p.add_argument("--poses", type=int, default=None, metavar="N", help="range-of-motion poses to solve (default 360)")
    p.add_argument("--arm-poses", type=int, default=None, metavar="M",
                   help="poses with the arms at the sides solved besides (default 180; 0 for none): the range of "
                        "motion rarely hangs an arm against the chest, where skinning buries it")
    p.add_argument("--seed", type=int, default=0, help="seed of the range-of-motion draw (default 0)")
    p.add_argument("--jobs", type=int, default=1, metavar="J", help="worker processes (default 1)")
    p.add_argument("--half", action="store_true",
                   help="store the coefficients as float16 (half the file; offsets change by about 0.1 mm at most)")
    p.add_argument("--keep-volume", action="store_true",
                   help="learn the solve that gives each body part back the volume skinning and the contact take "
                        "(the body keeps its volume within 2%% in the named poses, but garments must then cover "
                        "fuller hips and thighs; docs/contact.md 'Volume kept by parts'); not with --garment")
    p.add_argument("--no-repair", dest="repair", action="store_false",
                   help="with --garment: learn the per-frame path as it is, without first lifting what it leaves "
                        "through the body out of each sample (the offline crossing repair, docs/fit.md 'Garment "
                        "correctives'; on by default)")
    p.add_argument("-o", "--out", default="correctives.npz", help="output file (default: correctives.npz)")
    add_force_arg(p, "the output file")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import sys

    from tqdm import tqdm

    from ..avatar.correctives import TRAIN_ARM_POSES, TRAIN_POSES, bake_correctives_parallel, save_correctives
    from ..errors import KisekaeError

    out = Path(args.out)
    if out.suffix != ".npz":
        raise KisekaeError("the output must be an .npz file", str(out))
    check_outputs([out], force=args.force)
    n = TRAIN_POSES if args.poses is None else args.poses
    arms = TRAIN_ARM_POSES if args.arm_poses is None else args.arm_poses
    if args.jobs < 1:
        raise KisekaeError(f"must be at least 1, got {args.jobs}", "--jobs")
    avatar, name = _avatar(args)
    if name is not None and args.keep_volume:
        raise KisekaeError("keeps the body's volume; a garment's bake learns the per-frame path on the body as it is",
                           "--keep-volume")
    if name is None and not args.repair:
        raise KisekaeError("repairs the samples of a garment's bake: needs --garment", "--no-repair")
    bar = tqdm(total=n + max(arms, 0), desc="contact solve" if name is None else f"{name} per-frame path",
               unit="pose", file=sys.stderr)

    def progress(done, total):
        bar.update(done - bar.n)

    try:
        if name is None:
            c = bake_correctives_parallel(avatar, n, args.seed, arm_poses=arms, jobs=args.jobs, progress=progress,
                                          keep_volume=args.keep_volume)
        else:
            from ..fit.garment_correctives import bake_garment_correctives

            c = bake_garment_correctives(avatar, name, n, args.seed, arm_poses=arms, jobs=args.jobs,
                                         progress=progress, repair=args.repair)
    finally:
        bar.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    save_correctives(c, out, half=args.half)
    active = int((c.vertex_ptr[1:] > c.vertex_ptr[:-1]).sum())
    print(f"{out}: {len(c.joints)} joints x {c.centres.shape[1]} centres, {active} of {c.n_vertices} "
          f"{name or 'body'} vertices corrected, from {n} + {arms} poses")
    return 0


def _avatar(args):
    """(avatar, garment name or None): the plain avatar for a body bake; for ``--garment`` the avatar with the
    default contact body and that garment (a built-in name or an ``.mhclo`` file)."""
    if args.garment is None:
        if args.avatar:
            from ..io import gltf

            return gltf.load_avatar(args.avatar), None
        from ..avatar.builtin import load_builtin_avatar
        from .common import body_shape

        return load_builtin_avatar(args.rig, body_shape(args)), None
    from argparse import Namespace

    from .common import load_avatar

    avatar, names = load_avatar(Namespace(**{**vars(args), "garment": [args.garment]}))
    return avatar, names[0]

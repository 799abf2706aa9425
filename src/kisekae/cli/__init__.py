"""The ``kisekae`` command line.

Each subcommand lives in its own module in this package and exposes ``register(subparsers)``,
which adds its parser and sets ``func`` (a callable taking the parsed ``argparse.Namespace`` and
returning an exit status). Add a new subcommand by adding its module name to ``SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import KisekaeError

#: Modules of this package that provide subcommands, in the order ``--help`` lists them.
SUBCOMMANDS = ["info", "check", "demo", "wound", "tension", "batch", "fit", "correctives", "preview", "blender_addon"]


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="kisekae",
        description="Real-time surface effects on skinned characters (clothes, tension, wounds).",
    )
    parser.add_argument("--version", action="version", version=f"kisekae {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f".{name}", __name__).register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    try:
        return int(args.func(args) or 0)
    except KisekaeError as exc:
        print(f"kisekae: error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        print(f"kisekae: error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kisekae: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

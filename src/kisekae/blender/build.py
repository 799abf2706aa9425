"""Build the Blender extension (Blender 4.2+ extension format) as one installable ``.zip``.

The zip holds ``blender_manifest.toml``, a two-line ``__init__.py`` that registers
:mod:`kisekae.blender.addon`, and ``wheels/``: a wheel of kisekae itself plus the wheels of the
libraries the add-on imports that Blender does not ship (Numba, llvmlite, SciPy; Blender ships
NumPy). Blender installs the wheels into the extension's own site-packages when it installs the
zip. Wheels are fetched with ``pip download`` for each target platform, at the versions installed
beside kisekae (so the extension runs what kisekae's tests run), unless a folder of wheels is given.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from .. import __version__
from ..errors import KisekaeError
from ..outputs import check_outputs

#: Libraries the add-on imports that Blender does not ship, bundled as wheels.
BUNDLED = ("numba", "llvmlite", "scipy")
#: Blender platform name -> pip platform tag (pip also accepts older compatible tags).
PLATFORMS = {
    "linux-x64": "manylinux_2_28_x86_64",
    "windows-x64": "win_amd64",
    "macos-arm64": "macosx_14_0_arm64",
    "macos-x64": "macosx_12_0_x86_64",
}
#: Blender's bundled Python (4.2 to 5.0).
PYTHON = "3.11"

_INIT = '''"""kisekae for Blender: tension maps, clipping fix and check (see docs/blender.md)."""
from kisekae.blender.addon import register, unregister  # noqa: F401
'''


def current_platform() -> str:
    """The Blender platform name of this machine."""
    import platform

    machine = platform.machine().lower()
    arch = "arm64" if machine in ("arm64", "aarch64") else "x64"
    system = {"linux": "linux", "win32": "windows", "darwin": "macos"}.get(sys.platform, sys.platform)
    name = f"{system}-{arch}"
    if name not in PLATFORMS:
        raise KisekaeError(f"no Blender extension platform for {name}; choose one of {', '.join(PLATFORMS)}",
                           "--platform")
    return name


def manifest(wheels, platforms) -> str:
    """The text of ``blender_manifest.toml`` (schema 1.0.0) for these wheel names and platforms."""
    lines = [
        'schema_version = "1.0.0"',
        'id = "kisekae"',
        f'version = "{__version__}"',
        'name = "kisekae"',
        'tagline = "Tension maps and a clipping fix for skinned garments"',
        'maintainer = "kisekae developers"',
        'type = "add-on"',
        'tags = ["Mesh", "Animation"]',
        'blender_version_min = "4.2.0"',
        'license = ["SPDX:MIT"]',
        "platforms = [" + ", ".join(f'"{p}"' for p in platforms) + "]",
        "wheels = [",
        *[f'  "./wheels/{w}",' for w in wheels],
        "]",
        "",
        "[permissions]",
        'files = "Write the per-frame point caches (.pc2) you name"',
        "",
    ]
    return "\n".join(lines)


def source_root() -> Path:
    """kisekae's source checkout (the folder with ``pyproject.toml``), to build its wheel from."""
    root = Path(__file__).resolve().parents[3]
    if not (root / "pyproject.toml").is_file() or not (root / "src" / "kisekae").is_dir():
        raise KisekaeError("kisekae is not installed from a source checkout, so its wheel cannot be built here; "
                           "run this from a clone (pip install -e .)", root)
    return root


def _pip(args, what):
    proc = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise KisekaeError(f"pip could not {what}: {tail[0][:300]}", "pip")


def collect_wheels(folder: Path, platforms, wheels_from=None) -> list:
    """Put kisekae's wheel and the :data:`BUNDLED` wheels for ``platforms`` into ``folder``.

    Parameters
    ----------
    folder : Path
        An empty folder.
    platforms : list of str
        Blender platform names (keys of :data:`PLATFORMS`).
    wheels_from : str or os.PathLike, optional
        A folder that already holds the bundled wheels (pip's ``--find-links``, no index).

    Returns
    -------
    list of str
        Wheel file names, sorted.
    """
    _pip(["wheel", "--no-deps", "-q", "-w", str(folder), str(source_root())],
         "build the kisekae wheel")
    pins = [f"{name}=={metadata.version(name)}" for name in BUNDLED]
    for plat in platforms:
        args = ["download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", PYTHON,
                "--implementation", "cp", "--platform", PLATFORMS[plat], "-d", str(folder)]
        if wheels_from is not None:
            args += ["--no-index", "--find-links", str(wheels_from)]
        _pip(args + pins, f"download {', '.join(pins)} for {plat}")
    names = sorted(p.name for p in folder.glob("*.whl"))
    for name in BUNDLED:
        if not any(re.match(rf"{name}-", w) for w in names):
            raise KisekaeError(f"no {name} wheel was downloaded", folder)
    return names


def build_extension(out_dir, *, platforms=None, force: bool = False, wheels_from=None) -> Path:
    """Build ``OUT_DIR/kisekae-VERSION.zip``, installable in Blender 4.2+ (Get Extensions > Install from Disk).

    Parameters
    ----------
    out_dir : str or os.PathLike
        Folder to write into (created when missing).
    platforms : list of str, optional
        Blender platforms to bundle wheels for (default: this machine's).
    force : bool
        Overwrite an existing zip.
    wheels_from : str or os.PathLike, optional
        Take the bundled wheels from this folder instead of the package index.

    Returns
    -------
    Path
        The zip.
    """
    platforms = list(dict.fromkeys(platforms or [current_platform()]))
    for p in platforms:
        if p not in PLATFORMS:
            raise KisekaeError(f"unknown platform {p!r}; choose from {', '.join(PLATFORMS)}", "--platform")
    out_dir = Path(out_dir)
    (target,) = check_outputs([out_dir / f"kisekae-{__version__}.zip"], force=force, folders=[out_dir])
    with tempfile.TemporaryDirectory(prefix="kisekae-ext-") as tmp:
        wheel_dir = Path(tmp)
        names = collect_wheels(wheel_dir, platforms, wheels_from)
        out_dir.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("blender_manifest.toml", manifest(names, platforms))
            zf.writestr("__init__.py", _INIT)
            for name in names:
                zf.write(wheel_dir / name, f"wheels/{name}", compress_type=zipfile.ZIP_STORED)
        partial.replace(target)
    return target

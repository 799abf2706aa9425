"""HLSL -> SPIR-V -> GLSL with glslang, spirv-val and spirv-cross, cached by source hash.

The kisekae core is HLSL. This module turns a shader that includes it into SPIR-V (glslang's HLSL
front end, warnings are errors), validates it with ``spirv-val`` and cross-compiles it to GLSL for
OpenGL (moderngl) with ``spirv-cross``. Results are cached in a user cache directory keyed by the
SHA-256 of every input (the entry source, every ``.hlsl`` file in the include directories, the defines,
the flags and the tool versions), so an edited core is always recompiled and an unchanged one is not.
The package directory is never written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KisekaeError

#: Folder of the HLSL core shipped with the package.
HLSL_DIR = Path(__file__).resolve().parent / "hlsl"

_STAGES = {"vert", "frag", "comp"}
_TOOLS = ("glslangValidator", "spirv-val", "spirv-cross")


def cache_dir() -> Path:
    """Directory of compiled shaders: ``$KISEKAE_SHADER_CACHE`` or ``$XDG_CACHE_HOME/kisekae/shaders``."""
    env = os.environ.get("KISEKAE_SHADER_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kisekae" / "shaders"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise KisekaeError(
            f"{name} not found on PATH; install glslang-tools, spirv-tools and spirv-cross", name
        )
    return path


_VERSION_CACHE: dict[str, str] = {}


def tool_versions() -> dict[str, str]:
    """Version strings of glslangValidator, spirv-val and spirv-cross (part of every cache key)."""
    if not _VERSION_CACHE:
        for name, arg in (("glslangValidator", "--version"), ("spirv-val", "--version"), ("spirv-cross", "--revision")):
            out = subprocess.run([_tool(name), arg], capture_output=True, text=True)
            _VERSION_CACHE[name] = (out.stdout + out.stderr).strip().splitlines()[0] if (out.stdout + out.stderr).strip() else ""
    return dict(_VERSION_CACHE)


@dataclass(frozen=True)
class CompiledShader:
    """One compiled stage.

    Attributes
    ----------
    spirv : bytes
        Validated SPIR-V module.
    glsl : str
        GLSL from spirv-cross (``#version`` as requested).
    key : str
        SHA-256 cache key of all inputs.
    log : str
        glslang's output (empty of warnings, or compilation would have failed).
    """

    spirv: bytes
    glsl: str
    key: str
    log: str = ""
    bindings: dict = field(default_factory=dict)


_BINDING_RE = re.compile(
    r"layout\(binding = (\d+)(?:, std(?:140|430))?\)\s+(?:readonly\s+|writeonly\s+)?(uniform|buffer)\s+(\w+)"
)


def glsl_bindings(glsl: str) -> dict[str, tuple[str, int]]:
    """Map block and sampler names in spirv-cross GLSL to ``(kind, binding)``; kind is 'uniform' or 'buffer'."""
    out = {}
    for m in _BINDING_RE.finditer(glsl):
        out[m.group(3)] = (m.group(2), int(m.group(1)))
    return out


_NODE = re.compile(r"^(\d+):(\d+)( +)(.*)$")


def implicit_truncations(ast_text: str) -> list[str]:
    """Vector truncations in glslang's AST dump (``-i``): a ``Construct vecN`` of one wider vector.

    glslang accepts ``float3 q = p4;`` silently; DXC warns ("implicit truncation of vector type").
    The core must not contain any, so :func:`compile_hlsl` rejects them. Returns ``"file-line: text"``
    strings (``file`` is glslang's source-string number).
    """
    lines = ast_text.split("Linked ")[0].splitlines()
    found = []
    for i, line in enumerate(lines):
        m = _NODE.match(line)
        if not m or not m.group(4).startswith("Construct vec"):
            continue
        n_out = int(m.group(4)[len("Construct vec")])
        indent = len(m.group(3))
        children = []
        for nxt in lines[i + 1 :]:
            c = _NODE.match(nxt)
            if not c:
                break
            if len(c.group(3)) <= indent:
                break
            if len(c.group(3)) == indent + 2:
                children.append(c.group(4))
        if len(children) == 1:
            w = re.search(r"(\d)-component vector", children[0])
            if w and int(w.group(1)) > n_out:
                found.append(f"{m.group(1)}-{m.group(2)}: {children[0].strip()}")
    return found


def _include_digest(include_dirs) -> str:
    h = hashlib.sha256()
    for d in include_dirs:
        for p in sorted(Path(d).rglob("*")):
            if p.is_file() and p.suffix in {".hlsl", ".hlsli", ".azsli"}:
                h.update(str(p.relative_to(d)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()


def compile_hlsl(
    source,
    stage: str,
    *,
    entry: str = "main",
    defines: dict | None = None,
    include_dirs=(),
    glsl_version: int = 430,
    es: bool = False,
    filename: str = "kisekae_entry.hlsl",
    use_cache: bool = True,
    core_dir=None,
) -> CompiledShader:
    """Compile HLSL source to validated SPIR-V and GLSL.

    Parameters
    ----------
    source : str or os.PathLike
        HLSL text, or a path to an ``.hlsl`` file (its folder is searched for relative includes).
    stage : {'vert', 'frag', 'comp'}
        Shader stage.
    entry : str
        Entry point name (default ``main``).
    defines : dict, optional
        Preprocessor macros, ``{name: value}`` (value ``None`` defines the name without a value).
    include_dirs : sequence of path
        Extra include folders; :data:`HLSL_DIR` is always searched.
    glsl_version : int
        GLSL ``#version`` spirv-cross emits (330 for a vertex/fragment renderer, 430 for compute).
    es : bool
        Emit GLSL ES instead of desktop GLSL.
    filename : str
        Name used for ``source`` text in messages.
    use_cache : bool
        Read and write the cache in :func:`cache_dir`.
    core_dir : path, optional
        Folder of the core to compile against instead of :data:`HLSL_DIR` (tests use a modified copy).

    Returns
    -------
    CompiledShader

    Raises
    ------
    KisekaeError
        Unknown stage, a missing tool, a compile error, any glslang warning, or invalid SPIR-V.
    """
    if stage not in _STAGES:
        raise KisekaeError(f"stage must be one of {sorted(_STAGES)}, got {stage!r}", "stage")
    text, filename, base_dir = _read_source(source, filename)
    incs = [Path(core_dir) if core_dir else HLSL_DIR] + [Path(d) for d in include_dirs] + ([base_dir] if base_dir else [])
    flags = ["-D", "-V", "-i", "-e", entry, "-S", stage, "--hlsl-iomap", "--auto-map-bindings", "--auto-map-locations"]
    for name, value in sorted(dict(defines or {}).items()):
        flags.append(f"-D{name}" if value is None else f"-D{name}={value}")
    flags += [f"-I{d}" for d in incs]
    cross_flags = ["--version", str(glsl_version), "--es" if es else "--no-es"]
    key = _cache_key(text, incs, flags, cross_flags, filename)
    cdir = cache_dir()
    spv_path, glsl_path = cdir / f"{key}.spv", cdir / f"{key}.glsl"
    if use_cache and spv_path.is_file() and glsl_path.is_file():
        glsl = glsl_path.read_text()
        return CompiledShader(spv_path.read_bytes(), glsl, key, "", glsl_bindings(glsl))
    with tempfile.TemporaryDirectory(prefix="kisekae-hlsl-") as tmp:
        tmp = Path(tmp)
        src_path = (base_dir / filename) if base_dir else tmp / filename
        if not base_dir:
            src_path.write_text(text)
        out_spv = tmp / "out.spv"
        log = _glslang(flags, src_path, out_spv, filename)
        spirv, glsl = _validate_and_cross(out_spv, cross_flags, filename)
    if use_cache:
        _write_cache(cdir, ((spv_path, spirv), (glsl_path, glsl.encode())))
    return CompiledShader(spirv, glsl, key, log, glsl_bindings(glsl))


def _read_source(source, filename: str):
    """``(text, filename, folder)``: HLSL text, or the file at a path (its folder for includes)."""
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source and source.endswith(".hlsl")):
        path = Path(source)
        if not path.is_file():
            raise KisekaeError("HLSL file not found", path)
        return path.read_text(), path.name, path.parent
    return str(source), filename, None


def _cache_key(text: str, incs, flags, cross_flags, filename: str) -> str:
    """SHA-256 over the source, every include file, the flags (not the include paths) and the tools."""
    key_src = json.dumps(
        {
            "text": text,
            "includes": _include_digest(incs),
            "flags": [f for f in flags if not f.startswith("-I")],
            "cross": cross_flags,
            "tools": tool_versions(),
            "file": filename,
        },
        sort_keys=True,
    )
    return hashlib.sha256(key_src.encode()).hexdigest()


def _glslang(flags, src_path: Path, out_spv: Path, filename: str) -> str:
    """HLSL to SPIR-V with glslang; errors, any warning and implicit truncations raise. Returns the log."""
    res = subprocess.run([_tool("glslangValidator"), *flags, "-o", str(out_spv), str(src_path)],
                         capture_output=True, text=True)
    messages = [
        line for line in (res.stdout + res.stderr).splitlines()
        if line.startswith(("ERROR", "WARNING")) or "error" in line.lower().split(":")[0]
    ]
    log = "\n".join(messages)
    if res.returncode != 0 or not out_spv.is_file():
        raise KisekaeError(f"glslang failed to compile:\n{log}", filename)
    if any(line.upper().startswith("WARNING") for line in messages):
        raise KisekaeError(f"glslang warned (warnings are errors for the core):\n{log}", filename)
    trunc = implicit_truncations(res.stdout)
    if trunc:
        raise KisekaeError("implicit vector truncation (DXC warns; write .xyz etc.):\n" + "\n".join(trunc), filename)
    return log


def _validate_and_cross(out_spv: Path, cross_flags, filename: str):
    """spirv-val the module, then spirv-cross it to GLSL: ``(spirv bytes, glsl text)``."""
    val = subprocess.run([_tool("spirv-val"), str(out_spv)], capture_output=True, text=True)
    if val.returncode != 0:
        raise KisekaeError(f"spirv-val rejected the module:\n{val.stdout}{val.stderr}", filename)
    cross = subprocess.run([_tool("spirv-cross"), *cross_flags, str(out_spv)], capture_output=True, text=True)
    if cross.returncode != 0:
        raise KisekaeError(f"spirv-cross failed:\n{cross.stderr}", filename)
    return out_spv.read_bytes(), cross.stdout


def _write_cache(cdir: Path, items) -> None:
    """Write ``(path, bytes)`` items atomically: concurrent test processes may compile the same key."""
    cdir.mkdir(parents=True, exist_ok=True)
    for path, data in items:
        fd, tmp_name = tempfile.mkstemp(dir=cdir, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp_name, path)


def compile_with_slang(source: str, entry: str, *, name: str = "kisekae_slang", include_dirs=None) -> None:
    """Compile an HLSL compute shader through Slang's CPU target (``slangpy``), a second HLSL front-end.

    Slang's rules are closer to DXC's than glslang's, so code that only glslang accepts is caught here.
    The CPU target builds the kernel with the system C++ compiler (``g++``).

    Parameters
    ----------
    source : str, HLSL source with a ``[numthreads]`` compute entry point
    entry : str, the entry point's name (not ``main``: on the CPU target it would clash with C's)
    name : str, module name
    include_dirs : list of paths, default the core's folder

    Raises
    ------
    KisekaeError
        When slangpy is missing or Slang (or the C++ build) rejects the source, with Slang's message.
    """
    try:
        import slangpy
    except ImportError as exc:  # pragma: no cover - the test extra installs it
        raise KisekaeError("slangpy is not installed (pip install slangpy)", "slang") from exc
    dirs = [str(d) for d in (include_dirs or [HLSL_DIR])]
    device = slangpy.Device(type=slangpy.DeviceType.cpu, compiler_options={"include_paths": dirs})
    try:
        module = device.load_module_from_source(name, source)
        device.create_compute_pipeline(device.link_program([module], [module.entry_point(entry)]))
    except (RuntimeError, slangpy.SlangCompileError) as exc:
        raise KisekaeError(f"Slang rejected the shader: {str(exc).strip()[:2000]}", name) from None
    finally:
        device.close()

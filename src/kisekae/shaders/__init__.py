"""The kisekae shader core: one HLSL source for Unity, O3DE and the kisekae Python renderer.

Layout
------
``hlsl/kisekae_core.hlsl``            the one include (capsule field, capsule and skin-bound push-out, tight look,
                                      tension map, wrinkle weights and normal blend, wound hits and target decoding)
``hlsl/kisekae_source_*.hlsl``        data sources: constant arrays, a float texture, structured buffers, and
                                      per-vertex textures (posed body, wound targets)
``hlsl/render/*.hlsl``                vertex/fragment programs the Python renderer runs
``hlsl/conformance/*.comp.hlsl``      the compute kernel CI uses to compare the core with the references
``unity/``, ``o3de/``                 engine glue (see docs/engine-integration.md)

API for the renderer
--------------------
The renderer never carries GLSL of its own for these effects; it asks for the cross-compiled core::

    from kisekae.shaders import program_glsl
    prog = program_glsl("garment")              # or "skin"
    ctx.program(vertex_shader=prog.vertex_shader, fragment_shader=prog.fragment_shader)

:func:`program_glsl` compiles ``hlsl/render/kisekae_<name>.{vert,frag}.hlsl`` (which include the core)
with glslang's HLSL front end, validates the SPIR-V with spirv-val and turns it into GLSL 4.1 with
spirv-cross, cached by the SHA-256 of every HLSL file, so an edited core is what runs. Uniform
blocks: see ``ProgramGLSL.bindings``; the garment program reads the capsule rig from the block
``_Global`` (``_KisekaeCapsuleA/B[128]``, ``_KisekaeCapsuleCount``) and its parameters from
``KisekaeGarment``. :func:`compile_hlsl` compiles any other HLSL that includes the core.

The ``gpu_*`` functions of :mod:`kisekae.shaders.execute` run single core functions over arrays;
:mod:`kisekae.shaders.conformance` compares them with the Python references.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import KisekaeError
from .toolchain import HLSL_DIR, CompiledShader, cache_dir, compile_hlsl, glsl_bindings

#: Renderer programs: name -> (vertex HLSL, fragment HLSL), relative to :data:`HLSL_DIR`.
PROGRAMS = {
    "garment": ("render/kisekae_garment.vert.hlsl", "render/kisekae_garment.frag.hlsl"),
    "skin": ("render/kisekae_skin.vert.hlsl", "render/kisekae_skin.frag.hlsl"),
}


@dataclass(frozen=True)
class ProgramGLSL:
    """GLSL of one renderer program, generated from the HLSL core.

    Attributes
    ----------
    vertex_shader, fragment_shader : str
        GLSL (``#version`` as requested, 410 by default).
    bindings : dict
        Uniform block name -> ``(kind, binding)`` over both stages.
    key : str
        Combined cache keys (changes whenever any HLSL file changes).
    """

    vertex_shader: str
    fragment_shader: str
    bindings: dict
    key: str


def core_dir() -> Path:
    """Folder of the HLSL core shipped in the package (read-only at run time)."""
    return HLSL_DIR


def program_glsl(name: str, *, glsl_version: int = 410, defines: dict | None = None, core_dir=None) -> ProgramGLSL:
    """Cross-compile a renderer program (``'garment'`` or ``'skin'``) from the HLSL core to GLSL.

    Parameters
    ----------
    name : {'garment', 'skin'}
        ``garment``: vertex stage pushes posed garment vertices out of the capsule rig
        (``KisekaePushOut``); inputs ``POSITION`` (m), ``NORMAL``, ``TEXCOORD0`` = (tightness,
        softness). ``skin``: fragment stage applies ``KisekaeTightLook``.
    glsl_version : int
        GLSL version to emit (>= 410, so varyings match by location).
    defines : dict, optional
        Extra macros, e.g. ``{"KISEKAE_MAX_CAPSULES": 96}``.
    core_dir : path, optional
        Another copy of the core (tests).

    Returns
    -------
    ProgramGLSL
    """
    if name not in PROGRAMS:
        raise KisekaeError(f"unknown program {name!r}; choose from {sorted(PROGRAMS)}", "program")
    if glsl_version < 410:
        raise KisekaeError("need GLSL 410 or newer (locations on varyings)", "glsl_version")
    root = Path(core_dir) if core_dir else HLSL_DIR
    vs = compile_hlsl(root / PROGRAMS[name][0], "vert", defines=defines, glsl_version=glsl_version, core_dir=root)
    fs = compile_hlsl(root / PROGRAMS[name][1], "frag", defines=defines, glsl_version=glsl_version, core_dir=root)
    return ProgramGLSL(vs.glsl, fs.glsl, {**fs.bindings, **vs.bindings}, vs.key + fs.key)


__all__ = ["HLSL_DIR", "PROGRAMS", "CompiledShader", "ProgramGLSL", "cache_dir", "compile_hlsl", "core_dir",
           "glsl_bindings", "program_glsl"]

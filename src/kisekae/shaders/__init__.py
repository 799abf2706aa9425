"""The kisekae shader core: one HLSL source for Unity, O3DE and the kisekae Python renderer.

Layout
------
``hlsl/kisekae_core.hlsl``            the one include (capsule field, capsule and skin-bound push-out, tight look,
                                      tension map, wrinkle weights and normal blend, wound hits and target decoding)
``hlsl/kisekae_source_*.hlsl``        data sources: constant arrays, a float texture, structured buffers, and
                                      per-vertex textures (posed body, wound targets)
``hlsl/conformance/*.comp.hlsl``      the compute kernel CI uses to compare the core with the references
``unity/``, ``o3de/``                 engine glue (see docs/engine-integration.md)

Compiling
---------
:func:`compile_hlsl` compiles any HLSL that includes the core with glslang's HLSL front end,
validates the SPIR-V with spirv-val and turns it into GLSL with spirv-cross, cached by the SHA-256
of every HLSL file, so an edited core is what runs. The renderer's own surface program
(``kisekae/render/hlsl``, :func:`kisekae.render.shading.core_program`) is compiled this way.

The ``gpu_*`` functions of :mod:`kisekae.shaders.execute` run single core functions over arrays;
:mod:`kisekae.shaders.conformance` compares them with the Python references.
"""

from __future__ import annotations

from .toolchain import HLSL_DIR, CompiledShader, cache_dir, compile_hlsl, glsl_bindings

__all__ = ["HLSL_DIR", "CompiledShader", "cache_dir", "compile_hlsl", "glsl_bindings"]

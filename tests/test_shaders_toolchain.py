"""HLSL toolchain (glslang -> spirv-val -> spirv-cross), its cache, and the renderer running the core."""

import shutil

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.shaders import HLSL_DIR, compile_hlsl, toolchain


def test_core_compiles_every_source_and_stage_without_warnings():
    for src in ("constants", "texture", "structured"):
        c = compile_hlsl(HLSL_DIR / "conformance" / "kisekae_conformance.comp.hlsl", "comp", use_cache=False,
                         defines={"KISEKAE_HARNESS_SOURCE": {"constants": 0, "texture": 1, "structured": 2}[src]})
        assert c.spirv[:4] == b"\x03\x02\x23\x07" and "WARNING" not in c.log.upper()
    from kisekae.render.shading import FRAGMENT_HLSL, VERTEX_HLSL  # the renderer's program includes the core

    compile_hlsl(VERTEX_HLSL, "vert", use_cache=False)
    compile_hlsl(FRAGMENT_HLSL, "frag", use_cache=False)


def test_warnings_and_errors_are_reported():
    # any glslang warning is an error for the core (here: an attribute glslang does not know)
    warn = "[unknownattr] float4 main() : SV_Position { return float4(0.0, 0.0, 0.0, 1.0); }"
    with pytest.raises(KisekaeError, match="(?i)warn"):
        compile_hlsl(warn, "vert", use_cache=False)
    # implicit vector truncation: glslang is silent, DXC warns; the toolchain rejects it
    trunc = "float4 main(float4 p : POSITION) : SV_Position { float3 q = p; return float4(q, 1.0); }"
    with pytest.raises(KisekaeError, match="truncation"):
        compile_hlsl(trunc, "vert", use_cache=False)
    compile_hlsl(trunc.replace("q = p;", "q = p.xyz;"), "vert", use_cache=False)
    with pytest.raises(KisekaeError, match="glslang failed"):
        compile_hlsl("float4 main() : SV_Position { return undefined_thing; }", "vert", use_cache=False)
    with pytest.raises(KisekaeError, match="stage"):
        compile_hlsl("x", "geom")
    with pytest.raises(KisekaeError, match="not found"):
        compile_hlsl(HLSL_DIR / "nope.hlsl", "vert")
    # the core refuses to compile without a data source
    with pytest.raises(KisekaeError, match="data"):
        compile_hlsl('#include "kisekae_core.hlsl"\nfloat4 main() : SV_Position { return float4(0,0,0,1); }', "vert",
                     use_cache=False)


def test_cache_key_follows_every_core_file(tmp_path, monkeypatch):
    monkeypatch.setenv("KISEKAE_SHADER_CACHE", str(tmp_path / "cache"))
    core = tmp_path / "core"
    shutil.copytree(HLSL_DIR, core)
    kernel = core / "conformance" / "kisekae_conformance.comp.hlsl"
    defines = {"KISEKAE_HARNESS_SOURCE": 0}
    a = compile_hlsl(kernel, "comp", defines=defines, core_dir=core)
    assert compile_hlsl(kernel, "comp", defines=defines, core_dir=core).key == a.key  # cached
    assert any((tmp_path / "cache").iterdir())
    path = core / "kisekae_pushout.hlsl"
    path.write_text(path.read_text().replace("0.5 * tightness", "0.75 * tightness"))
    b = compile_hlsl(kernel, "comp", defines=defines, core_dir=core)
    assert b.key != a.key and b.glsl != a.glsl and "0.75" in b.glsl
    assert not any(p.suffix in (".spv", ".glsl") for p in HLSL_DIR.rglob("*"))  # package dir never written


def test_no_hand_copied_core_in_the_package():
    """Only the HLSL files define the core; nothing else in the package re-implements it in GLSL."""
    root = HLSL_DIR.parents[1]
    markers = ("KisekaeCapsuleDistance", "KisekaePushAmount", "KisekaeTightLook", "KisekaeTensionFromRatio",
               "KisekaeBoundPushOut", "KisekaeWrinkleWeights", "KisekaeBlendWrinkleNormals", "KisekaeWoundDecode")
    for path in root.rglob("*"):
        if not path.is_file() or HLSL_DIR in path.parents or path.suffix in (".pyc",):
            continue
        if path.suffix in (".glsl", ".vert", ".frag", ".comp", ".vs", ".fs"):
            pytest.fail(f"GLSL file in the package: {path}")
        if path.suffix == ".py" and "shaders" not in path.parts:
            text = path.read_text(errors="ignore")
            assert not any(m in text and "#version" in text for m in markers), path


def test_unity_include_layout_compiles(tmp_path):
    """The Unity entry include works in the documented layout (Shaders/KisekaeCore.hlsl + Shaders/hlsl/).

    This only proves the include path and the constant-array source compile with glslang; Unity itself
    is not available here.
    """
    unity = HLSL_DIR.parent / "unity" / "Shaders"
    shutil.copy(unity / "KisekaeCore.hlsl", tmp_path / "KisekaeCore.hlsl")
    shutil.copytree(HLSL_DIR, tmp_path / "hlsl")
    (tmp_path / "probe.hlsl").write_text(
        '#include "KisekaeCore.hlsl"\n'
        "float4 main(float3 p : POSITION) : SV_Position {\n"
        "    KisekaePushParams P; P.margin = 0.002; P.stiffness = 0.5; P.maxPush = 0.1; P.skirtBias = 0.0;\n"
        "    P.smoothK = 0.0; P.up = float3(0.0, 1.0, 0.0); float push; float d;\n"
        "    return float4(KisekaePushOut(p, 0.0, 0.0, P, push, d), 1.0); }\n"
    )
    c = compile_hlsl(tmp_path / "probe.hlsl", "vert", use_cache=False, core_dir=tmp_path / "hlsl")
    assert "_KisekaeCapsuleA" in c.glsl and "_KisekaeCapsuleCount" in c.glsl
    shader = (unity / "KisekaeClothURP.shader").read_text()
    assert '#include "KisekaeCore.hlsl"' in shader and "KisekaePushOut(" in shader
    cs = (HLSL_DIR.parent / "unity" / "Runtime" / "KisekaeCapsuleRig.cs").read_text()
    for name in ("_KisekaeCapsuleA", "_KisekaeCapsuleB", "_KisekaeCapsuleCount", "_KisekaeHits", "_KisekaeHitCount"):
        assert name in cs and name in (HLSL_DIR / "kisekae_source_constants.hlsl").read_text()


_VERTEX_PROBE = """#include "KisekaeCore.hlsl"
struct VIn { float3 p : POSITION; float3 bary : TEXCOORD2; float3 corners : TEXCOORD3; float4 c : COLOR0;
             uint id : SV_VertexID; };
float4 main(VIn v) : SV_Position
{
    KisekaePushParams P; P.margin = 0.002; P.stiffness = 0.5; P.maxPush = 0.1; P.skirtBias = 0.0;
    P.smoothK = 0.0; P.up = float3(0.0, 1.0, 0.0);
    float3 push; float d; float s;
    float3 q = KisekaeSkinPushOut(v.p, (uint3)v.corners, v.bary, 0.0, 0.0, P, push, d, s);
    KisekaeWoundEncoding E; E.kind = KISEKAE_WOUND_DELTA16; E.boundsMin = float3(-0.1, -0.1, -0.1);
    E.boundsMax = float3(0.1, 0.1, 0.1);
    float3 tp; float3 tn; uint part;
    KisekaeWoundTarget(v.id, q, v.c, E, tp, tn, part);
    float3 n = float3(0.0, 1.0, 0.0);
    KisekaeWoundMorph(q, n, tp, tn, 0.5);
    return float4(q + 0.001 * n, 1.0 + (float)part);
}
"""


def test_unity_vertex_textures_compile_for_mobile(tmp_path):
    """The Unity include with KISEKAE_VERTEX_TEXTURES (skin-bound push-out, wound targets) compiles without
    warnings and cross-compiles to GLSL ES 3.00: textures and constant arrays only, no compute buffers.
    (Unity itself is not available here.)"""
    unity = HLSL_DIR.parent / "unity" / "Shaders"
    shutil.copy(unity / "KisekaeCore.hlsl", tmp_path / "KisekaeCore.hlsl")
    shutil.copytree(HLSL_DIR, tmp_path / "hlsl")
    (tmp_path / "probe.hlsl").write_text(_VERTEX_PROBE)
    c = compile_hlsl(tmp_path / "probe.hlsl", "vert", defines={"KISEKAE_VERTEX_TEXTURES": None}, glsl_version=300,
                     es=True, use_cache=False, core_dir=tmp_path / "hlsl")
    assert c.glsl.startswith("#version 300 es") and "WARNING" not in c.log.upper()
    for name in ("_KisekaeBodyPositionTex", "_KisekaeBodyNormalTex", "_KisekaeWoundPositionTex", "_KisekaeWoundNormalTex"):
        assert name in c.glsl
    assert "texelFetch" in c.glsl and "buffer" not in c.glsl.replace("Buffer", "")
    # without the define the texture functions are absent, so the same call does not compile
    with pytest.raises(KisekaeError, match="glslang failed"):
        compile_hlsl(tmp_path / "probe.hlsl", "vert", use_cache=False, core_dir=tmp_path / "hlsl")


def test_o3de_srg_defines_every_data_macro():
    """O3DE's SRG file defines every data macro of the core (it cannot use kisekae_source_*.hlsl)."""
    srg = (HLSL_DIR.parent / "o3de" / "KisekaeSrg.azsli").read_text()
    for macro in ("KISEKAE_CAPSULE_COUNT", "KISEKAE_LOAD_CAPSULE", "KISEKAE_HIT_COUNT", "KISEKAE_LOAD_HIT",
                  "KISEKAE_LOAD_BODY_POSITION", "KISEKAE_LOAD_BODY_NORMAL", "KISEKAE_LOAD_WOUND_POSITION",
                  "KISEKAE_LOAD_WOUND_NORMAL"):
        assert f"#define {macro}(" in srg or f"#define {macro} " in srg, macro


def _cs_const(text, name):
    import re

    found = re.findall(rf"public const int {name} = (\d+);", text)
    assert len(found) == 1, name
    return int(found[0])


def test_engine_glue_sizes_equal_the_core_and_hold_the_fitted_rig(tmp_path):
    """Unity's C# arrays, O3DE's SRG arrays and the HLSL constant arrays have one size, big enough for the
    built-in avatar's fitted rig (95 capsules; the glue held 64 and silently dropped the rest)."""
    from kisekae.shaders.limits import MAX_CAPSULES, MAX_HITS, hlsl_default

    cs = (HLSL_DIR.parent / "unity" / "Runtime" / "KisekaeCapsuleRig.cs").read_text()
    srg = HLSL_DIR.parent / "o3de" / "KisekaeSrg.azsli"
    assert _cs_const(cs, "MaxCapsules") == MAX_CAPSULES == hlsl_default("KISEKAE_MAX_CAPSULES", srg) >= 95
    assert _cs_const(cs, "MaxHits") == MAX_HITS == hlsl_default("KISEKAE_MAX_HITS", srg)
    # the component refuses a bigger rig instead of truncating it
    assert "Mathf.Min(capsules.Length" not in cs
    assert "capsules.Length > MaxCapsules" in cs and "Debug.LogError(problem" in cs and "enabled = false" in cs
    # the size is the one the HLSL declares when compiled, in the Unity include layout
    unity = HLSL_DIR.parent / "unity" / "Shaders"
    shutil.copy(unity / "KisekaeCore.hlsl", tmp_path / "KisekaeCore.hlsl")
    shutil.copytree(HLSL_DIR, tmp_path / "hlsl")
    (tmp_path / "probe.hlsl").write_text(
        '#include "KisekaeCore.hlsl"\n'
        "float4 main(float3 p : POSITION) : SV_Position {\n"
        "    float3 g; uint k; float d = KisekaeCapsuleField(p, 0.0, g, k); return float4(p + d * g, 1.0); }\n"
    )
    c = compile_hlsl(tmp_path / "probe.hlsl", "vert", use_cache=False, core_dir=tmp_path / "hlsl", glsl_version=300,
                     es=True)
    assert f"_KisekaeCapsuleA[{MAX_CAPSULES}]" in c.glsl and f"_KisekaeHits[{MAX_HITS}]" in c.glsl


def test_hlsl_default_parsing_names_the_file(tmp_path):
    from kisekae.shaders.limits import check_capsule_count, constant_vectors, hlsl_default

    f = tmp_path / "x.hlsl"
    f.write_text("#ifndef KISEKAE_MAX_CAPSULES\n#define KISEKAE_MAX_CAPSULES 7\n#endif\n")
    assert hlsl_default("KISEKAE_MAX_CAPSULES", f) == 7
    with pytest.raises(KisekaeError, match="x.hlsl.*KISEKAE_MAX_HITS"):
        hlsl_default("KISEKAE_MAX_HITS", f)
    assert constant_vectors(128, 32) == 289
    assert check_capsule_count(128, 128) == 128
    with pytest.raises(KisekaeError, match="my_rig.json: the rig has 129 capsules.*hold 128"):
        check_capsule_count(129, 128, "my_rig.json")

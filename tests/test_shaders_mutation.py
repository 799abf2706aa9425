"""Every number in the HLSL core matters: change any one and the conformance checks fail.

For each numeric literal in the core's function files (not in comments, not on lines marked
``kisekae:guard``, which only choose a fallback direction for exactly degenerate input or spell
+infinity), a copy of the core with that literal changed is compiled and executed, and at least one
conformance check must fail. Floats become ``1.25 v + 0.01``, integers ``n + 1``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from kisekae.shaders import conformance as C
from kisekae.shaders.toolchain import HLSL_DIR

LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*|\.\d+|\d+)(u)?(?![\w.])")

#: core file -> the conformance groups that exercise it
GROUPS = {
    "kisekae_vertexdata.hlsl": ("bound",),
    "kisekae_capsule.hlsl": ("capsule", "pushout"),
    "kisekae_pushout.hlsl": ("pushout",),
    "kisekae_bound.hlsl": ("bound",),
    "kisekae_tightlook.hlsl": ("tight",),
    "kisekae_tension.hlsl": ("tension",),
    "kisekae_wrinkle.hlsl": ("wrinkle",),
    "kisekae_wound.hlsl": ("wound", "wound_decode"),
    "kisekae_contact.hlsl": ("contact",),
    "kisekae_part_contact.hlsl": ("part_contact",),
    "kisekae_surface.hlsl": ("surface",),
    "kisekae_self_layers.hlsl": ("self_layers",),
    "kisekae_corrective.hlsl": ("corrective",),
}


def literals():
    """(file, line number, column, literal text) of every mutable number in the core."""
    out = []
    for name in GROUPS:
        for ln, line in enumerate((HLSL_DIR / name).read_text().splitlines()):
            code = line.split("//")[0]
            if "kisekae:guard" in line or code.strip().startswith("#"):
                continue
            for m in LITERAL.finditer(code):
                out.append((name, ln, m.start(), m.group(0)))
    return out


def mutate(text: str) -> str:
    if text.endswith("u"):
        return f"{int(text[:-1]) + 1}u"
    if "." not in text:
        return str(int(text) + 1)
    return repr(float(text) * 1.25 + 0.01)


def _group_checks(group):
    """The conformance checks of one group, as lists of checks (run them under ``using_core``)."""
    poses = ("crouch",)
    if group == "capsule":
        yield C.capsule_checks("constants", poses)
    elif group == "pushout":
        yield C.pushout_checks("constants", poses)
    elif group == "tension":
        yield C.tension_checks(poses)
    elif group == "tight":
        yield C.tight_look_checks()
    elif group == "bound":
        yield C.body_follow_checks(poses)
        yield C.bound_checks(poses)
    elif group == "wrinkle":
        yield C.wrinkle_checks()
    elif group == "wound_decode":  # one encoding at a time, so that detection can stop early
        for name in C.WOUND_DECODE_ORDER:
            yield C.wound_decode_checks((name,))
    elif group == "contact":
        yield C.contact_checks(poses)
    elif group == "part_contact":
        yield C.part_contact_checks()
    elif group == "corrective":
        yield C.corrective_analytic_checks()
        yield C.corrective_avatar_checks(poses)
    elif group == "self_layers":
        yield C.self_layer_checks()
    elif group == "surface":  # the quick analytic cases first, so that detection can stop early
        yield C.surface_sheet_checks()
        yield C.smooth_strip_checks()
        yield C.surface_chord_checks()
        yield C.surface_depth_bound_checks()
        yield C.guarded_normal_checks()
        yield C.edge_lift_plane_checks()
        yield C.unflip_analytic_checks()
        yield C.finish_step_checks()
        yield C.surface_avatar_checks(poses)
        yield C.edge_lift_avatar_checks(poses)
    else:
        yield C.wound_checks("constants")


def _run_group(group, core_dir):
    from kisekae.shaders import execute as X

    with X.using_core(core_dir):
        return [c for checks in _group_checks(group) for c in checks]


def _detected(name, core_dir):
    """True when some check of the file's groups fails; stops at the first failing batch of checks."""
    from kisekae.shaders import execute as X

    with X.using_core(core_dir):
        return any(any(not c.ok for c in checks) for g in GROUPS[name] for checks in _group_checks(g))


def test_literal_scan_finds_the_core_constants():
    found = {(f, t) for f, _, _, t in literals()}
    assert ("kisekae_tension.hlsl", "6.0") in found       # Blender's smin k/6
    assert ("kisekae_tension.hlsl", "0.001") in found     # compress-area floor
    assert ("kisekae_capsule.hlsl", "0.25") in found      # quadratic smooth-min
    assert ("kisekae_pushout.hlsl", "0.5") in found       # tightness halves the gap
    assert ("kisekae_tightlook.hlsl", "0.35") in found    # the anime preset's normal strength
    assert ("kisekae_wrinkle.hlsl", "0.015625") in found  # slope floor of grazing normals
    assert ("kisekae_wound.hlsl", "255.0") in found       # body part id from 8-bit alpha
    assert ("kisekae_vertexdata.hlsl", "0") in found      # mip level of vertex texels
    assert ("kisekae_surface.hlsl", "0.5") in found       # the smoothing's Jacobi average
    assert ("kisekae_surface.hlsl", "8.0") in found       # the chord's sagitta kappa L^2 / 8
    assert len(literals()) >= 60


@pytest.mark.parametrize("group", sorted({g for gs in GROUPS.values() for g in gs}))
def test_unchanged_copy_passes(tmp_path, group):
    core = tmp_path / "core"
    shutil.copytree(HLSL_DIR, core)
    bad = [c.name for c in _run_group(group, core) if not c.ok]
    assert not bad


def test_every_literal_change_is_detected(tmp_path):
    core = tmp_path / "core"
    shutil.copytree(HLSL_DIR, core)
    survivors = []
    for name, ln, col, text in literals():
        path = core / name
        original = path.read_text()
        lines = original.splitlines(keepends=True)
        lines[ln] = lines[ln][:col] + mutate(text) + lines[ln][col + len(text):]
        path.write_text("".join(lines))
        try:
            detected = _detected(name, core)
        finally:
            path.write_text(original)
        if not detected:
            survivors.append(f"{name}:{ln + 1}: {text} -> {mutate(text)}: {lines[ln].strip()}")
    assert not survivors, "changed constants that no check detects:\n" + "\n".join(survivors)

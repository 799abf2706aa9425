"""Malformed inputs end in one clear line, never a traceback: BVH timing, deep JSON, outputs that are
files, loose pose/.mhclo/catalogue values, and messages that say what is really wrong."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from kisekae.cli import main
from kisekae.errors import KisekaeError

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "kisekae" / "data" / "samples"
BVH = SAMPLES / "cmu_35_01_excerpt.bvh"


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error(capsys, *argv) -> str:
    """Run the command line; assert it failed with exactly one 'kisekae: error:' line; return it."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and err.startswith("kisekae: error: ") and err.count("\n") == 1, (code, out, err)
    return err


# -- crashes -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("line, expect", [
    ("Frame Time: 0", "'Frame Time: 0' must be a positive number of seconds per frame"),
    ("Frame Time: -0.01", "'Frame Time: -0.01' must be a positive number"),
    ("Frame Time: nan", "'Frame Time: nan' must be a positive number"),
    ("Frames: -3", "'Frames: -3' is negative"),
])
def test_bvh_frame_time_and_count(tmp_path, capsys, line, expect):
    text = BVH.read_text().splitlines()
    key = line.split(":")[0] + ":"
    f = tmp_path / "clip.bvh"
    f.write_text("\n".join(line if t.startswith(key) else t for t in text) + "\n")
    assert expect in one_error(capsys, "info", f)
    assert expect in one_error(capsys, "check", "--bvh", f, "--garment", "skirt")


def test_bvh_without_frames(tmp_path, capsys):
    lines = BVH.read_text().splitlines()
    i = next(k for k, t in enumerate(lines) if t.startswith("Frames:"))
    f = tmp_path / "empty.bvh"
    f.write_text("\n".join(lines[:i] + ["Frames: 0", lines[i + 1]]) + "\n")
    code, out, _ = run_cli(capsys, "info", f)
    assert code == 0 and "0 frames" in out
    assert "the clip has no frames" in one_error(capsys, "check", "--bvh", f, "--garment", "skirt")


def test_deeply_nested_json(tmp_path, capsys):
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import load_pose_file
    from kisekae.avatar.capsules import CapsuleRig

    f = tmp_path / "deep.json"
    f.write_text("[" * 200_000 + "]" * 200_000)
    g = tmp_path / "deep_obj.json"
    g.write_text('{"thigh_l": ' * 200_000 + "1" + "}" * 200_000)
    for path in (f, g):
        assert "nested too deeply" in one_error(capsys, "info", path)
        assert "nested too deeply" in one_error(capsys, "check", "--pose-file", path, "--garment", "skirt")
        with pytest.raises(KisekaeError, match="nested too deeply"):
            load_pose_file(load_builtin_avatar().skeleton, path)
        with pytest.raises(KisekaeError, match="nested too deeply"):
            CapsuleRig.load(path)


def test_tension_out_is_an_existing_file(tmp_path, capsys):
    out = tmp_path / "result"
    out.write_text("keep me")
    t0 = time.perf_counter()
    err = one_error(capsys, "tension", "--pose", "crouch", "-o", out)
    assert "is a file, not a folder" in err and str(out) in err
    assert time.perf_counter() - t0 < 5  # refused before the tension work
    assert out.read_text() == "keep me"


# -- loose validation: pose files ---------------------------------------------------------------------
@pytest.mark.parametrize("spec, expect", [
    ({"thigh_l": {"world_axis": [1, 0, 0], "degrees": "45"}}, "degrees must be a finite number (not a string)"),
    ({"thigh_l": {"world_axis": ["1", 0, 0], "degrees": 45}}, "world_axis must be a list of three finite numbers"),
    ({"thigh_l": {"euler_xyz": [0.1, "0", 0]}}, "euler_xyz (radians) must be a list of three finite numbers"),
    ({"thigh_l": {"euler_xyz": [0.1, 0, 0], "world_axis": [1, 0, 0], "degrees": 4}},
     "give either euler_xyz or world_axis with degrees, not both"),
    ({"thigh_l": {"world_axis": [1, 0, 0], "degrees": True}}, "degrees must be a finite number"),
    ({"thigh_l": {"world_axis": [1, 0, 0], "degree": 4}}, "1 unknown key(s); a bone takes euler_xyz, world_axis"),
    ({"thigh_l": {"world_axis": [1, 0, 0]}}, "expected keys world_axis and degrees, or euler_xyz"),
    ({"_translation": ["0", 0, 0]}, "_translation must be a list of three finite numbers"),
])
def test_pose_file_values(tmp_path, capsys, spec, expect):
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import load_pose_file

    f = tmp_path / "p.json"
    f.write_text(json.dumps(spec))
    with pytest.raises(KisekaeError) as exc:
        load_pose_file(load_builtin_avatar().skeleton, f)
    assert expect in str(exc.value) and str(f) in str(exc.value)
    assert expect in one_error(capsys, "info", f)  # info builds the pose, not only parses it


def test_pose_file_duplicate_bones(tmp_path, capsys):
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import load_pose_file

    f = tmp_path / "dup.json"
    f.write_text('{"thigh_l": {"euler_xyz": [0.1, 0, 0]}, "thigh_l": {"euler_xyz": [0.2, 0, 0]}}')
    assert "duplicate key 'thigh_l'" in one_error(capsys, "info", f)
    # two names of one bone (the game_engine name and its cmu_mb alias) on the cmu_mb rig
    g = tmp_path / "alias.json"
    g.write_text('{"LeftUpLeg": {"euler_xyz": [0.1, 0, 0]}, "thigh_l": {"euler_xyz": [0.2, 0, 0]}}')
    with pytest.raises(KisekaeError, match="bone 'thigh_l' is given twice \\(also as 'LeftUpLeg'\\)"):
        load_pose_file(load_builtin_avatar("cmu_mb").skeleton, g)


def test_unknown_bone_suggests_names_and_the_rig(tmp_path, capsys):
    f = tmp_path / "cmu.json"
    f.write_text(json.dumps({"LeftUpLeg": {"world_axis": [1, 0, 0], "degrees": -40}}))
    err = one_error(capsys, "info", f)
    assert "unknown bone 'LeftUpLeg' on this rig" in err
    assert "the built-in cmu_mb rig has 'LeftUpLeg' (use --rig cmu_mb, or name it 'thigh_l' on this rig)" in err
    code, out, _ = run_cli(capsys, "info", f, "--rig", "cmu_mb")
    assert code == 0 and "rotates 1 bone(s): LeftUpLeg" in out
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps({"thigh_left": {"euler_xyz": [0.1, 0, 0]}}))
    err = one_error(capsys, "check", "--pose-file", typo, "--garment", "skirt")
    assert "unknown bone 'thigh_left' on this rig; closest here: thigh_l" in err
    spine = tmp_path / "spine.json"
    spine.write_text(json.dumps({"Spine1x": {"euler_xyz": [0.1, 0, 0]}}))
    assert "closest on the built-in cmu_mb rig: Spine1" in one_error(capsys, "info", spine)
    # another avatar's skeleton: only its own names (--rig applies to the built-in avatar)
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import unknown_bone
    from kisekae.avatar.skeleton import Skeleton

    sk = load_builtin_avatar().skeleton
    other = Skeleton([f"{n}_x" for n in sk.names], sk.parents, sk.rest, sk.tails)
    assert unknown_bone(other, "thigh_l") == "unknown bone 'thigh_l' on this rig; closest here: thigh_l_x, thigh_r_x"


# -- loose validation: .mhclo ----------------------------------------------------------------------------
def _garment(folder: Path, edit) -> Path:
    lines = (SAMPLES / "female_casualsuit01.mhclo").read_text().splitlines()
    p = folder / "g.mhclo"
    p.write_text("\n".join(edit(lines)) + "\n")
    shutil.copy(SAMPLES / "female_casualsuit01.obj", folder / "female_casualsuit01.obj")
    return p


def test_mhclo_verts_zero_and_info_fits_the_garment(tmp_path, capsys):
    p = _garment(tmp_path, lambda ls: ["verts zero" if t.startswith("verts") else t for t in ls])
    assert "'verts' takes at most one whole number" in one_error(capsys, "info", p)
    # info checks content, not only syntax: a reference past the base mesh, a missing OBJ
    p = _garment(tmp_path, lambda ls: ["x_scale 5399 99999 1.3980" if t.startswith("x_scale") else t for t in ls])
    assert "refers to base vertex 99999, but the base mesh has" in one_error(capsys, "info", p)
    p = _garment(tmp_path, lambda ls: ls)
    (tmp_path / "female_casualsuit01.obj").unlink()
    assert "female_casualsuit01.obj: file not found" in one_error(capsys, "info", p)
    p = _garment(tmp_path, lambda ls: ls[:-40])  # fewer vertex lines than the OBJ has vertices
    err = one_error(capsys, "info", p)
    assert "vertex lines but female_casualsuit01.obj has 2197 vertices" in err
    p = _garment(tmp_path, lambda ls: ls)
    code, out, _ = run_cli(capsys, "info", p)
    assert code == 0 and "fits the built-in avatar" in out and "(4236 triangles)" in out


@pytest.mark.parametrize("text, expect", [
    ("verts 0\n99999999999999999999\n", "line 2: a vertex line: expected whole numbers from 0 to 999999999"),
    ("verts 0\n1 2 3 0.3 0.3 nan 0 0 0\n", "line 2: a vertex line's weights and offsets: expected finite numbers"),
    ("verts 0\n1 2 3.5 0.3 0.3 0.4 0 0 0\n", "line 2: a vertex line's first three numbers (base vertices): expected"),
    ("delete_verts\n9 - 2\nverts 0\n1\n", "line 2: delete_verts range 9 - 2 runs backwards"),
])
def test_mhclo_numbers(tmp_path, capsys, text, expect):
    f = tmp_path / "g.mhclo"
    f.write_text(text)
    assert expect in one_error(capsys, "info", f)


@pytest.mark.parametrize("doc, expect", [
    ({"capsules": 5}, "not a capsule rig (no 'capsules' list)"),
    ({"capsules": [{"bone": 0, "p1": [0, 0, 0], "r": 0.1}]}, "capsule 0: missing field 'p0'"),
    ({"capsules": [{"bone": 0, "p0": ["x1", 0, 0], "p1": [0, 0, 0], "r": 0.1}]},
     "capsule 0: a field is not a number or a list of numbers"),
    ({"bones": "spine", "capsules": []}, "'bones' must be a list of bone names"),
])
def test_capsule_rig_files(tmp_path, capsys, doc, expect):
    f = tmp_path / "rig.json"
    f.write_text(json.dumps(doc))
    err = one_error(capsys, "info", f)
    assert expect in err and "x1" not in err


# -- loose validation: catalogue ------------------------------------------------------------------------
def _catalog(folder: Path, motion: str) -> Path:
    shutil.copy(BVH, folder / BVH.name)
    p = folder / "c.toml"
    p.write_text(f'stages = ["before"]\n[[bodies]]\nbuiltin = true\n[[garments]]\nname = "skirt"\n'
                 f"[[motions]]\n{motion}\n")
    return p


def test_catalogue_poses_must_be_a_list(tmp_path, capsys):
    from kisekae.batch import load_catalog

    cat = _catalog(tmp_path, 'poses = "stand"')
    with pytest.raises(KisekaeError, match=r'motions\[0\]\.poses must be a list of pose names, e.g. poses = \["stand"\]'):
        load_catalog(cat)
    assert "poses must be a list" in one_error(capsys, "batch", cat, "--inline", "--store", tmp_path / "s.sqlite")
    assert not (tmp_path / "s.sqlite").exists()


def test_catalogue_motion_name_must_be_a_string(tmp_path):
    from kisekae.batch import load_catalog

    with pytest.raises(KisekaeError, match=r"motions\[0\]\.name must be a non-empty string"):
        load_catalog(_catalog(tmp_path, 'poses = ["stand"]\nname = 4'))


@pytest.mark.parametrize("frames", ["a:b", "1:2:3:4", ":x", "1.5", "--1", "0x1", "²", "1:99999999999999"])
def test_catalogue_frames_syntax(tmp_path, frames):
    from kisekae.batch import load_catalog

    with pytest.raises(KisekaeError, match=r"motions\[0\]\.frames: bad frame selection .*expected A:B"):
        load_catalog(_catalog(tmp_path, f'bvh = "{BVH.name}"\nframes = "{frames}"'))


def test_catalogue_frames_outside_the_clip_say_so(tmp_path, capsys):
    """A well-formed selection that the clip cannot satisfy: the row says why, not 'frame -1'."""
    for frames, expect in (("5:9", "frame selection '5:9' is empty (clip has 3 frames)"),
                           ("7", "frame 7 is outside the clip's 3 frames (0..2)")):
        cat = _catalog(tmp_path, f'bvh = "{BVH.name}"\nframes = "{frames}"')
        store = tmp_path / f"s{frames.replace(':', '_')}.sqlite"
        code, _, _ = run_cli(capsys, "batch", cat, "--inline", "--no-progress", "--store", store)
        assert code == 1
        (frame, error), = sqlite3.connect(store).execute("SELECT frame, error FROM results").fetchall()
        assert frame == -1 and expect in error and "frame -1" not in error


# -- misleading glTF messages ------------------------------------------------------------------------------
def test_gltf_empty_and_byte_length_messages(tmp_path, capsys):
    empty = tmp_path / "empty.glb"
    empty.write_bytes(b"")
    assert "the file is empty (0 bytes)" in one_error(capsys, "info", empty)
    text = tmp_path / "text.glb"
    text.write_text('{"asset": {"version": "2.0"}}')
    assert "not a binary glTF: a .glb file starts with the bytes 'glTF'" in one_error(capsys, "info", text)
    big = tmp_path / "big.gltf"
    big.write_text(json.dumps({"asset": {"version": "2.0"}, "buffers": [
        {"byteLength": 4, "uri": "data:application/octet-stream;base64," + "A" * 32}]}))
    err = one_error(capsys, "info", big)
    assert "buffers[0].byteLength is 4 but its data URI holds 24 bytes (byteLength mismatch)" in err
    assert "cap" not in err

"""Hostile assets: a file named by an asset must lie in the asset's folder, and no error quotes file content.

A canary file outside the asset folder holds a secret. Assets name it in every way an asset can
(``..``, an absolute path, a link inside the folder); an audit hook proves that nothing opens it,
and the secret never appears in an error, the command line's output or the batch store. Files that
*are* inside the folder but are not what they claim to be (a "mesh" that holds the secret) fail
with messages that name the line, never its text.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from kisekae.cli import main
from kisekae.errors import KisekaeError

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "kisekae" / "data" / "samples"
SECRET = "CANARY-SECRET-7f3a9e"

#: Real paths of canary files that some test watches, and every open of them seen so far.
_WATCHED: set = set()
_OPENED: list = []


def _audit(event, args):
    if event == "open" and _WATCHED and isinstance(args[0], (str, bytes, os.PathLike)):
        p = os.fsdecode(args[0])
        if "canary" in p and os.path.realpath(p) in _WATCHED:
            _OPENED.append(p)


sys.addaudithook(_audit)


@pytest.fixture
def canary(tmp_path):
    """``(asset folder, secret folder)``: the secret folder holds canary files in every format an
    asset might name, each full of the secret; the test fails if any of them is opened."""
    secret = tmp_path / "secret"
    secret.mkdir()
    text = f"v {SECRET} 1 2\nf 1 2 3\n{SECRET}\n"
    for name in ("canary.obj", "canary.json", "canary.bvh", "canary.glb", "canary.png", "canary.exr",
                 "canary.mhclo", "canary.mhmat"):
        (secret / name).write_text(text)
    watched = {os.path.realpath(p) for p in secret.iterdir()}
    _WATCHED.update(watched)
    _OPENED.clear()
    asset = tmp_path / "asset"
    asset.mkdir()
    yield asset, secret
    _WATCHED.difference_update(watched)
    assert not _OPENED, f"the canary was opened: {_OPENED}"


def evil_mhclo(folder: Path, obj_file: str | None = None, material: str | None = None, name="evil") -> Path:
    """The sample garment, with its ``obj_file``/``material`` lines replaced."""
    lines = (SAMPLES / "female_casualsuit01.mhclo").read_text().splitlines()
    out = []
    for line in lines:
        if line.startswith("obj_file") and obj_file is not None:
            line = f"obj_file {obj_file}"
        if line.startswith("material") and material is not None:
            line = f"material {material}"
        out.append(line)
    p = folder / f"{name}.mhclo"
    p.write_text("\n".join(out) + "\n")
    shutil.copy(SAMPLES / "female_casualsuit01.obj", folder / "female_casualsuit01.obj")
    return p


def escapes(asset: Path, secret: Path, name: str) -> list:
    """The ways an asset in ``asset`` can name ``secret/name``: ``..``, absolute, and a link."""
    link = asset / f"link_{name}"
    link.symlink_to(secret / name)
    return [f"../secret/{name}", str(secret / name), link.name, f"sub/../../secret/{name}"]


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out + err


# -- .mhclo ------------------------------------------------------------------------------------
def test_mhclo_obj_file_outside_its_folder_is_refused_unread(canary, avatar):
    from kisekae.io.mhclo import load_mhclo, parse_mhclo

    asset, secret = canary
    for path in escapes(asset, secret, "canary.obj"):
        m = evil_mhclo(asset, obj_file=path)
        with pytest.raises(KisekaeError, match="asset folder") as exc:
            load_mhclo(m, avatar)
        assert SECRET not in str(exc.value)
        with pytest.raises(KisekaeError, match=r"line \d+: obj_file .*asset folder"):
            parse_mhclo(m)
    # the sample itself still loads
    assert len(load_mhclo(evil_mhclo(asset), avatar).mesh.vertices) == 2197


def test_mhclo_material_outside_its_folder_is_refused(canary):
    from kisekae.io.mhclo import parse_mhclo

    asset, secret = canary
    for path in escapes(asset, secret, "canary.mhmat"):
        with pytest.raises(KisekaeError, match="material .*asset folder"):
            parse_mhclo(evil_mhclo(asset, material=path))


def test_mhclo_on_the_command_line(canary, capsys):
    asset, secret = canary
    m = evil_mhclo(asset, obj_file="../secret/canary.obj")
    for argv in (["info", m], ["check", "--garment", m, "--pose", "stand"]):
        code, text = run_cli(capsys, *argv)
        assert code == 2 and "leaves the asset folder" in text and SECRET not in text, (argv, text)


# -- the batch catalogue and its store -----------------------------------------------------------
CATALOG = """stages = ["before"]
[[bodies]]
builtin = true
[[garments]]
name = "tights"
{garment}
[[motions]]
poses = ["stand"]
{motion}
"""


def test_batch_error_column_never_holds_the_canary(canary, capsys):
    """A garment inside the catalogue's folder whose .mhclo escapes: its rows fail with the path
    error, the store has no trace of the secret, and the canary is never opened."""
    asset, secret = canary
    evil_mhclo(asset, obj_file="../secret/canary.obj")
    cat = asset / "c.toml"
    cat.write_text(CATALOG.format(garment='[[garments]]\npath = "evil.mhclo"', motion=""))
    store = asset / "s.sqlite"
    code, text = run_cli(capsys, "batch", cat, "--store", store, "--inline", "--no-progress")
    assert code == 1 and SECRET not in text
    rows = sqlite3.connect(store).execute("SELECT garment, error FROM results").fetchall()
    errors = {g: e for g, e in rows}
    assert errors["tights"] is None and "obj_file '../secret/canary.obj' leaves the asset folder" in errors["evil"]
    assert SECRET.encode() not in store.read_bytes()
    code, text = run_cli(capsys, "batch", "report", store)
    assert SECRET not in text


@pytest.mark.parametrize("entry", [
    '[[garments]]\npath = "{p}.mhclo"', '[[bodies]]\npath = "{p}.glb"', '[[motions]]\npose_file = "{p}.json"',
    '[[motions]]\nbvh = "{p}.bvh"', 'store = "{p}.sqlite"'])
def test_catalogue_paths_outside_its_folder_need_the_opt_in(canary, capsys, entry):
    from kisekae.batch import load_catalog

    asset, secret = canary
    for p in ("../secret/canary", str(secret / "canary")):
        text = entry.format(p=p)
        head, body = (text + "\n", "") if text.startswith("store") else ("", text)
        cat = asset / "c.toml"
        cat.write_text(head + CATALOG.format(garment="", motion="") + body + "\n")
        with pytest.raises(KisekaeError, match="asset folder"):
            load_catalog(cat)
        code, out = run_cli(capsys, "batch", cat, "--store", asset / "s.sqlite", "--inline", "--no-progress")
        assert code == 2 and "asset folder" in out and SECRET not in out
        assert not (asset / "s.sqlite").exists()  # refused before anything is written
        # the explicit opt-in accepts it
        assert load_catalog(cat, allow_outside=True)


def test_catalogue_opt_in_runs_files_elsewhere(tmp_path, capsys):
    """With --allow-outside-paths an absolute path and a '..' path work as before."""
    cat_dir = tmp_path / "cats"
    cat_dir.mkdir()
    cat = cat_dir / "c.toml"
    cat.write_text(CATALOG.format(garment="", motion=f'[[motions]]\nbvh = "{SAMPLES / "cmu_35_01_excerpt.bvh"}"\n'
                                                     'frames = "0:1"\n'
                                                     '[[motions]]\nname = "rel"\nbvh = "../s/clip.bvh"\nframes = "1"'))
    (tmp_path / "s").mkdir()
    shutil.copy(SAMPLES / "cmu_35_01_excerpt.bvh", tmp_path / "s" / "clip.bvh")
    store = tmp_path / "s.sqlite"
    code, text = run_cli(capsys, "batch", cat, "--store", store, "--inline", "--no-progress")
    assert code == 2 and "is an absolute path" in text and not store.exists()
    code, text = run_cli(capsys, "batch", cat, "--store", store, "--inline", "--no-progress", "--allow-outside-paths")
    assert code == 0, text
    rows = sqlite3.connect(store).execute("SELECT motion, frame, error FROM results ORDER BY motion").fetchall()
    assert rows == [("cmu_35_01_excerpt", 0, None), ("rel", 1, None), ("stand", 0, None)]


# -- wound sidecar -------------------------------------------------------------------------------
def test_wound_sidecar_names_files_in_its_folder_only(canary):
    from kisekae.wound.files import load_bake

    asset, secret = canary
    for kind, name in (("mesh", "canary.glb"), ("positions", "canary.exr"), ("normals", "canary.png")):
        for path in escapes(asset, secret, name) if kind == "mesh" else [f"../secret/{name}", str(secret / name)]:
            files = {"positions": "p.exr", "normals": "n.exr"}
            meta = {"mesh": "m.glb", "vertices": 3, "encodings": {"float": {"files": files, "texture_side": 2}}}
            if kind == "mesh":
                meta["mesh"] = path
            else:
                files[kind] = path
            sc = asset / "w.json"
            sc.write_text(json.dumps(meta))
            with pytest.raises(KisekaeError, match="asset folder") as exc:
                load_bake(sc)
            assert SECRET not in str(exc.value)


def test_wound_sidecar_files_that_are_not_images_fail_without_quoting(tmp_path):
    from kisekae.wound.files import load_bake

    (tmp_path / "m.glb").write_text(SECRET)
    sc = tmp_path / "w.json"
    sc.write_text(json.dumps({"mesh": "m.glb", "vertices": 3,
                              "encodings": {"float": {"files": {"positions": "p.exr", "normals": "n.exr"},
                                                      "texture_side": 2}}}))
    with pytest.raises(KisekaeError, match=r"mesh: cannot read m.glb \(") as exc:
        load_bake(sc)
    assert SECRET not in str(exc.value)


# -- files inside the folder that are not what they claim: errors name lines, never their text ------
@pytest.mark.parametrize("suffix, text", [
    (".obj", f"v 1 2 3\nv {SECRET} 0 0\n"),
    (".obj", f"v 1 2 3\nv 1 2 3\nv 1 2 3\nf 1 2 {SECRET}\n"),
    (".bvh", f"HIERARCHY\nROOT Hips\n{{\nOFFSET 0 0 0\nCHANNELS 1 {SECRET}\n}}\n"),
    (".bvh", f"HIERARCHY\n{SECRET} and more of it\n"),
    (".bvh", f"HIERARCHY\nROOT Hips\n{{\nOFFSET 0 0 0\nCHANNELS 1 Xrotation\n}}\nMOTION\nFrames: {SECRET}\n"),
    (".json", json.dumps({"thigh_l": {"euler_xyz": [SECRET, 0, 0]}})),
    (".json", json.dumps({"thigh_l": {"world_axis": [1, 0, 0], "degrees": SECRET}})),
    (".json", json.dumps({"thigh_l": {f"x {SECRET} / y": 1}})),
    (".json", json.dumps({f"{SECRET} / not a bone name": {}})),
    (".json", json.dumps({"_translation": [SECRET, 0, 0]})),
    (".mhclo", f"verts 0\n1 2 3 0.3 0.3 0.4 {SECRET} 0 0\n"),
    (".mhclo", f"verts 0\n1 2 {SECRET} 0.3 0.3 0.4 0 0 0\n"),
    (".mhclo", f"x_scale 1 2 {SECRET}\nverts 0\n1\n"),
    (".mhclo", f"verts 0\n1\ndelete_verts\n1 - {SECRET}\n"),
    (".mhclo", f"verts {SECRET}\n1\n"),
])
def test_no_error_quotes_file_content(tmp_path, capsys, suffix, text):
    f = tmp_path / f"bad{suffix}"
    f.write_text(text)
    argv = ["check", "--garment", "skirt", "--pose-file", f] if suffix == ".json" else ["info", f]
    code, out = run_cli(capsys, *argv)
    assert code == 2 and out.startswith("kisekae: error: ") and out.count("\n") == 1, out
    assert SECRET not in out and str(f) in out


def test_obj_named_by_an_mhclo_is_never_quoted(tmp_path, capsys, avatar):
    from kisekae.io.mhclo import load_mhclo

    m = evil_mhclo(tmp_path)
    (tmp_path / "female_casualsuit01.obj").write_text(f"v 0 0 0\n{SECRET}\nv {SECRET}\n")
    with pytest.raises(KisekaeError, match=r"female_casualsuit01.obj: line 3: a vertex has a coordinate") as exc:
        load_mhclo(m, avatar)
    assert SECRET not in str(exc.value)


def test_unexpected_errors_are_stored_without_their_message():
    """Any non-kisekae exception (a bug, or a library's message that quotes its input) is stored by
    type and place only; OSError and numerical errors keep their harmless messages."""
    from kisekae.errors import unexpected_error_text

    try:
        float(f"{SECRET}")
    except ValueError as exc:
        text = unexpected_error_text(exc)
    assert SECRET not in text and text.startswith("internal error (ValueError at ") and __name__ in text
    try:
        open(Path("/nonexistent") / SECRET[:0] / "x.obj")  # noqa: SIM115
    except OSError as exc:
        assert unexpected_error_text(exc) == "FileNotFoundError: /nonexistent/x.obj: No such file or directory"
    assert unexpected_error_text(FloatingPointError("solver diverged")) == "FloatingPointError: solver diverged"

"""One overwrite policy for every command (issue 12, item 4): an existing output is refused without
--force, the refusal comes before anything is written, and the disk is left exactly as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kisekae.cli import main
from kisekae.errors import KisekaeError
from kisekae.outputs import check_outputs


def tree(folder: Path) -> dict:
    """Every file and folder under ``folder``: relative path -> bytes (files) or None (folders)."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


def refused(capsys, argv, folder: Path, *needles) -> str:
    """Run ``kisekae argv``: exit status 2, a one-line error holding ``needles``, ``folder`` unchanged."""
    before = tree(folder)
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.startswith("kisekae: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for n in needles:
        assert str(n) in lines[0], (n, lines[0])
    assert tree(folder) == before  # the existing file untouched, nothing else written
    return lines[0]


# -- the helper -------------------------------------------------------------------------------
def test_check_outputs_rules(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.png"
    assert check_outputs([a, b]) == [a, b]
    a.write_text("mine")
    b.write_text("mine")
    with pytest.raises(KisekaeError, match=r"a\.json: file exists \(and 1 more of this command's outputs\); "
                                           r"pass --force to overwrite"):
        check_outputs([tmp_path / "new.txt", a, b])
    assert check_outputs([a, b], force=True) == [a, b]
    # Refused even with --force: nothing can overwrite these.
    (tmp_path / "d").mkdir()
    with pytest.raises(KisekaeError, match=r"d: is a folder"):
        check_outputs([tmp_path / "d"], force=True)
    with pytest.raises(KisekaeError, match=r"a\.json: is a file, not a folder"):
        check_outputs([a / "x.png"], force=True, folders=[a])
    with pytest.raises(KisekaeError, match=r"a\.json: is a file, not a folder"):
        check_outputs([a / "deeper" / "x.png"], force=True)
    with pytest.raises(KisekaeError, match="same path"):
        check_outputs([tmp_path / "x.obj", tmp_path / "." / "x.obj"], force=True)
    # A file's folder must exist, unless the command creates it.
    with pytest.raises(KisekaeError, match=r"missing.x\.json: the output's folder does not exist"):
        check_outputs([tmp_path / "missing" / "x.json"])
    assert check_outputs([tmp_path / "new" / "sub" / "x.json"], folders=[tmp_path / "new" / "sub"])
    # A whole folder (names not known in advance): missing or empty, unless --force.
    check_outputs(whole_folders=[tmp_path / "nothing_yet"])
    (tmp_path / "empty").mkdir()
    check_outputs(whole_folders=[tmp_path / "empty"])
    with pytest.raises(KisekaeError, match="not empty; pass --force"):
        check_outputs(whole_folders=[tmp_path])
    check_outputs(whole_folders=[tmp_path], force=True)
    with pytest.raises(KisekaeError, match="is a file, not a folder"):
        check_outputs(whole_folders=[a], force=True)
    # Dangling links count as existing (writing would follow them somewhere else).
    (tmp_path / "link.png").symlink_to(tmp_path / "nowhere.png")
    with pytest.raises(KisekaeError, match="link.png: file exists"):
        check_outputs([tmp_path / "link.png"])
    assert not (tmp_path / "nothing_yet").exists() and not (tmp_path / "new").exists()  # checks create nothing


# -- every command ----------------------------------------------------------------------------
def test_tension_out(tmp_path, capsys):
    out = tmp_path / "t"
    out.mkdir()
    (out / "tension.png").write_bytes(b"mine")
    refused(capsys, ["tension", "--pose", "stand", "-o", out], tmp_path, out / "tension.png", "--force")
    # -o naming an existing file (a FileExistsError traceback before): refused even with --force
    (tmp_path / "f").write_text("mine")
    refused(capsys, ["tension", "--pose", "stand", "-o", tmp_path / "f", "--force"], tmp_path, "is a file")


def test_tension_glb(tmp_path, capsys):
    (tmp_path / "tension.glb").write_bytes(b"mine")
    refused(capsys, ["tension", "--pose", "stand", "--glb", "-o", tmp_path], tmp_path, "tension.glb")


def test_tension_force_overwrites(tmp_path, capsys):
    (tmp_path / "tension.json").write_text("mine")
    assert main(["tension", "--pose", "stand", "-o", str(tmp_path), "--force"]) == 0
    capsys.readouterr()
    assert (tmp_path / "tension.json").read_text() != "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tension.json", "tension.npz", "tension.png"]


@pytest.mark.parametrize("existing", ["wound.json", "wound_half_pos.exr", "wound_article8_vc.png",
                                      "preview/morph_sheet.png"])
def test_wound_bake_out(tmp_path, capsys, existing):
    out = tmp_path / "b"
    (out / existing).parent.mkdir(parents=True)
    (out / existing).write_bytes(b"mine")
    refused(capsys, ["wound", "bake", "builtin", "builtin-damaged", "-o", out, "--preview"], tmp_path,
            Path(existing).name, "--force")


def test_wound_bake_names_match_what_it_writes():
    """The names checked beforehand are the names written (tests/test_wound_cli.py checks the files)."""
    from kisekae.wound.files import bake_file_names

    names = bake_file_names("wound")
    assert {"wound_start.glb", "wound.json", "wound_half_pos.exr", "wound_delta16_pos.png", "wound_float_nrm.exr",
            "wound_article8_vc.png", "wound_article8_nrm.png"} <= set(names.values())
    assert "wound_article8_pos.png" not in names.values()  # 8-bit positions live in vertex colours
    with pytest.raises(KisekaeError, match="unknown encoding 'nope'"):
        bake_file_names("wound", ["nope"])


def test_wound_hit_out(tmp_path, capsys):
    (tmp_path / "hits.npz").write_bytes(b"mine")
    ray = ["--ray", "0", "1.2", "1", "0", "0", "-1"]
    # numpy adds .npz to a name without it: that is the file checked
    refused(capsys, ["wound", "hit", *ray, "-o", tmp_path / "hits"], tmp_path, "hits.npz", "--force")
    (tmp_path / "pv").mkdir()
    (tmp_path / "pv" / "morph.gif").write_bytes(b"mine")
    refused(capsys, ["wound", "hit", *ray, "-o", tmp_path / "new.npz", "--preview", tmp_path / "pv"], tmp_path,
            "morph.gif")


def test_preview_snapshot(tmp_path, capsys):
    (tmp_path / "shot.png").write_bytes(b"mine")
    refused(capsys, ["preview", "--snapshot", tmp_path / "shot.png"], tmp_path, "shot.png", "--force")
    refused(capsys, ["preview", "--snapshot", tmp_path / "shot.nope"], tmp_path, "unknown picture type")


def test_demo_out(tmp_path, capsys):
    (tmp_path / "index.html").write_text("mine")
    refused(capsys, ["demo", "--out", tmp_path, "--no-progress"], tmp_path, "not empty", "--force")


@pytest.mark.parametrize("existing", ["report.json", "capsules.vrm.json", "capsules.json", "skirt__stand.obj"])
def test_fit_out(tmp_path, capsys, existing):
    """Before: report.json and capsules.vrm.json were overwritten, and a refusal came after the capsules."""
    (tmp_path / existing).write_text("mine")
    refused(capsys, ["fit", "--pose", "stand", "--garment", "skirt", "-o", tmp_path], tmp_path, existing, "--force")


def test_fit_same_output_twice(tmp_path, capsys):
    refused(capsys, ["fit", "--pose", "stand", "--pose", "stand", "--garment", "skirt", "-o", tmp_path / "o"],
            tmp_path, "skirt__stand.obj", "same path")


def test_check_json(tmp_path, capsys):
    (tmp_path / "c.json").write_text("mine")
    refused(capsys, ["check", "--pose", "stand", "--json", tmp_path / "c.json"], tmp_path, "c.json", "--force")
    # a folder that does not exist: refused before the check runs, not after
    refused(capsys, ["check", "--pose", "stand", "--json", tmp_path / "no" / "c.json"], tmp_path,
            "folder does not exist")


def test_batch_report_json(tmp_path, capsys):
    from kisekae.batch import Store

    Store(tmp_path / "s.sqlite").close()
    (tmp_path / "r.json").write_text("mine")
    refused(capsys, ["batch", "report", tmp_path / "s.sqlite", "--json", tmp_path / "r.json"], tmp_path, "r.json",
            "--force")


def test_batch_store_is_never_another_programs_file(tmp_path, capsys):
    """An existing SQLite file of another program (or any other file) is not turned into a store."""
    from test_batch import write_catalog

    cat = write_catalog(tmp_path, garments=['name = "skirt"'], motions=['poses = ["stand"]'],
                        extra='stages = ["before"]\n')
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE notes (t TEXT)")
        con.execute("INSERT INTO notes VALUES ('mine')")
    con.close()
    refused(capsys, ["batch", cat, "--store", db, "--inline", "--no-progress"], tmp_path, "app.db",
            "not a kisekae result store")
    (tmp_path / "notes.txt").write_text("mine")
    refused(capsys, ["batch", cat, "--store", tmp_path / "notes.txt", "--inline", "--no-progress"], tmp_path,
            "notes.txt", "not a kisekae result store")

"""``--body`` on the command line: info, check, tension, wound, and clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kisekae.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_info_body_prints_height_joints_and_vertex_count(capsys):
    code, out, err = run(capsys, "info", "--body", "gender=0.2,weight=0.9,muscle=0.3")
    assert code == 0, err
    assert "body shape gender=0.2,muscle=0.3,weight=0.9: height 1." in out
    assert "13380 body vertices" in out
    heads = [line.split() for line in out.splitlines() if line.startswith("    ")]
    assert len(heads) == 53 and heads[1][0] == "pelvis"
    # The printed pelvis height is the shaped skeleton's, not the base mesh's.
    from kisekae.avatar import load_builtin_avatar, parse_body

    av = load_builtin_avatar(shape=parse_body("gender=0.2,weight=0.9,muscle=0.3"))
    assert float(heads[1][2]) == pytest.approx(av.skeleton.heads[1, 1], abs=1e-4)


@pytest.mark.parametrize("argv, message", [
    (["info", "--body", "gendre=0.2"], "unknown body parameter 'gendre'; valid: gender 0..1"),
    (["info", "--body", "weight=nan"], "weight = 'nan' is not a finite number; valid:"),
    (["info", "--body", "age=1.2"], "age = '1.2' is out of range 0..1; valid:"),
    (["check", "--body", "belly=-3", "--pose", "stand"], "belly = '-3' is out of range -1..1"),
    (["check", "--avatar", "x.glb", "--body", "weight=1"], "does not apply to --avatar files"),
    (["tension", "--body", "muscle=x", "--pose", "stand"], "muscle: expected a number"),
    (["fit", "--body", "weight", "--pose", "stand"], "'weight' is not name=value"),
    (["info", "some.obj", "--body", "weight=1"], "omit FILE"),
    (["demo", "--body", "weight=2", "--no-progress"], "weight = '2' is out of range 0..1"),
])
def test_bad_body_is_a_one_line_error(capsys, tmp_path, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_check_body_checks_the_shaped_avatar(tmp_path, capsys):
    from kisekae.avatar import load_builtin_avatar, parse_body
    from kisekae.avatar.poses import named_pose
    from kisekae.qa.check import check_pose

    shaped = tmp_path / "b.json"
    code, out, err = run(capsys, "check", "--pose", "crouch", "--garment", "tights", "--body", "weight=1,gender=0",
                         "--json", str(shaped))
    assert code == 0, err
    got = json.loads(shaped.read_text())[0]
    # the command line poses the contact body by default
    from kisekae.avatar.contact import GAP, apply_contact

    av = apply_contact(load_builtin_avatar(shape=parse_body("weight=1,gender=0")), GAP)
    want = check_pose(av, named_pose(av.skeleton, "crouch"), ["tights"])[0]
    base_av = apply_contact(load_builtin_avatar(), GAP)
    base = check_pose(base_av, named_pose(base_av.skeleton, "crouch"), ["tights"])[0]
    assert got["inside_count"] == want["inside_count"] != base["inside_count"]
    assert got["edge_crossings"] == want["edge_crossings"]


def test_tension_and_wound_take_body(tmp_path, capsys):
    code, out, err = run(capsys, "tension", "--body", "weight=1", "--pose", "stand", "--out", str(tmp_path / "t"))
    assert code == 0, err
    code, out, err = run(capsys, "wound", "hit", "--body", "age=0.1875", "--ray", "0", "1.0", "1", "0", "0", "-1",
                         "-o", str(tmp_path / "h.npz"))
    assert code == 0, err
    assert "hits" in out
    code, out, err = run(capsys, "wound", "bake", "a.obj", "b.obj", "--body", "weight=1", "-o", str(tmp_path / "w"))
    assert code == 2 and "neither mesh is 'builtin'" in err


def test_demo_runs_its_sections_on_the_body(tmp_path, capsys, monkeypatch):
    import kisekae.cli.demo as cli_demo
    import kisekae.app.demo as demo

    seen = []

    def section(ctx):
        seen.append(ctx["avatar"].shape.label())
        return "<p>ok</p>"

    monkeypatch.setattr(demo, "SECTIONS", [("probe", section)])
    monkeypatch.setattr(cli_demo, "add_render_sections", lambda: None)
    code, out, err = run(capsys, "demo", "--out", str(tmp_path / "d"), "--no-progress", "--body", "weight=0.9")
    assert code == 0, err
    assert seen == ["weight=0.9"]
    assert "body shape weight=0.9" in (tmp_path / "d" / "index.html").read_text()

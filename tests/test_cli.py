import json
import subprocess
import sys

import pytest

from conftest import SHARED
from kisekae.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_defaults_json(tmp_path, capsys):
    out_json = tmp_path / "c.json"
    code, out, err = run(capsys, "check", "--json", str(out_json))
    assert code == 0
    recs = json.loads(out_json.read_text())
    assert [(r["pose"], r["garment"]) for r in recs] == [
        (p, g) for p in ("stand", "leg_raise", "crouch") for g in ("tights", "skirt")]
    for key in ("pose", "garment", "vertices", "inside_count", "inside_fraction", "max_depth_m", "p95_depth_m",
                "edge_crossings"):
        assert key in recs[0]
    assert "crouch" in out and "inside %" in out
    # Never overwrite without being asked.
    code, out, err = run(capsys, "check", "--pose", "stand", "--json", str(out_json))
    assert code == 2 and "exists" in err


def test_check_bvh_frames_are_named(tmp_path, capsys):
    out_json = tmp_path / "b.json"
    code, _, _ = run(capsys, "check", "--bvh", str(SHARED / "cmu_35_01_excerpt.bvh"), "--frames", "1:3",
                     "--garment", "skirt", "--json", str(out_json))
    assert code == 0
    assert [r["pose"] for r in json.loads(out_json.read_text())] == ["cmu_35_01_excerpt:1", "cmu_35_01_excerpt:2"]


@pytest.mark.parametrize("argv, message", [
    (["check", "--pose", "dance"], "unknown pose 'dance'"),
    (["check", "--garment", "cape"], "unknown garment 'cape'"),
    (["check", "--garment", "missing.mhclo"], "missing.mhclo: file not found"),
    (["check", "--frames", "1:2"], "--frames needs --bvh"),
    (["info", "nothing.obj"], "nothing.obj: file not found"),
])
def test_bad_arguments_give_one_line_errors(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_bad_pose_file_via_subprocess(tmp_path):
    p = tmp_path / "pose.json"
    p.write_text(json.dumps({"no_such_bone": {"world_axis": [1, 0, 0], "degrees": 10}}))
    r = subprocess.run([sys.executable, "-m", "kisekae", "check", "--pose-file", str(p)], capture_output=True,
                       text=True)
    assert r.returncode == 2
    assert f"{p}: unknown bone 'no_such_bone'" in r.stderr
    assert "Traceback" not in r.stderr


def test_info(capsys, tmp_path):
    code, out, _ = run(capsys, "info")
    assert code == 0 and "13380 vertices" in out and "tights" in out
    code, out, _ = run(capsys, "info", str(SHARED / "cmu_35_01_excerpt.bvh"))
    assert code == 0 and "31 joints, 3 frames" in out
    code, out, _ = run(capsys, "info", str(SHARED / "male_worksuit01.mhclo"))
    assert code == 0 and "3763 vertices" in out

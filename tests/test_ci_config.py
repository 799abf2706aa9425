"""CI prints pytest's closing "N passed" line: the project config plus the README's test command must not
add up to ``-qq``, which drops that line (issue 12, item 9)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_test_command() -> str:
    lines = [ln for ln in (ROOT / "README.md").read_text().splitlines() if "pytest" in ln and "bootstrap" in ln]
    assert len(lines) == 1, lines
    return lines[0].strip()


def test_ci_runs_the_readme_test_command():
    cmd = _readme_test_command()
    assert cmd == "bash scripts/bootstrap.sh && .venv/bin/python -m pytest -q -n auto --maxprocesses 4"
    assert cmd in (ROOT / ".ci" / "run").read_text()


def test_readme_command_with_project_config_prints_the_passed_line(tmp_path):
    """Run the README's pytest flags under this project's pyproject.toml on a one-test file."""
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    flags = _readme_test_command().split("pytest", 1)[1].split()
    proc = subprocess.run([sys.executable, "-m", "pytest", *flags, "-c", str(ROOT / "pyproject.toml"),
                           "--rootdir", str(tmp_path), "-p", "no:cacheprovider", str(tmp_path / "test_one.py")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^1 passed in [0-9.]+s", proc.stdout, re.M), proc.stdout


def test_ci_runs_the_blender_and_oldest_numpy_tests():
    run = (ROOT / ".ci" / "run").read_text()
    assert "export KISEKAE_REQUIRE_VENVS=1" in run
    assert ".venv-numpy-oldest/bin/python -m pytest -q -n auto --maxprocesses 4 $(cat .ci/oldest-numpy-tests)" in run
    assert "KISEKAE_REQUIRE_BPY=1 .venv-blender/bin/python -m pytest -q -m blender tests/test_blender_addon.py" in run
    listed = (ROOT / ".ci" / "oldest-numpy-tests").read_text().split()
    assert listed and all((ROOT / t.split("::")[0]).is_file() for t in listed)
    for t in listed:  # a node id names a test that exists
        if "::" in t:
            path, name = t.split("::")
            assert f"def {name}(" in (ROOT / path).read_text(), t
    boot = (ROOT / "scripts" / "bootstrap.sh").read_text()
    assert '"bpy==5.0.1"' in boot and '"numpy==$NUMPY_MIN"' in boot

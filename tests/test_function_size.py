"""No giant functions: every function in src/kisekae is at most 80 lines and cyclomatic complexity 25.

Measured with radon (the ``test`` extra): lines from ``def`` to the last line of the body (docstring
included), complexity by McCabe's count as radon computes it. Nested functions and methods count on
their own.
"""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit  # the test extra
from radon.visitors import Class

SRC = Path(__file__).resolve().parents[1] / "src" / "kisekae"
MAX_LINES = 80
MAX_COMPLEXITY = 25


def measure(src: Path = SRC) -> dict:
    """``{"file:function": (lines, complexity)}`` for every function and method under ``src``."""
    out = {}

    def walk(blocks, rel):
        for b in blocks:
            if isinstance(b, Class):
                walk(b.methods, rel)
                continue
            out[f"{rel}:{b.name}"] = (b.endline - b.lineno + 1, b.complexity)
            walk(getattr(b, "closures", []), rel)

    for path in sorted(src.rglob("*.py")):
        walk(cc_visit(path.read_text(encoding="utf-8")), path.relative_to(src).as_posix())
    return out


def test_no_function_over_the_limits():
    giants = {k: v for k, v in measure().items() if v[0] > MAX_LINES or v[1] > MAX_COMPLEXITY}
    assert not giants, "split these into named steps (lines, complexity): " + ", ".join(
        f"{k} {v}" for k, v in sorted(giants.items()))


def test_the_measure_sees_a_giant(tmp_path):
    body = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(30))
    (tmp_path / "g.py").write_text(f"def giant(x):\n{body}\n    return -1\n\n\ndef small():\n    return 1\n")
    got = measure(tmp_path)
    assert got["g.py:giant"] == (62, 31) and got["g.py:small"] == (2, 1)

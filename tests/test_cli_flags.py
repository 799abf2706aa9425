"""Code below the CLI names parameters (not command-line flags) in its errors."""

from __future__ import annotations

import pytest

from kisekae.avatar.poses import named_pose
from kisekae.cli import main
from kisekae.errors import KisekaeError


def test_library_errors_name_the_parameter(avatar):
    with pytest.raises(KisekaeError) as info:
        named_pose(avatar.skeleton, "dance")
    assert info.value.source == "pose"
    with pytest.raises(KisekaeError) as info:
        avatar.part("cape")
    assert info.value.source == "garment"


def test_cli_reports_the_parameter(capsys):
    assert main(["check", "--pose", "dance"]) == 2
    err = capsys.readouterr().err
    assert "pose: unknown pose 'dance'" in err and "--pose" not in err
    assert main(["check", "--garment", "cape"]) == 2
    assert "garment: unknown garment 'cape'" in capsys.readouterr().err


def test_push_help_states_the_solver_defaults():
    """The CLI help names the defaults as numbers (no fit import at start-up); they must be PushParams'."""
    import re

    from kisekae.cli import build_parser
    from kisekae.fit.fix import SKIRT_BIAS
    from kisekae.fit.pushout import PushParams

    check = next(a for a in build_parser()._subparsers._group_actions[0].choices.items() if a[0] == "check")[1]
    text = " ".join(check.format_help().split())
    d = PushParams()
    for flag, value in (("--margin", d.margin), ("--stiffness", d.stiffness), ("--max-push", d.max_push),
                        ("--tightness", d.tightness), ("--softness", d.softness)):
        shown = re.search(re.escape(flag) + r" \w+ [^(]*\(([\d.]+)\)", text)
        assert shown and float(shown.group(1)) == value, flag
    assert f"skirt-bias {SKIRT_BIAS:g}" in text and f"({SKIRT_BIAS:g} for skirts" in text

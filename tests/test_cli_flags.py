"""Code below the CLI names parameters in its errors; the CLI shows them as its flags."""

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


def test_cli_shows_the_flag(capsys):
    assert main(["check", "--pose", "dance"]) == 2
    err = capsys.readouterr().err
    assert "--pose: unknown pose 'dance'" in err
    assert main(["check", "--garment", "cape"]) == 2
    assert "--garment: unknown garment 'cape'" in capsys.readouterr().err

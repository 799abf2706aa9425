"""Demo report sections of the renderer on the built-in avatar (small sizes to stay fast)."""

import json

import numpy as np

import pytest

from kisekae.avatar.builtin import load_builtin_avatar
from kisekae.app.report import section_pictures, section_poke


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    return {"out": tmp_path_factory.mktemp("demo"), "avatar": load_builtin_avatar(), "timings": {},
            "poke_sizes": ("320x180",)}


def test_poke_section_reports_every_view_and_finds_crouch_clipping(ctx):
    html = section_poke(ctx)
    recs = json.loads((ctx["out"] / "poke_through.json").read_text())
    assert {r["view"] for r in recs} >= {"front", "side", "back", "three_quarter", "knees", "hips", "waist"}
    assert len({r["view"] for r in recs}) >= 8
    assert {r["stage"] for r in recs} == {"before", "after"} and all(r["resolution"] == "320x180" for r in recs)
    total = lambda pose, garment, stage: sum(r["poke_through_pixels"] for r in recs  # noqa: E731
                                             if (r["pose"], r["garment"], r["stage"]) == (pose, garment, stage))
    assert total("crouch", "skirt", "before") > 0  # 18 % of skirt vertices are inside the crouching body
    for pose in ("leg_raise", "crouch"):
        for garment in ("tights", "skirt"):
            assert total(pose, garment, "after") < total(pose, garment, "before")  # the fix reduces it
    assert set(ctx["fixed_positions"]) == {"stand", "leg_raise", "crouch"}
    assert "poke_through.png" in html and (ctx["out"] / "img" / "poke_through.png").stat().st_size > 10_000


def test_pictures_section_writes_a_sheet(ctx):
    html = section_pictures(ctx)
    from PIL import Image

    with Image.open(ctx["out"] / "img" / "avatar.png") as im:
        assert im.width > 1000 and im.height > 600
    assert "avatar.png" in html


def test_fix_section_uses_the_fix_and_the_pressure(ctx):
    from kisekae.app.report import section_fix

    html = section_fix(ctx)
    assert "fix_before_after.png" in html and (ctx["out"] / "img" / "fix_before_after.png").stat().st_size > 50_000
    press = ctx["pressure"]["crouch"]
    assert press.shape == (len(ctx["avatar"].body.mesh.vertices),) and 0 < press.max() <= 1


def test_wound_section_morphs_and_writes_a_gif(ctx):
    from PIL import Image

    from kisekae.app.report import section_wound

    html = section_wound(ctx)
    assert "wound.png" in html and "wound.gif" in html
    with Image.open(ctx["out"] / "img" / "wound.gif") as im:
        assert im.n_frames == 16
        im.seek(0)
        first = np.asarray(im.convert("RGB")).astype(int)
        im.seek(8)  # p = 1
        full = np.asarray(im.convert("RGB")).astype(int)
    assert np.abs(full - first).max(axis=2).astype(bool).sum() > 500  # the forearm shrinks, the chest dents


def test_animation_section_interpolates(ctx):
    from PIL import Image

    from kisekae.app.report import section_animation

    html = section_animation(ctx)
    assert "bvh.gif" in html and "poses.gif" in html
    with Image.open(ctx["out"] / "img" / "poses.gif") as im:
        assert im.n_frames == 24  # 3 named poses x 8 steps, looping

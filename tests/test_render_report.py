"""Demo report sections of the renderer on the built-in avatar (small sizes to stay fast)."""

import json

import pytest

from kisekae.avatar.builtin import load_builtin_avatar
from kisekae.render.report import section_pictures, section_poke


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

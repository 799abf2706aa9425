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
    assert all(r["stage"] == "before" and r["resolution"] == "320x180" for r in recs)
    crouch_skirt = sum(r["poke_through_pixels"] for r in recs if r["pose"] == "crouch" and r["garment"] == "skirt")
    assert crouch_skirt > 0  # 18 % of skirt vertices are inside the crouching body
    assert "poke_through.png" in html and (ctx["out"] / "img" / "poke_through.png").stat().st_size > 10_000


def test_pictures_section_writes_a_sheet(ctx):
    html = section_pictures(ctx)
    from PIL import Image

    with Image.open(ctx["out"] / "img" / "avatar.png") as im:
        assert im.width > 1000 and im.height > 600
    assert "avatar.png" in html

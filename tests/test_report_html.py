"""The HTML reports (`kisekae demo`, `batch report --pictures`) on a phone: the page helpers, a small
synthetic page and the real demo page, laid out by headless Chromium at 390 CSS px (an iPhone 12-15)."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from PIL import Image

from browser import needs_chromium, parse, probe
from kisekae.errors import KisekaeError
from kisekae.render.htmlpage import READABLE_PX, html_page, picture, scroll_box

PHONE = 390
#: The demo's pictures with text drawn by comparison_sheet (the others are GIFs without text and a plot).
SHEETS = ("avatar.png", "fix_before_after.png", "runtime.png", "body_shapes_crouch.png", "body_contact.png",
          "poke_through.png", "tension.png", "wound.png")


def _viewport(page) -> str:
    tags = [m.get("content", "") for m in parse(page).meta if m.get("name") == "viewport"]
    assert len(tags) == 1, f"{page} needs one <meta name=viewport>"
    return tags[0]


def _check_phone_layout(m: dict, width: int = PHONE) -> None:
    """No horizontal overflow, no broken picture, text clear of the screen edges."""
    assert m["viewport_width"] == width
    assert m["scroll_width"] <= width, f"the page is {m['scroll_width']} px wide: {m['wide']}"
    assert m["wide"] == []
    broken = [i["src"] for i in m["images"] if not (i["complete"] and i["natural_width"] > 0)]
    assert broken == []
    assert m["text_left"] >= 8 and m["text_right"] <= width - 8  # side margins


def _check_alts(images, min_words: int = 8) -> None:
    alts = [i["alt"] or "" for i in images]
    for i, alt in zip(images, alts):
        name = i["src"].rsplit("/", 1)[-1]
        assert name not in alt and len(alt.split()) >= min_words, f"alt text of {name} does not describe it: {alt!r}"
    assert len(set(alts)) == len(alts)


def test_page_helpers():
    page = html_page("a <b>", "<p>x</p>", style="p{color:red}")
    assert "<title>a &lt;b&gt;</title>" in page and page.rstrip().endswith("</html>") and "p{color:red}" in page
    assert "width=device-width" in page and "initial-scale=1" in page
    assert scroll_box("<table></table>") == "<div class='scroll'><table></table></div>"
    # text 24 px tall, shown no smaller than READABLE_PX: at least half the picture's width, never above it
    html = picture("img/a b.png", "a 'grid'", (2000, 500), text_px=24)
    assert f"min-width:{int(np.ceil(2000 * READABLE_PX / 24))}px" in html and "max-width:2000px" in html
    assert "src='img/a b.png'" in html and "alt='a &#x27;grid&#x27;'" in html and "<a href='img/a b.png'>" in html
    assert "min-width:100px" in picture("a.png", "b", (100, 50), text_px=6)
    assert "min-width" not in picture("a.png", "b", (100, 50), link=False) and "<a " not in picture("a.png", "b", (1, 1),
                                                                                                      link=False)
    for size, text_px in (((0, 5), None), ((5, 5), 0)):
        with pytest.raises(KisekaeError):
            picture("a.png", "b", size, text_px=text_px)


def _probe_page(tmp_path, body: str, name: str = "page.html") -> dict:
    page = tmp_path / name
    page.write_text(html_page("t", body), encoding="utf-8")
    return probe(page)


@needs_chromium
def test_probe_sees_overflow_and_broken_pictures(tmp_path):
    """The browser check itself: it notices what it is there to notice."""
    Image.new("RGB", (50, 20), (9, 9, 9)).save(tmp_path / "ok.png")
    m = _probe_page(tmp_path, "<p>x</p><div style='width:600px'>wide</div><img src='gone.png' alt='a'>"
                              "<img src='ok.png' alt='b'>" + scroll_box("<div style='width:900px'>scrolls</div>"))
    assert m["viewport_width"] == PHONE and m["inner_width"] == PHONE
    assert m["scroll_width"] >= 600 and [w for w in m["wide"] if w.startswith("div")] == ["div 12..612"]
    assert [(i["src"], i["natural_width"]) for i in m["images"]] == [("gone.png", 0), ("ok.png", 50)]
    assert m["text_left"] == pytest.approx(12)  # the page's side margin


@needs_chromium
def test_synthetic_report_fits_a_phone(tmp_path):
    """A sheet as wide as the demo's widest, the poke-through table (9 views), the timings table, a wide
    <pre> and a long path, built by the report's own helpers, at 390 px."""
    from kisekae.app.demo import timings_table
    from kisekae.render.camera import VIEWS
    from kisekae.app.report import SHEET_FONT_PX, _img, poke_table
    from kisekae.render.sheets import comparison_sheet

    cell = np.full((360, 640, 3), 200, np.uint8)
    sheet = comparison_sheet([[cell] * 6] * 2, row_labels=["leg_raise", "crouch"], cell_width=300,
                             col_labels=[f"column {j}" for j in range(6)], captions=[["three_quarter: 1234 px"] * 6] * 2,
                             font_size=SHEET_FONT_PX, title="a title")
    recs = [{"pose": p, "stage": s, "garment": g, "resolution": r, "view": v, "poke_through_pixels": 12345}
            for p in ("stand", "crouch") for s in ("before", "after") for g in ("tights", "skirt")
            for r in ("720p", "2160p") for v in VIEWS]
    body = ("<h1>/a/very/long/path/without/any/spaces/" + "x" * 80 + "</h1><p>text</p>"
            + _img(tmp_path, "sheet.png", sheet, "a synthetic grid of grey cells with captions")
            + poke_table(recs, ("720p", "2160p"))
            + timings_table([("penetration check: one-time warm-up (Numba compiling or loading its kernels)", 6.2, 6.1),
                             ("penetration check", 0.4, 0.4)])
            + "<pre>" + "a wide fixed-width table line " * 10 + "</pre>")
    m = _probe_page(tmp_path, body)
    _check_phone_layout(m)
    (img,) = m["images"]
    assert img["natural_width"] == sheet.width > 1900
    assert img["width"] / img["natural_width"] * SHEET_FONT_PX >= READABLE_PX - 1e-6  # its captions stay readable


def _fake_section(ctx):
    ctx["warmup"] = (0.3, 0.25)  # as if the section had spent 0.3 s warming up
    time.sleep(0.35)
    return "<h2>fake</h2>"


def test_timings_table_has_a_header_a_total_and_a_labelled_warmup(tmp_path, monkeypatch):
    from kisekae.app import demo

    monkeypatch.setattr(demo, "SECTIONS", [("first", _fake_section), ("second", lambda ctx: "<p>b</p>")])
    page = demo.run_demo(tmp_path / "out", progress=False)
    table = parse(page).tables[-1]
    assert [c[1] for c in table["thead"][0]] == ["step", "wall s", "CPU s"]
    names = [r[0][1] for r in table["tbody"]]
    assert names[0].startswith("first: one-time warm-up") and names[1:] == ["first", "second"]
    rows = np.array([[float(c[1]) for c in r[1:]] for r in table["tbody"]])
    assert rows[0, 0] == pytest.approx(0.3) and rows[1, 0] == pytest.approx(0.05, abs=0.04)  # warm-up apart
    (total,) = table["tfoot"]
    assert total[0][1] == "total"
    # each cell is rounded to 0.01: the printed total differs from the sum of printed rows by at most
    # half a unit per row plus half a unit of its own
    np.testing.assert_allclose([float(c[1]) for c in total[1:]], rows.sum(axis=0), atol=0.005 * (len(rows) + 1) + 1e-9)
    # the page says how its bodies are posed: the command line's steps, or which is off
    text = page.read_text(encoding="utf-8")
    assert "pose-space correctives" in text and "contact between parts that share no joint" in text
    off = demo.run_demo(tmp_path / "off", progress=False, part_contact=False).read_text(encoding="utf-8")
    assert "--no-part-contact" in off and "share no joint" not in off
    plain = demo.run_demo(tmp_path / "plain", progress=False, contact=False).read_text(encoding="utf-8")
    assert "plain linear blend skinning (<code>--no-contact</code>)" in plain and "correctives" not in plain


def _check_table_times(page) -> list:
    """The ms column of the demo's penetration table, tights rows (the first is the stand pose)."""
    pre = re.search(r"<pre>(.*?)</pre>", page.read_text(encoding="utf-8"), re.S).group(1)
    lines = [ln.split() for ln in pre.splitlines()[2:]]
    return [float(p[-1]) for p in lines if p[1] == "tights"]


@needs_chromium
def test_demo_page_on_a_phone_and_a_desktop(tmp_path):
    """The real `kisekae demo` page (about 30-60 s): phone layout, pictures, alt text, readable captions,
    the penetration table's times and the timings table."""
    from kisekae.app import demo
    from kisekae.cli import main
    from kisekae.app.report import SHEET_FONT_PX

    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--no-progress"]) == 0
    page = out / "index.html"
    assert "width=device-width" in _viewport(page)
    for width in (PHONE, 1280):
        m = probe(page, width)
        _check_phone_layout(m, width)
        _check_alts(m["images"])
        got = {i["src"].rsplit("/", 1)[-1]: i for i in m["images"]}
        assert set(SHEETS) == {n for n in got if n.endswith(".png")} - {"tension_hist.png"}
        assert len(got) == len(m["images"])
        for name in SHEETS:  # text drawn SHEET_FONT_PX tall, shown at least READABLE_PX tall
            assert got[name]["width"] / got[name]["natural_width"] * SHEET_FONT_PX >= READABLE_PX - 1e-6, name
        with Image.open(out / "img" / "tension_hist.png") as im:  # matplotlib's 10 pt text at the saved dpi
            text_px = 10 * im.info["dpi"][0] / 72
        hist = got["tension_hist.png"]
        assert hist["width"] / hist["natural_width"] * text_px >= READABLE_PX - 0.01
    # the first check no longer pays Numba's compile: it takes as long as the other tights checks
    ms = _check_table_times(page)
    assert len(ms) == 3 and ms[0] <= max(10 * max(ms[1:]), 200), ms
    table = parse(page).tables[-1]
    assert [c[1] for c in table["thead"][0]] == ["step", "wall s", "CPU s"] and table["tfoot"][0][0][1] == "total"
    names = [r[0][1] for r in table["tbody"]]
    assert names[0] == "penetration check: one-time warm-up (Numba compiling or loading its kernels)"
    # the per-frame section's one-time bake is a row of its own, right before the section's
    bake = names.index("per-frame correction") - 1
    assert names[bake].startswith("per-frame correction: one-time warm-up (surface candidates")
    assert names[1:bake] + names[bake + 1:] == [title for title, _ in demo.SECTIONS] and len(names) >= 9
    wall = [float(r[1][1]) for r in table["tbody"]]
    assert float(table["tfoot"][0][1][1]) == pytest.approx(sum(wall), abs=0.005 * (len(wall) + 1) + 1e-9)

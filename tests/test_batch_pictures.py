"""`kisekae batch report --pictures`: worst-case selection, case recovery from the store's recorded
catalogues, before/after pictures with poke-through pixels, and the errors."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from browser import needs_chromium, parse, probe
from kisekae.batch import Store, load_catalog, parse_catalog, run_catalog
from kisekae.batch.pictures import MARK, case_positions, case_specs, picture_cases, write_pictures
from kisekae.cli import main
from kisekae.errors import KisekaeError

CATALOG = """stages = ["before", "after"]
[[bodies]]
name = "mh"
builtin = true
[[garments]]
name = "skirt"
fit = {{ margin = {margin} }}
[[motions]]
poses = ["leg_raise", "crouch"]
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One garment in two poses, before and after the fix, run inline: (folder, catalogue, store)."""
    d = tmp_path_factory.mktemp("pictures")
    cat = d / "cat.toml"
    cat.write_text(CATALOG.format(margin=0.003))
    store = d / "s.sqlite"
    s = run_catalog(load_catalog(cat), store, executor="inline", progress=False)
    assert s.status == "done" and s.error_rows == 0 and s.rows == 4
    return d, cat, store


@pytest.fixture(scope="module")
def drawn(run, tmp_path_factory):
    """`kisekae batch report STORE --pictures DIR` on that store: (folder, JSON report, stdout)."""
    _, _, store = run
    out = tmp_path_factory.mktemp("drawn") / "pics"
    js = out.parent / "rep.json"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["batch", "report", str(store), "--pictures", str(out), "--top", "5", "--json", str(js),
                     "--workers", "2"]) == 0  # the fixes run in 2 processes
    return out, json.loads(js.read_text()), buf.getvalue()


def _png(path) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB"))


def test_pictures_files_html_and_text(run, drawn):
    _, _, store = run
    out, rep, text = drawn
    with Store(store, readonly=True) as s:
        before = s.rows("stage = 'before'")
    # worst by inside_count before the fix: an independent sort of the stored rows
    order = sorted((r for r in before if r["inside_count"] > 0), key=lambda r: -r["inside_count"])
    assert [r["motion"] for r in order] == ["crouch", "leg_raise"]  # both poses really clip
    cases = rep["pictures"]["cases"]
    assert [(c["rank"], c["motion"], c["before_inside_count"]) for c in cases] == \
        [(i + 1, r["motion"], r["inside_count"]) for i, r in enumerate(order)]
    expected = {f"0{i + 1}_mh_skirt_{r['motion']}_0_{stage}.png" for i, r in enumerate(order)
                for stage in ("before", "after")} | {"index.html"}
    assert {p.name for p in out.iterdir()} == expected
    page = (out / "index.html").read_text()
    for name in expected - {"index.html"}:
        assert f"src='{name}'" in page
        assert str(out / name) in text  # the text report links every picture
    assert str(out / "index.html") in text
    for c in cases:
        assert c["error"] is None and c["settings_hash"] in page
        a, b = _png(c["before_png"]), _png(c["after_png"])
        assert a.shape == b.shape == (360, 640, 3)
        assert np.any(a != b)  # the fix moved the garment
        magenta = [int(np.all(img == MARK, axis=2).sum()) for img in (a, b)]
        assert c["before_pixels"] > 0 and magenta[0] >= c["before_pixels"]
        assert (magenta[1] == 0) == (c["after_pixels"] == 0)
        # the view with the most poke-through before the fix among the candidates
        vp = c["view_pixels"]
        best = max(vp["before"].values())
        assert vp["before"][c["view"]] == best
        assert c["before_pixels"] > c["after_pixels"]


def test_pictures_use_the_rows_settings_and_count_independently(run, drawn):
    """The after picture's garment is the stored after row's garment (same settings: the check of
    the positions drawn equals the stored metrics), and its pixels match a fresh poke-through count."""
    from kisekae.qa.check import check_pose
    from kisekae.render import named_camera
    from kisekae.render.poke import poke_through
    from kisekae.render.scene import avatar_items, avatar_landmarks

    _, _, store = run
    _, rep, _ = drawn
    c = rep["pictures"]["cases"][0]
    with Store(store, readonly=True) as s:
        after = s.rows("stage = 'after' AND motion = ?", (c["motion"],))[0]
        specs = case_specs(s, [c])[0]
    assert specs["settings"]["skirt"] == {"margin": 0.003}
    avatar, g, pose, fixed = case_positions(specs, c)
    rec = check_pose(avatar, pose, [g], posed_garments={g: fixed})[0]
    for m in ("inside_count", "inside_fraction", "max_depth_m", "edge_crossings"):
        assert rec[m] == after[m], m
    from kisekae.fit.fix import fix_pose

    default = fix_pose(avatar, pose, [g])[g].positions  # the solver's own defaults differ from margin=3 mm
    assert np.abs(default - fixed).max() > 1e-4
    body, gs = avatar_items(avatar, pose, garments=[g])
    cam = named_camera(c["view"], body.positions, 16 / 9, landmarks=avatar_landmarks(avatar, pose))
    assert poke_through(body, [gs[g]], cam, (640, 360)).count == c["before_pixels"]
    # the picture's after garment (fixed in a pool process) is the one fixed here
    body, gs = avatar_items(avatar, pose, garments=[g], positions={g: fixed})
    assert poke_through(body, [gs[g]], cam, (640, 360)).count == c["after_pixels"]
    assert rep["pictures"]["workers"] == 2


def test_picture_cases_rankings_against_python_sort(tmp_path):
    rows, rng = [], np.random.default_rng(3)
    for i in range(12):
        key = {"body": "b", "garment": f"g{i % 3}", "motion": "m", "frame": i, "settings_hash": "h"}
        bi, ai = int(rng.integers(0, 40)), int(rng.integers(0, 3))
        rows.append({**key, "stage": "before", "inside_count": bi, "max_depth_m": float(rng.random()),
                     "edge_crossings": int(rng.integers(0, 5)) if bi else 0})
        rows.append({**key, "stage": "after", "inside_count": ai, "max_depth_m": 0.001 * ai,
                     "edge_crossings": int(rng.integers(0, 4))})
    rows.append({"body": "b", "garment": "broken", "motion": "m", "frame": 0, "settings_hash": "h",
                 "stage": "before", "error": "file not found"})
    with Store(tmp_path / "s.sqlite") as s:
        s.write(rows)
        # ties are broken by body, garment, motion, frame
        for worst_by, key in (("before", lambda r: (-r["inside_count"], -r["max_depth_m"], r["garment"], r["frame"])),
                              ("after", lambda r: (-r["edge_crossings"], -r["inside_count"], -r["max_depth_m"],
                                                   r["garment"], r["frame"]))):
            mine = [r for r in rows if r["stage"] == worst_by and not r.get("error")
                    and (r["inside_count"] > 0 or r["edge_crossings"] > 0)]
            expect = [(r["garment"], r["frame"]) for r in sorted(mine, key=key)][:5]
            got = picture_cases(s, 5, worst_by)
            assert [(c["garment"], c["frame"]) for c in got] == expect, worst_by
            other = "after" if worst_by == "before" else "before"
            for c in got:
                twin = next(r for r in rows if r["stage"] == other and r["frame"] == c["frame"])
                assert c[f"{other}_inside_count"] == twin["inside_count"]
        with pytest.raises(KisekaeError, match="must be one of before, after"):
            picture_cases(s, 5, "during")
        with pytest.raises(KisekaeError, match="positive integer"):
            picture_cases(s, 0)


def test_store_without_catalog_records(run, tmp_path, capsys):
    """An old store (no catalogs table) works while its catalogue file is unchanged, fails clearly
    once it changes, and a --resume run with the original catalogue records it for good."""
    d, cat_path, ref = run
    cat = tmp_path / "cat.toml"
    shutil.copy(cat_path, cat)
    store = tmp_path / "s.sqlite"
    shutil.copy(ref, store)
    db = sqlite3.connect(store)
    db.execute("DROP TABLE catalogs")
    db.execute("UPDATE runs SET catalog = ?", (str(cat),))  # the run as if made from this copy
    db.commit()
    db.close()
    with Store(store, readonly=True) as s:
        assert s.catalogs() == []
        cases = picture_cases(s, 5)
        assert [sp["settings"]["skirt"] for sp in case_specs(s, cases)] == [{"margin": 0.003}] * 2
    cat.write_text(CATALOG.format(margin=0.005))  # the catalogue changed since the run
    out = tmp_path / "pics"
    assert main(["batch", "report", str(store), "--pictures", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot rebuild 2 of 2 case(s) for pictures" in err and "records no catalogue specs" in err
    assert "--resume" in err and str(store) in err
    assert not out.exists()  # nothing written
    # recovery: a resume run with the original catalogue records it; then the file may go
    cat.write_text(CATALOG.format(margin=0.003))
    assert run_catalog(load_catalog(cat), store, resume=True, executor="inline", progress=False).ran == 0
    cat.unlink()
    with Store(store, readonly=True) as s:
        assert len(s.catalogs()) == 1
        assert case_specs(s, picture_cases(s, 5))[0]["settings"]["skirt"] == {"margin": 0.003}
    # rows whose settings no recorded catalogue had
    db = sqlite3.connect(store)
    db.execute("UPDATE results SET settings_hash = '00000000deadbeef' WHERE motion = 'crouch'")
    db.commit()
    db.close()
    with Store(store, readonly=True) as s, pytest.raises(KisekaeError, match="cannot rebuild 1 of 2 case.*crouch.*"
                                                                             "none of its recorded catalogues"):
        case_specs(s, picture_cases(s, 5))


def test_a_case_whose_file_is_gone_fails_alone(tmp_path, capsys):
    """Rows of a garment file deleted since the run: that case is 'not drawn', exit status 1."""
    cat = parse_catalog({"stages": ["before"], "bodies": [{"builtin": True}],
                         "garments": [{"path": "gone.mhclo"}], "motions": [{"poses": ["crouch"]}]},
                        tmp_path / "c.toml")
    h = cat.settings_hash("gone")
    with Store(tmp_path / "s.sqlite") as s:
        s.record_catalog(cat)
        s.write([{"body": "makehuman", "garment": "gone", "motion": "crouch", "frame": 0, "settings_hash": h,
                  "stage": "before", "inside_count": 7, "max_depth_m": 0.01, "edge_crossings": 2}])
    out = tmp_path / "pics"
    assert main(["batch", "report", str(tmp_path / "s.sqlite"), "--pictures", str(out)]) == 1
    cap = capsys.readouterr()
    assert "not drawn" in cap.out and "gone.mhclo" in cap.out and "1 case(s) could not be drawn" in cap.err
    assert [p.name for p in out.iterdir()] == ["index.html"]
    assert "Not drawn" in (out / "index.html").read_text()


def test_picture_argument_errors(run, tmp_path, capsys):
    d, cat, store = run
    (tmp_path / "index.html").write_text("mine")
    for argv, msg in ((["batch", "report", str(store), "--pictures", str(tmp_path)], "index.html: file exists"),
                      (["batch", "report", str(store), "--pictures", str(tmp_path / "p"), "--picture-size",
                        "1920x1080"], "at most 1280x720"),
                      (["batch", "report", str(store), "--pictures", str(cat)], "not a folder"),
                      (["batch", str(cat), "--pictures", str(tmp_path)], "--pictures belongs to")):
        assert main(argv) == 2, argv
        assert msg in capsys.readouterr().err, argv
    assert (tmp_path / "index.html").read_text() == "mine"
    with Store(store, readonly=True) as s, pytest.raises(KisekaeError, match="at most 1280x720"):
        write_pictures(s, tmp_path / "q", size="1080p")


def test_an_existing_picture_is_refused_before_anything_is_written(run, drawn, tmp_path, capsys):
    """Not only index.html: any PNG of the same name is refused without --force, and nothing is written."""
    _, _, store = run
    out, _, _ = drawn
    name = sorted(p.name for p in out.glob("02_*_after.png"))[0]
    (tmp_path / name).write_bytes(b"mine")
    assert main(["batch", "report", str(store), "--pictures", str(tmp_path), "--top", "5"]) == 2
    assert f"{name}: file exists; pass --force" in capsys.readouterr().err
    assert [(p.name, p.read_bytes()) for p in tmp_path.iterdir()] == [(name, b"mine")]


@needs_chromium
def test_pictures_page_reads_on_a_phone(drawn):
    """index.html in headless Chromium at 390 px: no sideways overflow, no broken picture, pictures one
    above the other at the screen's width, and alt text that says what each picture shows."""
    out, rep, _ = drawn
    page = out / "index.html"
    assert [m["content"] for m in parse(page).meta if m.get("name") == "viewport"] == \
        ["width=device-width, initial-scale=1"]
    m = probe(page, 390)
    assert m["scroll_width"] <= 390 and m["wide"] == [], m["wide"]
    assert m["text_left"] >= 8 and m["text_right"] <= 390 - 8
    cases = rep["pictures"]["cases"]
    assert len(m["images"]) == 2 * len(cases) > 0
    for img, (case, stage) in zip(m["images"], [(c, s) for c in cases for s in ("before", "after")]):
        assert img["complete"] and img["natural_width"] == 640 and img["width"] >= 300
        alt = img["alt"]
        for word in (case["garment"], case["body"], case["motion"], f"{stage} the fix",
                     case["view"].replace("_", "-"), f"{case[f'{stage}_pixels']} poke-through pixels"):
            assert word in alt, (word, alt)

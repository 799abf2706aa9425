"""Batch catalogue runs: catalogue parsing, results against direct `check` calls, error rows,
exactly-once store and resume, report, CLI. (Dask and kill tests: test_batch_dask.py,
test_batch_resume.py.)"""

from __future__ import annotations

import json
import shutil
from hashlib import sha256
import sqlite3
from pathlib import Path

import pytest

from kisekae.avatar.contact import GAP, apply_contact
from kisekae.batch import (KEY_COLUMNS, METRICS, Store, load_catalog, parse_catalog, plan, run_catalog)
from kisekae.batch.report import build_report, format_report
from kisekae.batch.store import INFO_COLUMNS
from kisekae.cli import main
from kisekae.errors import KisekaeError

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "kisekae" / "data" / "samples"
SUIT = SAMPLES / "female_casualsuit01.mhclo"
BVH = SAMPLES / "cmu_35_01_excerpt.bvh"
#: Columns that must agree between runs (not timing, worker or version).
SAME = KEY_COLUMNS + INFO_COLUMNS + METRICS + ("error",)


def copy_samples(folder: Path) -> None:
    """Copy the sample garment (``.mhclo`` and its OBJ) and clip into ``folder``: a catalogue names
    files inside its own folder."""
    for f in (SUIT, SUIT.with_suffix(".obj"), BVH):
        if not (folder / f.name).exists():
            shutil.copy(f, folder / f.name)


def write_catalog(folder: Path, *, garments=None, motions=None, extra: str = "", name: str = "cat.toml") -> Path:
    copy_samples(folder)
    garments = garments if garments is not None else ['name = "tights"', 'name = "skirt"', f'path = "{SUIT.name}"']
    motions = motions if motions is not None else ['poses = ["stand", "crouch"]',
                                                   f'bvh = "{BVH.name}"\nframes = "0:2"\nname = "walk"']
    text = extra + '\n[[bodies]]\nname = "mh"\nbuiltin = true\n'
    text += "".join(f"\n[[garments]]\n{g}\n" for g in garments)
    text += "".join(f"\n[[motions]]\n{m}\n" for m in motions)
    p = folder / name
    p.write_text(text)
    return p


def metric_rows(store_path) -> list:
    with Store(store_path, readonly=True) as s:
        return [tuple(r[c] for c in SAME) for r in s.rows()]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The small catalogue run inline once: (catalogue path, store path, rows)."""
    d = tmp_path_factory.mktemp("batch")
    cat = write_catalog(d, extra='stages = ["before"]\n')
    store = d / "ref.sqlite"
    s = run_catalog(load_catalog(cat), store, executor="inline", progress=False)
    assert s.status == "done" and s.error_rows == 0
    return cat, store, metric_rows(store)


# -- catalogue ------------------------------------------------------------------------------
def test_catalog_plan_and_names(tmp_path):
    cat = load_catalog(write_catalog(tmp_path, extra='[fit]\nmargin = 0.003\n'), fix_available=False)
    assert list(cat.bodies) == ["mh"] and cat.bodies["mh"]["kind"] == "builtin"
    assert list(cat.garments) == ["tights", "skirt", "female_casualsuit01"]
    assert cat.garments["female_casualsuit01"] == {"kind": "mhclo", "path": str((tmp_path / SUIT.name).resolve()),
                                                   "fit": {}}
    assert list(cat.motions) == ["stand", "crouch", "walk"]
    assert cat.stages == ("before",)
    keys = plan(cat)
    # 3 garments x (2 poses + 2 BVH frames); BVH frames keep their clip index
    assert len(keys) == 12 and len(set(keys)) == 12
    assert sorted({k.frame for k in keys if k.motion == "walk"}) == [0, 1]
    assert {k.frame for k in keys if k.motion != "walk"} == {0}
    assert load_catalog(write_catalog(tmp_path), fix_available=True).stages == ("before", "after")


def test_settings_hash_follows_effective_settings(tmp_path):
    base = write_catalog(tmp_path, garments=['name = "tights"', 'name = "skirt"\nfit = { skirt_bias = 0.3 }'],
                         extra='stages = ["before"]\n[fit]\nmargin = 0.002\nstiffness = 0.5\n')
    same = write_catalog(tmp_path, garments=['name = "tights"\nfit = { stiffness = 0.5, margin = 0.002 }',
                                             'name = "skirt"\nfit = { skirt_bias = 0.3 }'],
                         extra='stages = ["before"]\n[fit]\nstiffness = 0.5\nmargin = 0.002\n', name="same.toml")
    a, b = load_catalog(base), load_catalog(same)
    assert a.settings_hash("tights") == b.settings_hash("tights")  # order and repetition do not matter
    assert a.settings_hash("tights") != a.settings_hash("skirt")
    assert a.garment_settings("skirt") == {"margin": 0.002, "stiffness": 0.5, "skirt_bias": 0.3}


def test_catalog_contact_setting(tmp_path):
    """``contact``: the contact body by default, false for plain skinning, or a gap; it is part of each row's
    settings hash and of the catalogue id, and a plain catalogue keeps the hashes it had before the setting."""
    from kisekae.avatar.contact import GAP
    from kisekae.batch.catalog import settings_hash

    got = {}
    for name, extra in (("default", ""), ("true", "contact = true\n"), ("false", "contact = false\n"),
                        ("wide", "contact = 0.01\n"), ("zero", "contact = 0\n")):
        got[name] = load_catalog(write_catalog(tmp_path, extra=extra, name=f"{name}.toml"), fix_available=False)
    assert got["default"].contact == got["true"].contact == GAP and got["false"].contact is None
    assert got["wide"].contact == 0.01 and got["zero"].contact == 0.0
    assert got["default"].specs()["contact"] == GAP and got["false"].specs()["contact"] is None
    hashes = {k: c.settings_hash("tights") for k, c in got.items()}
    assert hashes["default"] == hashes["true"] and len({hashes[k] for k in ("true", "false", "wide", "zero")}) == 4
    # plain skinning: the hash of the fit settings and stages alone, as stores written before the setting hold
    plain_blob = json.dumps({"fit": {}, "stages": ["before"]}, sort_keys=True)
    assert hashes["false"] == settings_hash({}, ("before",)) == sha256(plain_blob.encode()).hexdigest()[:16]
    assert got["default"].catalog_id != got["false"].catalog_id != got["wide"].catalog_id


@pytest.mark.parametrize("value", ['"yes"', "-0.001", "nan", "inf", "[0.01]", "{ gap = 0.01 }"])
def test_catalog_contact_errors(tmp_path, value):
    p = write_catalog(tmp_path, extra=f"contact = {value}\n")
    with pytest.raises(KisekaeError) as e:
        load_catalog(p)
    assert str(e.value).startswith(f"{p}: contact: must be true (the contact body, gap 0.004 m), false (plain "
                                   "skinning) or a gap in metres (a number >= 0), got ")


def test_plain_catalogue_rows_match_plain_skinning(tmp_path):
    """``contact = false`` gives the library's plain-skinning numbers; the default catalogue those of the contact
    body, under another settings hash."""
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import named_pose
    from kisekae.qa.check import check_pose

    rows = {}
    for name, extra in (("plain", 'contact = false\nstages = ["before"]\n'), ("contact", 'stages = ["before"]\n')):
        cat = load_catalog(write_catalog(tmp_path, garments=['name = "skirt"'], motions=['poses = ["crouch"]'],
                                         extra=extra, name=f"{name}.toml"))
        run_catalog(cat, tmp_path / f"{name}.sqlite", executor="inline", progress=False)
        with Store(tmp_path / f"{name}.sqlite", readonly=True) as s:
            (rows[name],) = s.rows()
    av = load_builtin_avatar()
    pose = named_pose(av.skeleton, "crouch")
    for name, body in (("plain", av), ("contact", apply_contact(av, GAP))):
        want = check_pose(body, pose, ["skirt"])[0]
        for m in ("inside_count", "max_depth_m", "edge_crossings"):
            assert rows[name][m] == want[m], (name, m)
    assert rows["plain"]["inside_count"] == 130 > rows["contact"]["inside_count"]
    assert rows["plain"]["settings_hash"] != rows["contact"]["settings_hash"]


@pytest.mark.parametrize("body, match", [
    ('[[bodies]]\nname = "mh"\nbuiltin = true\ncolour = 1', r"bodies\[0\]: unknown key\(s\) colour"),
    ('[[bodies]]\nbuiltin = true\nrig = "t_rex"', r"bodies\[0\]\.rig must be one of"),
    ('[[bodies]]\npath = "a.fbx"', "unsupported body file type"),
    ('[[bodies]]\nbuiltin = true\npath = "a.glb"', "exactly one of builtin = true or path"),
    ('[[bodies]]\nbuiltin = true\n[[bodies]]\nbuiltin = true', "duplicate body name 'makehuman'"),
])
def test_catalog_body_errors(tmp_path, body, match):
    p = tmp_path / "c.toml"
    p.write_text(body + '\n[[garments]]\nname = "tights"\n[[motions]]\nposes = ["stand"]\n')
    with pytest.raises(KisekaeError, match=match) as e:
        load_catalog(p)
    assert str(p) in str(e.value)


@pytest.mark.parametrize("garments, motions, extra, match", [
    (['name = "a"', 'name = "a"'], None, "", "duplicate or reserved garment name 'a'"),
    (['path = "x.fbx"'], None, "", "unsupported garment file type"),
    (['name = "t"\nfit = { margn = 1 }'], None, "", r"garments\[0\]\.fit: unknown setting\(s\) margn"),
    (['name = "t"\nfit = { margin = "thin" }'], None, "", "margin must be a number"),
    (None, ['poses = ["stand"]\nbvh = "a.bvh"'], "", "exactly one of poses, pose_file or bvh"),
    (None, ['poses = ["stand"]\nframes = "0:2"'], "", "frames applies to bvh clips only"),
    (None, ['poses = []'], "", "non-empty list"),
    (None, ['poses = ["stand", "stand"]'], "", "duplicate motion name 'stand'"),
    (None, None, 'stages = ["during"]\n', "stages must be a non-empty list"),
    (None, None, 'workers = 3\n', r"unknown key\(s\) workers"),
    ([], None, "garments = []\n", "garments must be a non-empty array"),
])
def test_catalog_entry_errors(tmp_path, garments, motions, extra, match):
    with pytest.raises(KisekaeError, match=match):
        load_catalog(write_catalog(tmp_path, garments=garments, motions=motions, extra=extra))


def test_catalog_file_errors(tmp_path):
    with pytest.raises(KisekaeError, match="file not found"):
        load_catalog(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[bodies]\n")
    with pytest.raises(KisekaeError, match="not valid TOML"):
        load_catalog(bad)
    with pytest.raises(KisekaeError, match="missing \\[\\[motions\\]\\]"):
        parse_catalog({"bodies": [{"builtin": True}], "garments": [{"name": "t"}]}, tmp_path / "x.toml")


# -- results against the direct check ------------------------------------------------------
def test_rows_match_direct_check(small):
    """Every stored metric equals `check_pose` run directly on the same avatar, garment and pose."""
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import named_pose
    from kisekae.io.bvh import load_bvh
    from kisekae.io.mhclo import load_mhclo
    from kisekae.qa.check import check_pose

    _, store, _ = small
    with Store(store, readonly=True) as s:
        rows = {(r["garment"], r["motion"], r["frame"]): r for r in s.rows()}
    assert len(rows) == 12
    expected = {}
    for rig, poses in (("game_engine", None), ("cmu_mb", "walk")):
        av = apply_contact(load_builtin_avatar(rig), GAP)  # a catalogue poses the contact body by default
        av.add_garment(load_mhclo(SUIT, av))
        if poses is None:
            todo = [("stand", 0, named_pose(av.skeleton, "stand")), ("crouch", 0, named_pose(av.skeleton, "crouch"))]
        else:
            todo = [("walk", f, p) for f, p in enumerate(load_bvh(BVH, av.skeleton, "0:2").poses)]
        for motion, frame, pose in todo:
            for rec in check_pose(av, pose, ["tights", "skirt", "female_casualsuit01"]):
                expected[(rec["garment"], motion, frame)] = (rig, pose.name, rec)
    assert set(expected) == set(rows)
    for k, (rig, pose_name, rec) in expected.items():
        r = rows[k]
        assert r["stage"] == "before" and r["error"] is None and r["rig"] == rig and r["pose"] == pose_name
        for m in ("vertices", "inside_count", "inside_fraction", "max_depth_m", "p95_depth_m", "edge_crossings"):
            assert r[m] == pytest.approx(rec[m], rel=0, abs=0), (k, m)
        assert r["time_ms"] > 0 and r["task_ms"] >= r["time_ms"] and r["kisekae_version"]
    # the data really clips in a crouch, so the comparison is not between zeros
    assert rows[("skirt", "crouch", 0)]["inside_count"] > 50


# -- broken entries ------------------------------------------------------------------------
def test_broken_entries_fail_only_their_rows(tmp_path):
    corrupt = tmp_path / "corrupt.mhclo"
    corrupt.write_text("verts 0\n1 2 3 oops\n")
    bad_bvh = tmp_path / "bad.bvh"
    bad_bvh.write_text("HIERARCHY\nROOT Hips\n{\n")
    cat = write_catalog(tmp_path, extra='stages = ["before"]\n', garments=[
        'name = "tights"', 'path = "missing.mhclo"', f'path = "{corrupt.name}"', 'name = "cape"'],
        motions=['poses = ["stand", "moonwalk"]', 'bvh = "nope.bvh"', f'bvh = "{bad_bvh.name}"'])
    store = tmp_path / "s.sqlite"
    s = run_catalog(load_catalog(cat), store, executor="inline", progress=False)
    with Store(store, readonly=True) as st:
        rows = st.rows()
    by = {(r["garment"], r["motion"], r["frame"]): r for r in rows}
    assert len(rows) == 4 * 4 == s.rows  # 4 garments x (stand, moonwalk, nope:-1, bad:-1)
    ok = by[("tights", "stand", 0)]
    assert ok["error"] is None and ok["inside_count"] is not None
    assert "file not found" in by[("missing", "stand", 0)]["error"]
    assert "corrupt.mhclo" in by[("corrupt", "stand", 0)]["error"]
    assert "unknown garment 'cape'" in by[("cape", "stand", 0)]["error"]
    assert "unknown pose 'moonwalk'" in by[("tights", "moonwalk", 0)]["error"]
    assert "nope.bvh" in by[("tights", "nope", -1)]["error"]
    assert "bad.bvh" in by[("tights", "bad", -1)]["error"]
    assert sum(r["error"] is None for r in rows) == 1 and s.error_rows == 15
    for r in rows:
        if r["error"]:
            assert all(r[m] is None for m in METRICS)
    # the CLI says so with exit status 1, and the report lists the failures
    assert main(["batch", str(cat), "--store", str(tmp_path / "cli.sqlite"), "--inline", "--no-progress"]) == 1
    with Store(store, readonly=True) as st:
        rep = build_report(st)
    fails = {(f["garment"], f["motion"]): f["rows"] for f in rep["failures"]}
    assert fails[("missing", "stand")] == 1 and sum(fails.values()) == 15


# -- store: exactly once, resume ----------------------------------------------------------
def test_store_primary_key_and_atomic_write(tmp_path):
    with Store(tmp_path / "s.sqlite") as s:
        row = {"body": "b", "garment": "g", "motion": "m", "frame": 0, "stage": "before", "settings_hash": "h",
               "inside_count": 3}
        assert s.write([row, {**row, "stage": "after"}]) == 2
        s.write([{**row, "inside_count": 4}])  # the same key replaces, never duplicates
        assert s.count() == 2 and s.rows("stage='before'")[0]["inside_count"] == 4
        with pytest.raises(KisekaeError, match="lacks key column"):
            s.write([{**row, "frame": 1, "stage": "before"}, {**row, "frame": 1, "stage": None}])
        assert s.count() == 2  # the failed batch left nothing behind
        with pytest.raises(sqlite3.IntegrityError):
            s.db.execute("INSERT INTO results (body, garment, motion, frame, stage, settings_hash) "
                         "VALUES ('b', 'g', 'm', 0, 'before', 'h')")
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all, just bytes" * 10)
    with pytest.raises(KisekaeError, match="not a kisekae result store"):
        Store(tmp_path / "junk.sqlite")
    with pytest.raises(KisekaeError, match="store not found"):
        Store(tmp_path / "none.sqlite", readonly=True)


def test_resume_fills_only_missing_rows(small, tmp_path):
    cat_path, ref_store, ref_rows = small
    store = tmp_path / "s.sqlite"
    shutil.copy(ref_store, store)
    cat = load_catalog(cat_path)
    with pytest.raises(KisekaeError, match="already holds results for 12 of this catalogue's 12 tasks"):
        run_catalog(cat, store, executor="inline", progress=False)
    with Store(store) as s:
        s.db.execute("DELETE FROM results WHERE motion='crouch' OR (motion='walk' AND frame=1)")
        s.db.execute("UPDATE results SET time_ms=-1")  # marks the rows that resume must keep
        assert s.count() == 6
    r = run_catalog(cat, store, resume=True, executor="inline", progress=False)
    assert (r.skipped, r.ran, r.rows) == (6, 6, 6)
    assert metric_rows(store) == ref_rows
    with Store(store, readonly=True) as s:
        assert sum(x["time_ms"] == -1 for x in s.rows()) == 6
        assert [x[0] for x in s.query("SELECT status FROM runs ORDER BY run_id")] == ["done", "done"]
    r = run_catalog(cat, store, resume=True, executor="inline", progress=False)
    assert (r.skipped, r.ran) == (12, 0)
    r = run_catalog(cat, store, fresh=True, executor="inline", progress=False)
    assert (r.skipped, r.ran) == (0, 12) and metric_rows(store) == ref_rows


def test_resume_retries_errors_and_drops_stale_error_rows(tmp_path):
    clip = tmp_path / "clip.bvh"
    cat = load_catalog(write_catalog(tmp_path, garments=['name = "skirt"'], extra='stages = ["before"]\n',
                                     motions=['poses = ["stand"]', f'bvh = "{clip.name}"\nframes = "1:3"']))
    store = tmp_path / "s.sqlite"
    s = run_catalog(cat, store, executor="inline", progress=False)
    assert s.error_rows == 1
    with Store(store, readonly=True) as st:
        assert [(r["motion"], r["frame"]) for r in st.rows("error IS NOT NULL")] == [("clip", -1)]
    shutil.copy(BVH, clip)  # the missing file appears
    s = run_catalog(cat, store, resume=True, executor="inline", progress=False)
    assert (s.skipped, s.ran, s.error_rows) == (1, 2, 0)
    with Store(store, readonly=True) as st:
        assert [(r["motion"], r["frame"], r["error"]) for r in st.rows()] == [
            ("clip", 1, None), ("clip", 2, None), ("stand", 0, None)]


# -- report and CLI ------------------------------------------------------------------------
def test_report_worst_cases_against_sorted_rows(small, tmp_path):
    _, store, _ = small
    with Store(store, readonly=True) as s:
        rows = s.rows()
        rep = build_report(s, top=5)
    clipping = [r for r in rows if r["inside_count"] > 0]
    expect = sorted(clipping, key=lambda r: (-r["max_depth_m"], -r["inside_fraction"]))[:5]
    assert [(r["garment"], r["motion"], r["frame"]) for r in rep["worst_before"]] == \
        [(r["garment"], r["motion"], r["frame"]) for r in expect]
    ov = rep["overview"][0]
    assert ov == {"stage": "before", "rows": 12, "ok": 12, "errors": 0, "clipping": len(clipping),
                  "crossing": sum(r["edge_crossings"] > 0 for r in rows),
                  "max_depth_m": max(r["max_depth_m"] for r in rows)}
    g = {x["garment"]: x for x in rep["per_garment"]}
    skirt = [r for r in rows if r["garment"] == "skirt"]
    worst = max(skirt, key=lambda r: r["max_depth_m"])
    assert g["skirt"]["worst"] == f"{worst['motion']}:{worst['frame']}"
    assert g["skirt"]["clipping_frames"] == sum(r["inside_count"] > 0 for r in skirt)
    text = format_report(rep)
    assert "Worst cases before the fix" in text and f"{1000 * expect[0]['max_depth_m']:.1f}" in text


def test_cli_batch_and_report(small, tmp_path, capsys):
    cat_path, _, ref_rows = small
    store = tmp_path / "cli.sqlite"
    assert main(["batch", str(cat_path), "--store", str(store), "--inline", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "12 tasks run, 0 already stored, 12 planned; 12 rows written (0 with errors)" in out
    assert metric_rows(store) == ref_rows
    assert main(["batch", str(cat_path), "--store", str(store), "--inline", "--no-progress"]) == 2
    assert "pass --resume" in capsys.readouterr().err
    assert main(["batch", str(cat_path), "--store", str(store), "--resume", "--inline", "--no-progress"]) == 0
    assert "0 tasks run, 12 already stored" in capsys.readouterr().out
    js = tmp_path / "rep.json"
    assert main(["batch", "report", str(store), "--top", "3", "--json", str(js)]) == 0
    assert "Per garment" in capsys.readouterr().out
    assert len(json.loads(js.read_text())["worst_before"]) == 3
    for argv, msg in ((["batch", "report"], "give the result store"),
                      (["batch", "report", str(tmp_path / "none.sqlite")], "store not found"),
                      (["batch", "report", str(store), "--json", str(js)], "file exists"),
                      (["batch", str(cat_path), "--json", "x.json"], "--json belongs to"),
                      (["batch", str(cat_path), "--inline", "--workers", "2"], "--inline excludes"),
                      (["batch", str(cat_path), "--resume", "--fresh", "--store", str(store)], "exclude each other"),
                      (["batch", str(tmp_path / "none.toml")], "file not found")):
        assert main(argv) == 2, argv
        assert msg in capsys.readouterr().err, argv


# -- the after stage -----------------------------------------------------------------------
def test_after_stage_plumbing_with_a_known_fix(tmp_path, monkeypatch):
    """A stand-in fix that lifts the garment 10 m away: the after row must show it clear of the body
    and carry the fix's own metrics; a fix that raises fails only the after rows."""
    import numpy as np

    from kisekae.batch import worker

    calls = []

    def far_fix(avatar, pose, garment, settings):
        calls.append((garment, pose.name, dict(settings)))
        pts = avatar.posed_vertices(garment, pose) + np.float32([10.0, 0.0, 0.0])
        return pts, {"max_push_m": 10.0, "moved_fraction": 1.0, "moved_unnecessarily": len(pts)}

    monkeypatch.setattr(worker, "fix_function", lambda: far_fix)
    cat = load_catalog(write_catalog(tmp_path, garments=['name = "skirt"\nfit = { margin = 0.003 }'],
                                     motions=['poses = ["crouch"]'], extra='stages = ["before", "after"]\n'))
    run_catalog(cat, tmp_path / "s.sqlite", executor="inline", progress=False)
    with Store(tmp_path / "s.sqlite", readonly=True) as s:
        before, after = s.rows(order="stage DESC")
    assert (before["stage"], after["stage"]) == ("before", "after")
    assert calls == [("skirt", "crouch", {"margin": 0.003})]
    assert before["inside_count"] > 50 and before["max_push_m"] is None
    assert (after["inside_count"], after["edge_crossings"], after["max_depth_m"]) == (0, 0, 0.0)
    assert (after["max_push_m"], after["moved_fraction"], after["moved_unnecessarily"]) == (10.0, 1.0, 720)
    assert after["vertices"] == before["vertices"] == 720 and after["settings_hash"] == before["settings_hash"]

    def broken_fix(avatar, pose, garment, settings):
        raise FloatingPointError("solver diverged")

    monkeypatch.setattr(worker, "fix_function", lambda: broken_fix)
    run_catalog(cat, tmp_path / "s2.sqlite", executor="inline", progress=False)
    with Store(tmp_path / "s2.sqlite", readonly=True) as s:
        before, after = s.rows(order="stage DESC")
    assert before["error"] is None and before["inside_count"] > 50
    assert after["error"] == "FloatingPointError: solver diverged" and after["inside_count"] is None


def test_after_stage_matches_the_fix_solver(tmp_path):
    """With kisekae.fit's solver present, after rows equal fix_pose + check_pose run directly."""
    import kisekae.fit.fix as fix_mod
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.avatar.poses import named_pose
    from kisekae.qa.check import check_pose

    cat = load_catalog(write_catalog(tmp_path, garments=['name = "skirt"', 'name = "tights"\nfit = { margin = 0.003 }'],
                                     motions=['poses = ["leg_raise"]'], extra='stages = ["before", "after"]\n'))
    run_catalog(cat, tmp_path / "s.sqlite", executor="inline", progress=False)
    with Store(tmp_path / "s.sqlite", readonly=True) as s:
        rows = {r["garment"]: r for r in s.rows("stage = 'after'")}
    av = apply_contact(load_builtin_avatar(), GAP)  # a catalogue poses the contact body by default
    pose = named_pose(av.skeleton, "leg_raise")
    from kisekae.fit import PushParams

    for g, params in (("skirt", None), ("tights", PushParams(margin=0.003))):
        res = fix_mod.fix_pose(av, pose, [g], params)[g]
        rec = check_pose(av, pose, [g], posed_garments={g: res.positions})[0]
        r = rows[g]
        assert r["error"] is None
        for m in ("inside_count", "inside_fraction", "max_depth_m", "edge_crossings"):
            assert r[m] == rec[m], (g, m)
        for m in ("max_push_m", "moved_fraction", "moved_unnecessarily"):
            assert r[m] == res.metrics[m], (g, m)
        assert r["max_push_m"] > 0.001  # leg_raise really moves both garments


# -- glTF bodies and garments --------------------------------------------------------------
def test_gltf_body_and_gltf_garment(tmp_path):
    """A glTF export of the built-in avatar as a body, and its skirt as a separate glTF garment, give
    the built-in rows; a glTF garment on a skeleton without its bones fails with a clear error."""
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.io.gltf_write import save_avatar

    glb = tmp_path / "mh.glb"
    save_avatar(glb, load_builtin_avatar())
    text = ('stages = ["before"]\n[[bodies]]\nname = "mh"\nrig = "game_engine"\n'
            '[[bodies]]\nname = "exported"\npath = "mh.glb"\n'
            '[[bodies]]\nname = "mh_cmu"\nrig = "cmu_mb"\n'
            '[[garments]]\nname = "tights"\n[[garments]]\nname = "skirt"\n'
            '[[garments]]\nname = "skirt_glb"\npath = "mh.glb"\nmesh = "skirt"\n'
            '[[garments]]\nname = "any_glb"\npath = "mh.glb"\n'
            '[[motions]]\nposes = ["crouch"]\n')
    (tmp_path / "c.toml").write_text(text)
    run_catalog(load_catalog(tmp_path / "c.toml"), tmp_path / "s.sqlite", executor="inline", progress=False)
    with Store(tmp_path / "s.sqlite", readonly=True) as s:
        r = {(x["body"], x["garment"]): x for x in s.rows()}
    ref = r[("mh", "skirt")]
    assert ref["error"] is None and ref["inside_count"] > 50
    for key in (("mh", "skirt_glb"), ("exported", "skirt"), ("exported", "skirt_glb")):
        assert r[key]["error"] is None, r[key]["error"]
        assert abs(r[key]["inside_count"] - ref["inside_count"]) <= 2, key
        assert r[key]["max_depth_m"] == pytest.approx(ref["max_depth_m"], abs=1e-4), key
    assert r[("exported", "tights")]["inside_count"] == pytest.approx(r[("mh", "tights")]["inside_count"], abs=2)
    assert "the file has 2 garments (tights, skirt)" in r[("mh", "any_glb")]["error"]
    assert "not in the body's skeleton" in r[("mh_cmu", "skirt_glb")]["error"]
    assert r[("mh_cmu", "skirt")]["error"] is None


def test_gltf_garment_rest_pose_must_match(tmp_path):
    import numpy as np

    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.batch.garments import load_gltf_garment
    from kisekae.io.gltf_write import save_avatar

    av = load_builtin_avatar()
    moved = load_builtin_avatar()
    moved.skeleton.rest[:, 1, 3] += np.float32(0.01)  # every bone 1 cm higher
    glb = tmp_path / "moved.glb"
    save_avatar(glb, moved)
    with pytest.raises(KisekaeError, match=r"not in the body's rest pose .* differs by 10\.0 mm"):
        load_gltf_garment(glb, av, name="s", part="skirt")
    g = load_gltf_garment(glb, av, name="s", part="skirt", tolerance=0.02)
    assert g.name == "s" and g.skin.indices.max() < av.skeleton.n_bones
    with pytest.raises(KisekaeError, match="no garment 'cape'"):
        load_gltf_garment(glb, av, name="s", part="cape")


def test_rows_fixed_by_an_earlier_rule_are_not_reused(monkeypatch):
    """Catalogues with the ``after`` stage hash the fix's rule (FIX_POLICY); ``before``-only rows keep their hash."""
    from kisekae.batch import catalog

    fixed, before = catalog.settings_hash({}, ("before", "after")), catalog.settings_hash({}, ("before",))
    monkeypatch.setattr(catalog, "FIX_POLICY", "an-earlier-rule")
    assert catalog.settings_hash({}, ("before", "after")) != fixed
    assert catalog.settings_hash({}, ("before",)) == before

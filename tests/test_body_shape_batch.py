"""Shaped bodies in batch catalogues: ``[[bodies]] shape = {...}``."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from kisekae.batch import Store, load_catalog, parse_catalog, run_catalog
from kisekae.errors import KisekaeError

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "catalog.toml"


def _catalog(folder: Path, body: str) -> Path:
    p = folder / "cat.toml"
    p.write_text('stages = ["before"]\n[[bodies]]\nname = "plain"\nbuiltin = true\n\n[[bodies]]\n' + body
                 + '\n\n[[garments]]\nname = "tights"\n\n[[motions]]\nposes = ["crouch"]\n')
    return p


def test_shaped_body_runs_and_matches_check(tmp_path):
    from kisekae.avatar import load_builtin_avatar, parse_body
    from kisekae.avatar.poses import named_pose
    from kisekae.qa.check import check_pose

    cat = load_catalog(_catalog(tmp_path, 'name = "heavy"\nshape = { gender = 0.0, weight = 1.0 }'))
    assert cat.bodies["heavy"]["shape"]["weight"] == 1.0 and "shape" not in cat.bodies["plain"]
    s = run_catalog(cat, tmp_path / "s.sqlite", executor="inline", progress=False)
    assert s.error_rows == 0
    with Store(tmp_path / "s.sqlite", readonly=True) as st:
        rows = {r["body"]: r for r in st.rows()}
    from kisekae.avatar.contact import GAP, apply_contact

    av = apply_contact(load_builtin_avatar(shape=parse_body("gender=0,weight=1")), GAP)  # the catalogue default
    want = check_pose(av, named_pose(av.skeleton, "crouch"), ["tights"])[0]
    assert rows["heavy"]["inside_count"] == want["inside_count"]
    assert rows["heavy"]["inside_count"] != rows["plain"]["inside_count"]


@pytest.mark.parametrize("body, message", [
    ('name = "x"\nshape = { gendre = 0.1 }', "bodies[1].shape: unknown body parameter 'gendre'; valid: gender 0..1"),
    ('name = "x"\nshape = { weight = 1.5 }', "bodies[1].shape: weight = 1.5 is out of range 0..1"),
    ('name = "x"\nshape = { weight = nan }', "bodies[1].shape: weight = nan is not a finite number"),
    ('name = "x"\nshape = 3', "bodies[1].shape: a body shape must be a table"),
    ('name = "x"\npath = "a.glb"\nshape = { weight = 1.0 }', "bodies[1].shape applies to the built-in body only"),
])
def test_bad_shape_in_catalogue(tmp_path, body, message):
    with pytest.raises(KisekaeError) as exc:
        load_catalog(_catalog(tmp_path, body))
    assert message in str(exc.value) and str(exc.value).startswith(str(tmp_path))


def test_example_catalogue_has_eight_shaped_bodies():
    data = tomllib.loads(EXAMPLE.read_text())
    cat = parse_catalog(data, EXAMPLE, allow_outside=True)  # the example names the package's samples (../src)
    shaped = [b for b in cat.bodies.values() if "shape" in b]
    assert len(shaped) == 8 and len(cat.bodies) == 9
    # a spread: both genders, min and max weight, a child and an old age
    values = {k: {b["shape"][k] for b in shaped} for k in ("gender", "weight", "age")}
    assert {0.0, 1.0} <= values["gender"] and {0.0, 1.0} <= values["weight"] and {0.1875, 1.0} <= values["age"]

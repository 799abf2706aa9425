"""The disk cache of slow bakes (kisekae.bake_cache) and the surface candidates kept in it."""

from __future__ import annotations

import os

import numpy as np
import pytest

from kisekae.bake_cache import cache_dir, cache_path, cached_arrays, input_hash


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KISEKAE_CACHE_DIR", str(tmp_path / "c"))
    return tmp_path / "c"


def _counting(value):
    calls = []

    def make():
        calls.append(1)
        return {"a": np.asarray(value), "b": np.arange(5, dtype=np.int32)}

    return make, calls


def test_a_bake_is_made_once_and_read_back_bit_for_bit(cache):
    make, calls = _counting(np.linspace(0, 1, 7))
    first = cached_arrays("thing", ["x", 1, np.ones(3)], make)
    second = cached_arrays("thing", ["x", 1, np.ones(3)], make)
    assert len(calls) == 1
    assert first.keys() == second.keys()
    for k in first:
        assert first[k].dtype == second[k].dtype
        np.testing.assert_array_equal(first[k], second[k])
    files = list((cache / "thing").iterdir())
    assert len(files) == 1 and files[0].suffix == ".npz"  # no temporary file left behind


def test_any_changed_input_is_a_new_entry(cache):
    make, calls = _counting([1.0])
    for parts in (["x", 1, np.ones(3)], ["x", 2, np.ones(3)], ["y", 1, np.ones(3)], ["x", 1, np.ones(4)],
                  ["x", 1, np.ones(3, dtype=np.float32)], ["x", 1, np.ones(3).reshape(1, 3)], ["x", 1.0, np.ones(3)]):
        cached_arrays("thing", parts, make)
    assert len(calls) == 7
    # the same bytes under another dtype or shape hash differently; nesting is not flattening
    assert input_hash([np.zeros(2, np.int64)]) != input_hash([np.zeros(4, np.int32)])
    assert input_hash([["ab"], "c"]) != input_hash([["a"], "bc"])
    with pytest.raises(TypeError, match="dict"):
        input_hash([{"a": 1}])


def test_an_unreadable_file_is_baked_again_and_replaced(cache, capsys):
    make, calls = _counting([2.0, 3.0])
    path = cache_path("thing", ["k"])
    path.parent.mkdir(parents=True)
    path.write_bytes(b"PK\x03\x04 cut short")
    out = cached_arrays("thing", ["k"], make)
    assert len(calls) == 1 and "unreadable cached bake" in capsys.readouterr().err
    np.testing.assert_array_equal(out["a"], [2.0, 3.0])
    again = cached_arrays("thing", ["k"], make)
    assert len(calls) == 1
    np.testing.assert_array_equal(again["a"], [2.0, 3.0])


@pytest.mark.parametrize("value", ["off", "0", "", "None"])
def test_the_disk_cache_can_be_turned_off(tmp_path, monkeypatch, value):
    monkeypatch.setenv("KISEKAE_CACHE_DIR", value)
    assert cache_dir() is None
    make, calls = _counting([1.0])
    cached_arrays("thing", ["k"], make)
    cached_arrays("thing", ["k"], make)
    assert len(calls) == 2


def test_default_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("KISEKAE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "kisekae"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_keeps_the_bake_in_memory(tmp_path, monkeypatch):
    root = tmp_path / "ro"
    root.mkdir()
    root.chmod(0o500)
    monkeypatch.setenv("KISEKAE_CACHE_DIR", str(root))
    make, calls = _counting([1.0])
    try:
        out = cached_arrays("thing", ["k"], make)
    finally:
        root.chmod(0o700)
    assert len(calls) == 1 and out["a"][0] == 1.0 and not any(root.iterdir())


def test_a_file_in_the_way_of_the_folder_keeps_the_bake_in_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("KISEKAE_CACHE_DIR", str(blocker))
    make, calls = _counting([4.0])
    assert cached_arrays("thing", ["k"], make)["a"][0] == 4.0
    assert blocker.read_text() == "not a folder"


def test_candidates_from_the_cache_equal_a_fresh_bake(cache, avatar, monkeypatch):
    """The cached candidates of a garment (vertices and edge samples) are the bake's own; the key changes with how
    the body is posed."""
    from kisekae.avatar.builtin import load_builtin_avatar
    from kisekae.fit import runtime
    from kisekae.fit.edge_lift import with_corner_candidates
    from kisekae.fit.followed_bake import bake_followed_candidates
    from kisekae.fit.runtime import candidates_cache_key, garment_candidates, garment_lift, garment_samples, params_for

    monkeypatch.setattr(runtime, "BAKE_POSES", 12)
    monkeypatch.setattr(runtime, "ARM_BAKE_POSES", 3)
    samples = garment_samples(avatar, "skirt")
    fresh = bake_followed_candidates(avatar, "skirt", params_for("skirt", None), samples=samples, n_poses=12,
                                     arm_poses=3)
    fresh = fresh[0], with_corner_candidates(fresh[1], fresh[0], samples)  # the samples' free slots: their corners'
    for _ in range(2):  # baked and written, then read back, each on a new avatar object
        fresh_avatar = load_builtin_avatar()
        got = garment_candidates(fresh_avatar, "skirt"), garment_lift(fresh_avatar, "skirt")[1]
        for c, f in zip(got, fresh):
            np.testing.assert_array_equal(c.triangles, f.triangles)
            assert c.triangles.dtype == f.triangles.dtype and c.n_body_faces == f.n_body_faces
    assert len(list((cache / "candidates").iterdir())) == 1
    plain = input_hash(candidates_cache_key(avatar, "skirt"))
    assert input_hash(candidates_cache_key(avatar.with_body_contact(), "skirt")) != plain
    assert input_hash(candidates_cache_key(avatar.with_body_contact(gap=0.008), "skirt")) != \
        input_hash(candidates_cache_key(avatar.with_body_contact(), "skirt"))
    assert input_hash(candidates_cache_key(avatar, "tights")) != plain
    # the layer bake's key takes the inner garment's own entries: the key's tail, after the body's skin
    own = runtime._garment_key_entries(avatar, "tights")
    full = candidates_cache_key(avatar, "tights")
    assert input_hash(full[-len(own):]) == input_hash(own)
    np.testing.assert_array_equal(own[0], avatar.part("tights").mesh.vertices)
    np.testing.assert_array_equal(full[-len(own) - 1], avatar.body.skin.weights)

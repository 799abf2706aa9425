"""``kisekae wound bake`` and ``kisekae wound hit`` end to end (parser built from the wound module alone)."""

import argparse
import json

import numpy as np
import pytest

from kisekae.cli import wound as wound_cli
from kisekae.errors import KisekaeError


def run(argv):
    parser = argparse.ArgumentParser(prog="kisekae")
    wound_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def _npz_meshes(tmp_path, with_uv1):
    xs = np.linspace(0, 0.4, 9)
    x, y = np.meshgrid(xs, xs, indexing="ij")
    v = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], 1)
    f = []
    for i in range(8):
        for j in range(8):
            a, b, c, d = i * 9 + j, (i + 1) * 9 + j, (i + 1) * 9 + j + 1, i * 9 + j + 1
            f += [[a, b, c], [a, c, d]]
    uv = v[:, :2] / 0.4
    dmg = v.copy()
    dmg[:, 2] = -0.03 * np.exp(-np.sum((v[:, :2] - 0.2) ** 2, 1) / 0.005)
    extra = {"uv1": uv} if with_uv1 else {}
    np.savez(tmp_path / "normal.npz", vertices=v, faces=np.array(f), uv0=uv, **extra)
    np.savez(tmp_path / "damaged.npz", vertices=dmg, faces=np.array(f), uv0=uv)
    return v, dmg


@pytest.mark.parametrize("method", ["closest", "uv"])
def test_bake_cli_writes_files_and_table(tmp_path, capsys, method):
    _npz_meshes(tmp_path, with_uv1=True)
    out = tmp_path / "out"
    assert run(["wound", "bake", str(tmp_path / "normal.npz"), str(tmp_path / "damaged.npz"), "-o", str(out),
                "--method", method]) == 0
    text = capsys.readouterr().out
    assert "delta16" in text and "pos max mm" in text
    side = json.loads((out / "wound.json").read_text())
    assert side["correspondence"]["method"] == method and side["vertices"] == 81
    assert (out / "wound_start.glb").exists() and (out / "wound_half_pos.exr").exists()
    assert (out / "wound_delta16_pos.png").exists()


def test_bake_cli_uv_without_uv1_is_a_clear_error(tmp_path):
    _npz_meshes(tmp_path, with_uv1=False)
    with pytest.raises(KisekaeError, match="uv1"):
        run(["wound", "bake", str(tmp_path / "normal.npz"), str(tmp_path / "damaged.npz"), "-o",
             str(tmp_path / "o"), "--method", "uv"])


def test_hit_cli_on_builtin_with_bake(tmp_path, capsys):
    out = tmp_path / "bake"
    assert run(["wound", "bake", "builtin", "builtin-damaged", "-o", str(out), "--encodings", "delta16"]) == 0
    npz = tmp_path / "hits.npz"
    assert run(["wound", "hit", "--ray", "0.03", "1.107", "0.5", "0", "0", "-1", "--ray", "5", "5", "5", "0", "0", "1",
                "--bake", str(out / "wound.json"), "-o", str(npz)]) == 0
    text = capsys.readouterr().out
    assert "ray 2: miss" in text
    z = np.load(npz)
    assert z["hit_bone"].shape == (1,) and 0 < (z["p"] > 0).sum() < 500
    from kisekae.avatar import load_builtin_avatar
    bind = load_builtin_avatar().body.mesh.vertices
    untouched = z["p"] == 0
    assert z["morphed_bind"][untouched].tobytes() == np.ascontiguousarray(bind[untouched]).tobytes()
    moved = np.linalg.norm(z["morphed_bind"] - bind, axis=1)
    assert moved[~untouched].max() > 0.005  # the chest dent (25 mm deep) opens where the ray hit
    with pytest.raises(KisekaeError, match="NaN"):
        run(["wound", "hit", "--ray", "nan", "1", "1", "0", "0", "-1", "-o", str(npz)])

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
    prev = tmp_path / "prev"
    assert run(["wound", "hit", "--ray", "0.03", "1.107", "0.5", "0", "0", "-1", "--ray", "5", "5", "5", "0", "0", "1",
                "--bake", str(out / "wound.json"), "-o", str(npz), "--pose", "crouch", "--preview", str(prev),
                "--preview-steps", "2", "--preview-size", "128x128", "--preview-view", "front"]) == 0
    a, b = _read_rgb(prev / "morph_00_p0.00.png"), _read_rgb(prev / "morph_01_p1.00.png")
    changed = np.abs(a - b).sum(2) > 12
    assert 0 < changed.sum() < 0.02 * a.shape[0] * a.shape[1]  # only around the one hit
    assert (prev / "morph.gif").exists()
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
    # posed on the contact body (the default): skinning, then the same contact step as the unmorphed body
    from kisekae.avatar.poses import named_pose
    from kisekae.avatar.skinning import lbs_numpy

    from kisekae.avatar.contact import GAP, apply_contact

    av = apply_contact(load_builtin_avatar(), GAP)
    m = named_pose(av.skeleton, "crouch").skinning_matrices(av.skeleton)
    skinned = lbs_numpy(z["morphed_bind"], av.body.skin.indices, av.body.skin.weights, m)
    np.testing.assert_allclose(z["morphed_posed"], av.body.deform(skinned, m), atol=2e-6)
    assert np.abs(z["morphed_posed"] - skinned).max() > 0.01  # the crouch's knees and hips really move
    with pytest.raises(KisekaeError, match="NaN"):
        run(["wound", "hit", "--ray", "nan", "1", "1", "0", "0", "-1", "-o", str(tmp_path / "nan.npz")])


def _read_rgb(path):
    from PIL import Image
    return np.asarray(Image.open(path).convert("RGB")).astype(np.int16)


def test_bake_cli_preview_frames_go_from_start_to_target(tmp_path, capsys):
    _npz_meshes(tmp_path, with_uv1=False)
    out = tmp_path / "out"
    assert run(["wound", "bake", str(tmp_path / "normal.npz"), str(tmp_path / "damaged.npz"), "-o", str(out),
                "--encodings", "delta16", "--preview", "--preview-steps", "3", "--preview-size", "96x96"]) == 0
    assert "preview: 3 frames" in capsys.readouterr().out
    frames = sorted((out / "preview").glob("morph_*_p*.png"))
    assert [f.name for f in frames] == ["morph_00_p0.00.png", "morph_01_p0.50.png", "morph_02_p1.00.png"]
    a, mid, b = (_read_rgb(f) for f in frames)
    assert a.shape == (96, 96, 3)
    changed = np.abs(a - b).sum(2) > 12
    assert 20 < changed.sum() < 0.9 * 96 * 96  # the dent shows, the background does not change
    assert np.abs(a - mid).sum() < np.abs(a - b).sum()  # halfway is closer to the start than the end is
    from PIL import Image
    gif = Image.open(out / "preview" / "morph.gif")
    assert gif.n_frames == 4  # forth and back: 0, 0.5, 1, 0.5
    assert (out / "preview" / "morph_sheet.png").exists()


def test_preview_frame_at_zero_is_the_unmorphed_mesh_and_one_the_target():
    from kisekae.render import DrawItem, Renderer, materials, named_camera
    from kisekae.app.wound_preview import morph_frames
    from kisekae.geom.normals import vertex_normals
    xs = np.linspace(-0.2, 0.2, 11)
    x, y = np.meshgrid(xs, xs, indexing="ij")
    v = np.stack([x.ravel(), y.ravel() + 1.0, np.zeros(x.size)], 1).astype(np.float32)
    f = np.array([[i * 11 + j, (i + 1) * 11 + j, (i + 1) * 11 + j + 1] for i in range(10) for j in range(10)]
                 + [[i * 11 + j, (i + 1) * 11 + j + 1, i * 11 + j + 1] for i in range(10) for j in range(10)])
    t = v.copy()
    t[:, 2] = 0.05 * np.exp(-np.sum((v[:, :2] - [0, 1.0]) ** 2, 1) / 0.005)
    n, tn = vertex_normals(v, f), vertex_normals(t, f)
    r = Renderer(samples=0)
    frames = morph_frames(v, n, f, t, tn, steps=2, size="64x64", view="front", renderer=r, tint="displacement")
    cam = named_camera("front", np.vstack([v, t]), 1.0)
    mat = materials.skin("realistic")
    start = r.draw([DrawItem(v, f, mat, normals=n, attributes={"wound": np.zeros(len(v))}, role="body")], cam,
                   (64, 64)).rgb
    moved = np.minimum(1, np.linalg.norm(t - v, axis=1) / 0.005)
    end = r.draw([DrawItem(t, f, mat, normals=tn, attributes={"wound": moved}, role="body")], cam, (64, 64)).rgb
    np.testing.assert_array_equal(frames[0][1], start)
    assert np.abs(frames[1][1].astype(int) - end).max() <= 2  # normals renormalised in float32
    assert np.abs(frames[0][1].astype(int) - frames[1][1]).max() > 30
    with pytest.raises(KisekaeError, match="steps"):
        morph_frames(v, n, f, t, tn, steps=1)
    with pytest.raises(KisekaeError, match="tint"):
        morph_frames(v, n, f, t, tn, tint="red")


def test_bake_cli_reads_obj_meshes(tmp_path, capsys):
    v, dmg = _npz_meshes(tmp_path, with_uv1=False)
    faces = np.load(tmp_path / "normal.npz")["faces"]
    for name, verts in (("normal.obj", v), ("damaged.obj", dmg)):
        lines = [f"v {a:.6f} {b:.6f} {c:.6f}" for a, b, c in verts] + [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in faces]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    out = tmp_path / "o"
    assert run(["wound", "bake", str(tmp_path / "normal.obj"), str(tmp_path / "damaged.obj"), "-o", str(out),
                "--encodings", "delta16"]) == 0
    assert json.loads((out / "wound.json").read_text())["vertices"] == 81
    (tmp_path / "bad.obj").write_text("v 0 0 0\nf 1 2 3\n")
    with pytest.raises(KisekaeError, match="bad.obj.*line 2"):
        run(["wound", "bake", str(tmp_path / "bad.obj"), str(tmp_path / "damaged.obj"), "-o", str(out)])

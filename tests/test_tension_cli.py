"""`kisekae tension` and the built-in avatar integration."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kisekae.cli import main
from kisekae.tension import avatar_plan, tension_map_numpy


@pytest.fixture(scope="module")
def avatar():
    from kisekae.avatar.builtin import load_builtin_avatar

    return load_builtin_avatar()


def test_avatar_plan_uses_quad_edges_and_matches_numpy(avatar):
    from kisekae.avatar.poses import named_pose

    mesh = avatar.body.mesh
    plan = avatar_plan(avatar, "body")
    # quad sides only, as Blender sees the MakeHuman quads (no triangulation diagonals)
    assert len(plan.edges) == len(mesh.edges) < len(mesh.triangle_edges)
    stand = plan.evaluate(avatar.posed_vertices("body", named_pose(avatar.skeleton, "stand")))
    np.testing.assert_allclose(stand.ratio, 1.0, atol=1e-4)
    crouch_pos = avatar.posed_vertices("body", named_pose(avatar.skeleton, "crouch"))
    got = plan.evaluate(crouch_pos)
    ref = tension_map_numpy(mesh.vertices, crouch_pos, edges=mesh.edges, weld=mesh.weld)
    np.testing.assert_allclose(got.ratio, ref.ratio, rtol=1e-6)
    np.testing.assert_allclose(got.color, ref.color, atol=1e-5)
    assert got.compress.max() == 1.0 and got.stretch.max() == 1.0  # the crouch folds the knees


def test_cli_writes_json_png_npz(tmp_path, capsys):
    out = tmp_path / "t"
    rc = main(["tension", "--pose", "stand", "--pose", "knee_bend", "--falloff", "1.5", "--vertices", "0,5",
               "--out", str(out)])
    assert rc == 0
    data = json.loads((out / "tension.json").read_text())
    assert data["frames"] == ["stand", "knee_bend"] and set(data) >= {"0", "5", "min_index", "max_index"}
    assert data["params"]["falloff"] == 1.5 and data["stats"][1]["t_max"] > 1.2
    assert (out / "tension.png").read_bytes()[:4] == b"\x89PNG"
    z = np.load(out / "tension.npz")
    assert z["colors"].shape == (2, 13380, 4) and z["colors"].dtype == np.uint8
    assert "knee_bend" in capsys.readouterr().out


def test_cli_strain_mode_on_garment(tmp_path):
    rc = main(["tension", "--mesh", "skirt", "--pose", "leg_raise", "--mode", "strain", "--blur", "1",
               "--out", str(tmp_path)])
    assert rc == 0
    z = np.load(tmp_path / "tension.npz")
    assert z["lambda_min"].shape == (1, 720) and z["direction"].shape == (1, 720, 3)


def test_cli_bad_input(tmp_path, capsys):
    assert main(["tension", "--mesh", "cape", "--out", str(tmp_path)]) == 2
    assert "--mesh" in capsys.readouterr().err
    assert main(["tension", "--pose", "nope", "--out", str(tmp_path)]) == 2
    assert main(["tension", "--stretch-area", "nan", "--pose", "stand", "--out", str(tmp_path)]) == 2
    assert "stretch_area" in capsys.readouterr().err
    assert main(["tension", "--pose", "stand", "--vertices", "99999999", "--out", str(tmp_path)]) == 2


def test_cli_glb_bake_round_trips(tmp_path):
    """`kisekae tension --glb` writes per-frame compress/stretch that read back equal to the .npz."""
    import numpy as np

    from kisekae.cli import main
    from kisekae.io.gltf import load_gltf

    assert main(["tension", "--mesh", "skirt", "--pose", "stand", "--pose", "leg_raise", "-o", str(tmp_path),
                 "--glb"]) == 0
    asset = load_gltf(tmp_path / "tension.glb")
    npz = np.load(tmp_path / "tension.npz")
    attrs = asset.attributes["skirt"]
    for k in range(2):
        np.testing.assert_allclose(attrs[f"_COMPRESS_{k}"], npz["compress"][k], atol=1e-6)
        np.testing.assert_allclose(attrs[f"_STRETCH_{k}"], npz["stretch"][k], atol=1e-6)
    np.testing.assert_allclose(attrs["COLOR_0"][:, 0], npz["compress"][0], atol=1e-6)
    assert len(asset.animations[0].poses) == 2


def test_cli_poses_the_contact_body_unless_no_contact(tmp_path, capsys, avatar):
    """The default body is the joint-plane contact body; ``--no-contact`` is plain skinning. Each equals the
    library's tension of that body."""
    from kisekae.avatar.poses import named_pose

    pose = named_pose(avatar.skeleton, "crouch")
    plan = avatar_plan(avatar, "body")
    got = {}
    for name, flags in (("contact", []), ("plain", ["--no-contact"])):
        assert main(["tension", "--pose", "crouch", "-o", str(tmp_path / name), *flags]) == 0
        got[name] = np.load(tmp_path / name / "tension.npz")["ratio"][0]
    capsys.readouterr()
    from kisekae.avatar.contact import GAP, apply_contact

    for name, av in (("contact", apply_contact(avatar, GAP)), ("plain", avatar)):
        want = plan.evaluate(av.posed_vertices("body", pose)).ratio
        np.testing.assert_allclose(got[name], want, rtol=1e-5)
    assert np.abs(got["contact"] - got["plain"]).max() > 0.05  # the contact body folds the knees differently

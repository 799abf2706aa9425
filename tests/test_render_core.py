"""The renderer runs the HLSL shader core: generated GLSL, tight look, tension mapping, wound morph."""

import shutil

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.render import Camera, DrawItem, Renderer, materials
from kisekae.render import shading as S
from kisekae.render.materials import Preset
from kisekae.render.renderer import WoundMorph
from kisekae.shaders import HLSL_DIR

from test_render_shapes import sphere

#: A preset with every term but diffuse + ambient switched off, so the tight look's AO is measurable.
FLAT = Preset("flat", dent_depth=0.0, ao_gain=0.3, sss=0.0, sss_loss=0.0, wrinkle_amp=0.0, wrinkle_freq=1.0,
              bands=0, contrast=1.0, rim=0.0, specular=0.0)


@pytest.fixture(scope="module")
def ball():
    p, f = sphere(radius=0.5, nu=48, nv=24)
    return p, f, Camera(eye=(0, 0, 3), target=(0, 0, 0), fov_y=30)


@pytest.fixture(scope="module")
def r0():
    return Renderer(samples=0)


def test_glsl_is_generated_from_the_core_files():
    prog = S.core_program()
    for src in (prog.vertex_shader, prog.fragment_shader):
        assert src.startswith("#version 410")
        assert "KisekaeRender" in src  # uniform blocks from the HLSL entry files
    assert S.CoreShading().key == prog.key
    # the entry files include the core rather than copying it
    for path in (S.VERTEX_HLSL, S.FRAGMENT_HLSL):
        text = path.read_text()
        assert '#include "kisekae_core.hlsl"' in text
        assert "float KisekaeHitDamage" not in text and "void KisekaeTightLook" not in text


def test_edited_core_changes_the_rendered_pixels(tmp_path, ball):
    """Compile against a copy of the core whose tight look ignores AO: the rendered skin changes."""
    p, f, cam = ball
    core = tmp_path / "core"
    shutil.copytree(HLSL_DIR, core)
    tl = core / "kisekae_tightlook.hlsl"
    text = tl.read_text()
    assert "ao = saturate(ao * (1.0 - P.aoStrength * k));" in text
    tl.write_text(text.replace("ao = saturate(ao * (1.0 - P.aoStrength * k));", "ao = ao;"))
    edited = S.CoreShading(core_dir=core, use_cache=False)
    assert edited.key != S.CoreShading().key
    item = DrawItem(p, f, materials.skin(FLAT), attributes={"tightness": np.ones(len(p))})
    plain = DrawItem(p, f, materials.skin(FLAT))
    r_core = Renderer(samples=0)
    r_edit = Renderer(samples=0, shading=edited)
    a = r_core.draw([item], cam, (64, 48)).rgb[24, 32].astype(int)
    b = r_edit.draw([item], cam, (64, 48)).rgb[24, 32].astype(int)
    c = r_core.draw([plain], cam, (64, 48)).rgb[24, 32].astype(int)
    assert np.abs(b - c).max() <= 1  # without the AO term, tightness changes nothing here
    assert (c - a).sum() > 20


@pytest.mark.parametrize("k", [0.5, 1.0])
def test_tight_look_ao_matches_the_reference(ball, r0, k):
    """Constant tightness: no tilt, so linear colour scales by the reference's AO factor."""
    from kisekae.shaders.reference import tight_look

    p, f, cam = ball
    plain = r0.draw([DrawItem(p, f, materials.skin(FLAT))], cam, (64, 48)).rgb[20:28, 28:36].astype(float)
    tight = r0.draw([DrawItem(p, f, materials.skin(FLAT), attributes={"pressure": np.full(len(p), k)})], cam,
                    (64, 48)).rgb[20:28, 28:36].astype(float)
    _, ao, _ = tight_look(np.array([[0, 0, 1.0]]), [1.0], [0.0], np.zeros((1, 3)), [0.0], [k], ao_strength=0.3)
    lin = lambda x: (x / 255.0) ** 2.2
    ratio = lin(tight).sum() / lin(plain).sum()
    assert abs(ratio - ao[0]) < 0.02, (ratio, ao[0])


def test_dent_tilts_normals_only_where_tightness_changes(r0):
    """A tightness step across a plane: the dent shows as a lit/shadowed band along the step."""
    n = 60
    xs, ys = np.meshgrid(np.linspace(-0.5, 0.5, n), np.linspace(-0.5, 0.5, n))
    pts = np.c_[xs.ravel(), ys.ravel(), np.zeros(n * n)]
    quads = np.array([[i * n + j, i * n + j + 1, (i + 1) * n + j + 1, (i + 1) * n + j] for i in range(n - 1)
                      for j in range(n - 1)])
    tris = np.r_[quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]]
    k = np.clip((pts[:, 0] + 0.1) / 0.2, 0, 1)  # ramps 0 -> 1 across x in [-0.1, 0.1]
    cam = Camera(eye=(0, 0, 2.5), target=(0, 0, 0), fov_y=30)
    deep = Preset("deep", dent_depth=0.05, ao_gain=0.0, sss=0.0, sss_loss=0.0, wrinkle_amp=0.0, wrinkle_freq=1.0,
                  bands=0, contrast=1.0, rim=0.0, specular=0.0)
    flat = r0.draw([DrawItem(pts, tris, materials.skin(deep))], cam, (96, 96)).rgb.astype(int)
    dent = r0.draw([DrawItem(pts, tris, materials.skin(deep), attributes={"tightness": k})], cam, (96, 96)).rgb
    diff = np.abs(dent.astype(int) - flat).sum(axis=2)
    mid, side = diff[30:66, 44:52].mean(), diff[30:66, 10:20].mean() + diff[30:66, 78:88].mean()
    assert mid > 4 and side < 0.5, (mid, side)


def test_tension_ratio_is_mapped_by_the_core(ball, r0):
    from kisekae.tension.blender import map_ratio

    p, f, cam = ball
    params = (1.3, 0.9, 0.6, 0.8)
    for t in (0.8, 0.95, 1.2, 1.6):
        item = DrawItem(p, f, materials.tension(tension_params=params), attributes={"ratio": np.full(len(p), t)})
        rgb = r0.draw([item], cam, (64, 48)).rgb[24, 32].astype(int)
        ref = map_ratio(np.array([t]), *params)
        expect = np.round(np.array([ref.compress[0], ref.stretch[0], 0.0]) * 255)
        assert np.abs(rgb - expect).max() <= 1, (t, rgb, expect)


def _morph_reference(p, f, target, pvals):
    from kisekae.geom.normals import vertex_normals
    from kisekae.wound.runtime import morph_numpy

    pos, nrm = morph_numpy(p, vertex_normals(p, f), target, vertex_normals(target, f), pvals)
    return np.asarray(pos), np.asarray(nrm)


def test_wound_morph_matches_cpu_morph(ball, r0):
    p, f, cam = ball
    target = p * np.array([0.6, 1.0, 0.6]) + np.array([0.1, 0.0, 0.0])
    pvals = np.clip((p[:, 1] + 0.5), 0, 1)  # more damage towards the top
    gpu = r0.draw([DrawItem(p, f, materials.skin(FLAT, wound_color=(0.86, 0.66, 0.55)), attributes={"wound": pvals},
                            wound=WoundMorph(target, tint_distance=0.0))], cam, (96, 72)).rgb.astype(int)
    pos, nrm = _morph_reference(p, f, target, pvals)
    cpu = r0.draw([DrawItem(pos, f, materials.skin(FLAT, wound_color=(0.86, 0.66, 0.55)), normals=nrm,
                            attributes={"wound": pvals})], cam, (96, 72)).rgb.astype(int)
    static = r0.draw([DrawItem(p, f, materials.skin(FLAT))], cam, (96, 72)).rgb.astype(int)
    assert np.abs(gpu - static).max(axis=2).astype(bool).sum() > 500  # the shape moved
    bad = np.abs(gpu - cpu).max(axis=2) > 3
    assert bad.sum() <= 20, bad.sum()  # silhouette-edge pixels only


def test_hit_loop_matches_wound_runtime(ball, r0):
    from kisekae.wound.runtime import wound_p_numpy

    p, f, cam = ball
    target = p * 0.7
    parts = (p[:, 0] > 0).astype(np.int64)
    hits = np.array([[0.0, 0.2, 0.45, 1], [-0.3, -0.1, 0.35, 0]], np.float32)
    reach, gain = np.array([1.0, 2.0]), np.array([1.0, 0.5])
    wm = WoundMorph(target, parts=parts, part_reach=reach, part_gain=gain, hits=hits, hole_size=0.1,
                    hole_intensity=8.0, tint_distance=0.0)
    mat = materials.skin(FLAT, wound_color=(0.86, 0.66, 0.55))
    gpu = r0.draw([DrawItem(p, f, mat, wound=wm)], cam, (96, 72)).rgb.astype(int)
    pvals = wound_p_numpy(p, parts, hits[:, :3], hits[:, 3].astype(int), 0.1, 8.0, reach, gain)
    assert 0.05 < np.mean(pvals > 0) < 0.9
    pos, nrm = _morph_reference(p, f, target, pvals)
    cpu = r0.draw([DrawItem(pos, f, mat, normals=nrm, attributes={"wound": pvals})], cam, (96, 72)).rgb.astype(int)
    assert (np.abs(gpu - cpu).max(axis=2) > 3).sum() <= 20


def test_wound_and_material_validation(ball):
    p, f, _ = ball
    with pytest.raises(KisekaeError, match="target positions"):
        DrawItem(p, f, wound=WoundMorph(p[:10]))
    with pytest.raises(KisekaeError, match="at most 32 hits"):
        DrawItem(p, f, wound=WoundMorph(p, hits=np.zeros((33, 4))))
    with pytest.raises(KisekaeError, match="part ids"):
        DrawItem(p, f, wound=WoundMorph(p, parts=np.full(len(p), 3)))
    with pytest.raises(KisekaeError, match="tension_params"):
        materials.tension(tension_params=(1, 1, 1))


def test_presets_use_the_pressure_modules_strengths():
    import importlib

    pressure = importlib.import_module("kisekae.fit.pressure")  # (kisekae.fit also exports a function 'pressure')

    for name in ("anime", "realistic"):
        p, ref = materials.PRESETS[name], pressure.PRESETS[name]
        assert (p.normal_strength, p.ao_gain, p.sss_loss) == (ref["normal_strength"], ref["ao_strength"],
                                                               ref["sss_strength"])
        assert p.dent_depth == pressure.RADIUS


def test_wound_tint_only_where_the_morph_moves(ball, r0):
    p, f, cam = ball
    target = p.copy()
    right = p[:, 0] > 0.05
    target[right] *= 0.9  # only the right half is damaged (5 cm inwards)
    item = DrawItem(p, f, materials.skin(FLAT), attributes={"wound": np.ones(len(p))}, wound=WoundMorph(target))
    rgb = r0.draw([item], cam, (96, 72)).rgb.astype(int)
    redness = rgb[..., 0] - rgb[..., 1]
    assert redness[30:42, 60:66].mean() > 60  # damaged side: wound colour
    plain = r0.draw([DrawItem(p, f, materials.skin(FLAT))], cam, (96, 72)).rgb.astype(int)
    assert np.abs(rgb[30:42, 28:36] - plain[30:42, 28:36]).max() <= 1  # undamaged side untouched


def test_wrinkle_blend_uses_the_core_weights(ball, r0):
    """Below the wrinkle map's threshold the core's weight is 0 (no wrinkles); above it they appear."""
    p, f, cam = ball
    c = np.full(len(p), 0.4)
    plain = r0.draw([DrawItem(p, f, materials.cloth(preset="anime"))], cam, (96, 72)).rgb.astype(int)
    for threshold, expect in ((0.5, False), (0.2, True)):
        mat = materials.cloth(preset="anime", wrinkle_threshold=threshold, wrinkle_gain=2.0)
        img = r0.draw([DrawItem(p, f, mat, attributes={"compress": c})], cam, (96, 72)).rgb.astype(int)
        changed = np.abs(img - plain).max(axis=2) > 2
        assert bool(changed.sum() > 200) == expect, (threshold, changed.sum())
    with pytest.raises(KisekaeError, match="wrinkle"):
        materials.cloth(wrinkle_threshold=1.0)


@pytest.mark.parametrize("name", ["article8", "delta8", "delta16", "half", "float"])
def test_encoded_wound_is_decoded_by_the_core_like_the_cpu(ball, r0, name):
    """The vertex stage decodes the baked data (core) into the same target as kisekae.wound.encode.decode."""
    from kisekae.geom.normals import vertex_normals
    from kisekae.wound.encode import decode, encode

    p, f, cam = ball
    target = p * np.array([0.75, 1.0, 0.75]) + np.array([0.05, 0.0, 0.02])
    enc = encode(name, p.astype(np.float32), target.astype(np.float32), vertex_normals(target, f))
    pos, nrm = decode(enc, p)
    mat = materials.skin(FLAT, wound_color=(0.86, 0.66, 0.55))
    pvals = {"wound": np.full(len(p), 0.8)}
    gpu = r0.draw([DrawItem(p, f, mat, attributes=pvals, wound=WoundMorph.from_encoded(enc, tint_distance=0.0))],
                  cam, (96, 72)).rgb.astype(int)
    cpu = r0.draw([DrawItem(p, f, mat, attributes=pvals, wound=WoundMorph(pos, target_normals=nrm, tint_distance=0.0))],
                  cam, (96, 72)).rgb.astype(int)
    static = r0.draw([DrawItem(p, f, mat)], cam, (96, 72)).rgb.astype(int)
    assert np.abs(gpu - static).max(axis=2).astype(bool).sum() > 300
    assert (np.abs(gpu - cpu).max(axis=2) > 2).sum() <= 8

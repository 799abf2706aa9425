"""Renderer: context errors, cameras, materials, images, id and depth buffers."""

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.render import (ALL_VIEWS, EGL_PACKAGES, RESOLUTIONS, VIEWS, Camera, DrawItem, Renderer, create_context,
                            draw, fit_camera, materials, named_camera, resolution)
from kisekae.render.camera import CLOSE_UPS
from kisekae.geom.edges import unique_edges
from kisekae.geom.normals import vertex_normals
from kisekae.render.materials import colormap_table

from test_render_shapes import raycast, sphere


def _project(cam, pts, aspect):
    h = np.c_[pts, np.ones(len(pts))] @ cam.view_projection(aspect).T
    return h[:, :3] / h[:, 3:]


def test_missing_egl_names_packages():
    with pytest.raises(KisekaeError) as exc:
        create_context(libegl="/nonexistent/libEGL.so.1")
    msg = str(exc.value)
    assert all(p in msg for p in EGL_PACKAGES) and "apt-get install" in msg


def test_camera_matrices_match_definition():
    cam = Camera(eye=(0, 1, 3), target=(0, 1, 0), fov_y=60, near=0.5, far=10)
    v = cam.view_matrix()
    assert np.allclose(v @ [0, 1, 0, 1], [0, 0, -3, 1])
    p = cam.projection_matrix(2.0)
    for z in (0.5, 10.0):  # near plane -> NDC -1, far plane -> NDC +1
        c = p @ [0, 0, -z, 1]
        assert np.isclose(c[2] / c[3], -1.0 if z == 0.5 else 1.0)
    c = p @ [np.tan(np.radians(30)) * 2 * 4, np.tan(np.radians(30)) * 4, -4, 1]
    assert np.allclose(c[:2] / c[3], [1, 1])
    with pytest.raises(KisekaeError, match="coincide"):
        Camera(eye=(0, 0, 0), target=(0, 0, 0))
    with pytest.raises(KisekaeError, match="near"):
        Camera(eye=(0, 0, 1), target=(0, 0, 0), near=2, far=1)
    with pytest.raises(KisekaeError, match="camera.eye"):
        Camera(eye=(0, np.nan, 1), target=(0, 0, 0))


@pytest.mark.parametrize("view", ALL_VIEWS)
def test_named_views_frame_the_points(view):
    rng = np.random.default_rng(3)
    pts = rng.uniform([-0.3, 0.0, -0.15], [0.3, 1.7, 0.15], size=(3000, 3))
    aspect = 16 / 9
    cam = named_camera(view, pts, aspect, margin=0.05)
    ndc = _project(cam, pts, aspect)
    if view in CLOSE_UPS:
        assert np.linalg.norm(np.subtract(cam.eye, cam.target)) < 2.0
        seen = pts[np.all(np.abs(ndc[:, :2]) <= 1, axis=1)]
        assert len(seen) > 100 and np.ptp(seen[:, 1]) < 0.8  # a close-up, not the whole 1.7 m body
    else:
        assert np.all(np.abs(ndc[:, :2]) <= 0.95 + 1e-6)
        assert np.max(np.abs(ndc[:, :2])) > 0.93  # tight: touches the margin
        assert np.all((ndc[:, 2] > -1) & (ndc[:, 2] < 1))


def test_views_look_from_the_documented_side():
    pts = np.array([[-0.2, 0, -0.1], [0.2, 1.7, 0.1]])
    eye = {v: np.asarray(named_camera(v, pts, 1.0).eye) for v in ("front", "side", "back", "three_quarter")}
    assert eye["front"][2] > 1 and abs(eye["front"][0]) < 1e-9
    assert eye["side"][0] > 1 and eye["back"][2] < -1
    assert eye["three_quarter"][0] > 0.5 and eye["three_quarter"][2] > 0.5
    with pytest.raises(KisekaeError, match="unknown view"):
        named_camera("top", pts, 1.0)
    assert len(VIEWS) == 9 and "armpits" not in VIEWS and "armpits" in ALL_VIEWS  # the poke check keeps its 9 views
    cam = fit_camera(pts, (0, 0.85, 0), (0, 0, 1), 1.0)
    assert cam.eye[2] > 0


def test_resolution_parsing():
    assert resolution("720p") == (1280, 720) and resolution("2160p") == (3840, 2160)
    assert resolution("640x480") == (640, 480) and resolution((3, 2)) == (3, 2)
    assert set(RESOLUTIONS) >= {"720p", "1080p", "2160p"}
    for bad in ("huge", "0x5", (1, 2, 3), "99999x2"):
        with pytest.raises(KisekaeError, match="resolution"):
            resolution(bad)


def test_geometry_helpers():
    p, f = sphere(radius=2.0, nu=24, nv=12)
    n = vertex_normals(p, f)
    radial = p / np.linalg.norm(p, axis=1, keepdims=True)
    assert np.min(np.einsum("ij,ij->i", n, radial)) > 0.98
    assert unique_edges([[0, 1, 2], [0, 2, 3]]).tolist() == [[0, 1], [0, 2], [0, 3], [1, 2], [2, 3]]
    assert len(unique_edges([[0, 1, 2, 3]])) == 4  # quad sides only, no diagonal


def test_material_validation():
    with pytest.raises(KisekaeError, match="kind"):
        materials.Material(kind="metal")
    with pytest.raises(KisekaeError, match="preset"):
        materials.skin("cartoon")
    with pytest.raises(KisekaeError, match="color"):
        materials.Material(color=(2, 0, 0))
    with pytest.raises(KisekaeError, match="heat_range"):
        materials.heatmap((1, 1))
    assert materials.PRESETS["anime"].bands > 0 and materials.PRESETS["realistic"].bands == 0
    assert materials.PRESETS["anime"].normal_strength > materials.PRESETS["realistic"].normal_strength
    assert materials.PRESETS["anime"].sss < materials.PRESETS["realistic"].sss


def test_drawitem_validation():
    p, f = sphere()
    with pytest.raises(KisekaeError, match="shell.faces"):
        DrawItem(p, f + 10_000, name="shell")
    with pytest.raises(KisekaeError, match="attributes"):
        DrawItem(p, f, attributes={"glow": np.zeros(len(p))})
    with pytest.raises(KisekaeError, match="tightness"):
        DrawItem(p, f, attributes={"tightness": np.zeros(3)})
    with pytest.raises(KisekaeError, match="role"):
        DrawItem(p, f, role="hat")


@pytest.fixture(scope="module")
def ball():
    p, f = sphere(radius=0.5, nu=48, nv=24)
    cam = Camera(eye=(0, 0, 3), target=(0, 0, 0), fov_y=30)
    return p, f, cam


def test_ids_and_depth_match_raycast(ball):
    p, f, cam = ball
    w, h = 64, 48
    frame = draw([DrawItem(p, f, materials.skin())], cam, (w, h), ids=True, depth=True)
    ref_depth, ref_front = raycast(cam, w, h, p, f)
    hit = np.isfinite(ref_depth)
    assert (frame.ids != 0).sum() > 300
    assert ((frame.ids == 1) != ref_front).sum() <= 4  # silhouette pixels may differ
    both = hit & (frame.ids == 1)
    assert np.allclose(frame.depth[both], ref_depth[both], atol=2e-4)
    assert np.isclose(frame.depth[h // 2, w // 2], 2.5, atol=2e-3)  # sphere front at 3 - 0.5 m
    assert np.all(np.isinf(frame.depth[~hit & (frame.ids == 0)]))
    assert frame.rgb.shape == (h, w, 3) and frame.rgb.dtype == np.uint8


def test_back_faces_get_negative_ids(ball):
    p, f, _ = ball
    inside = Camera(eye=(0, 0, 0), target=(0, 0, -1), fov_y=60)
    ids, depth = Renderer().id_depth([DrawItem(p, f)], inside, (32, 32), item_ids=[7])
    assert np.all(ids == -7)
    assert np.allclose(depth[16, 16], 0.5, atol=3e-3)


def test_tension_colours_are_exact(ball):
    p, f, cam = ball
    item = DrawItem(p, f, materials.tension(),
                    attributes={"compress": np.full(len(p), 0.6), "stretch": np.full(len(p), 0.2)})
    rgb = draw([item], cam, (64, 48)).rgb
    assert np.abs(rgb[24, 32].astype(int) - [153, 51, 0]).max() <= 1
    assert np.abs(rgb[0, 0].astype(int) - [237, 237, 240]).max() <= 1  # background


def test_heatmap_uses_the_colormap(ball):
    p, f, cam = ball
    item = DrawItem(p, f, materials.heatmap((0.0, 2.0), colormap="viridis", shaded=False),
                    attributes={"heat": np.full(len(p), 0.5)})
    rgb = draw([item], cam, (64, 48)).rgb
    expect = colormap_table("viridis")[64]  # 0.5 / 2.0 of the way
    assert np.abs(rgb[24, 32].astype(int) - expect.astype(int)).max() <= 2


def test_tight_look_darkens_pressed_skin(ball):
    p, f, cam = ball
    plain = draw([DrawItem(p, f, materials.skin())], cam, (96, 72)).rgb.astype(int)
    tight = draw([DrawItem(p, f, materials.skin(), attributes={"tightness": np.ones(len(p))})], cam,
                 (96, 72)).rgb.astype(int)
    assert tight[36, 48].sum() < plain[36, 48].sum() - 15  # AO and less scattering
    wound = draw([DrawItem(p, f, materials.skin(), attributes={"wound": np.ones(len(p))})], cam, (96, 72)).rgb
    assert wound[36, 48, 0] > 1.5 * wound[36, 48, 1]  # red wound tint


def test_presets_differ_and_wireframe_draws_edges(ball):
    p, f, cam = ball
    a = draw([DrawItem(p, f, materials.skin("anime"))], cam, (96, 72)).rgb
    r = draw([DrawItem(p, f, materials.skin("realistic"))], cam, (96, 72)).rgb
    assert np.abs(a.astype(int) - r.astype(int)).mean() > 2
    flat = draw([DrawItem(p, f, materials.Material(kind="wireframe", wire_color=(0.8, 0.8, 0.82)))], cam,
                (96, 72)).rgb
    wire = draw([DrawItem(p, f, materials.wireframe())], cam, (96, 72)).rgb
    dark = (wire.sum(axis=2) < 150) & (flat.sum(axis=2) > 300)
    assert dark.sum() > 100  # edge lines over the surface


def test_msaa_smooths_silhouettes(ball):
    p, f, cam = ball
    item = DrawItem(p, f, materials.tension(), attributes={"compress": np.ones(len(p))})
    aliased = Renderer(samples=0).draw([item], cam, (64, 48)).rgb
    smooth = Renderer(samples=4).draw([item], cam, (64, 48)).rgb
    n_levels = lambda img: len(np.unique(img[..., 1]))  # green: 0 inside, 240 background
    assert n_levels(aliased) == 2 and n_levels(smooth) > 2


def test_close_up_follows_landmarks():
    rng = np.random.default_rng(5)
    pts = rng.uniform([-0.3, 0.0, -0.15], [0.3, 1.7, 0.15], size=(4000, 3))
    knee = np.array([[0.1, 0.9, 0.0], [0.12, 0.95, 0.05]])  # e.g. a raised leg
    cam = named_camera("knees", pts, 16 / 9, landmarks={"knees": knee})
    assert np.linalg.norm(np.subtract(cam.target, knee.mean(axis=0))) < 0.1
    ndc = _project(cam, knee, 16 / 9)
    assert np.all(np.abs(ndc[:, :2]) < 0.5)  # anchors near the image centre
    with pytest.raises(KisekaeError, match="knees"):
        named_camera("knees", pts, 1.0, landmarks={"knees": [[9.0, 9.0, 9.0]]})


def test_armpit_landmark_sits_below_the_shoulder_towards_the_chest(avatar):
    """The armpit close-up's anchor is the weighted sum of the shoulder, elbow and upper chest joints: below the
    shoulder joint and between it and the chest's centre line, with the arm down and raised; its close-up frames
    it."""
    from kisekae.avatar.poses import named_pose
    from kisekae.render.scene import LANDMARK_BLENDS, avatar_landmarks

    sk = avatar.skeleton
    for name in ("stand", "arms_up"):
        pose = named_pose(sk, name)
        world = pose.world_matrices(sk)
        joint = {b: world[sk.index[b]][:3, 3] for b, _ in LANDMARK_BLENDS["armpits"]}
        want = sum(w * joint[b] for b, w in LANDMARK_BLENDS["armpits"])
        got = avatar_landmarks(avatar, pose)["armpits"]
        np.testing.assert_allclose(got, want[None], atol=1e-12)
        shoulder, chest = joint["upperarm_l"], joint["spine_03"]
        assert chest[0] < got[0, 0] < shoulder[0] + 0.03  # at most a little out of the shoulder with the arm up
        if name == "stand":
            assert shoulder[1] - 0.12 < got[0, 1] < shoulder[1] - 0.03
        body = avatar.body.posed(pose.skinning_matrices(sk))
        cam = named_camera("armpits", body, 16 / 9, landmarks={"armpits": got})
        assert np.all(np.abs(_project(cam, got, 16 / 9)[:, :2]) < 0.5)


def test_welded_normals_are_shared():
    p, f = sphere(nu=16, nv=8)
    k = 16 * 4  # a vertex on the equator
    p2 = np.vstack([p, p[k:k + 1]])  # its seam duplicate, used by one face
    f2 = f.copy()
    first = np.nonzero((f2 == k).any(axis=1))[0][0]
    f2[first][f2[first] == k] = len(p)
    weld = np.r_[np.arange(len(p)), k]
    n = vertex_normals(p2, f2, weld)
    radial = p[k] / np.linalg.norm(p[k])
    assert np.allclose(n[k], n[-1]) and np.dot(n[k], radial) > 0.99
    unwelded = vertex_normals(p2, f2)
    assert np.dot(unwelded[k], unwelded[-1]) < 0.999  # without the weld the two halves differ
    with pytest.raises(KisekaeError, match="weld"):
        vertex_normals(p2, f2, weld[:-1])

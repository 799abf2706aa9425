"""Poke-through pixels: analytic cases and agreement with an independent CPU ray caster."""

import numpy as np
import pytest

from kisekae.errors import KisekaeError
from kisekae.render import Camera, DrawItem, materials, named_camera
from kisekae.render.poke import mark_pixels, poke_mask, poke_through, poke_through_report

from test_render_shapes import outward_fraction, raycast, sphere, tube


def _item(pf, role, kind="skin"):
    return DrawItem(pf[0], pf[1], materials.Material(kind=kind), role=role)


def _front(points, w=160, h=120):
    return named_camera("front", points, w / h)


def test_shapes_are_outward():
    p, f = sphere()
    assert outward_fraction(p, f, (0, 0, 0)) == 1.0
    p, f = tube()
    c = p[f].mean(axis=1)
    n = np.cross(p[f[:, 1]] - p[f[:, 0]], p[f[:, 2]] - p[f[:, 0]])
    assert np.all(np.einsum("ij,ij->i", n, c * [1, 0, 1]) > 0)


def test_enclosed_body_gives_zero_and_penetration_gives_pixels():
    body = _item(sphere(radius=0.40), "body")
    garment = _item(sphere(radius=0.45, nu=40, nv=20), "garment", "cloth")
    for view in ("front", "side", "back", "three_quarter"):
        cam = named_camera(view, garment.positions, 4 / 3)
        res = poke_through(body, [garment], cam, (160, 120))
        assert res.covered > 0.3 * 160 * 120
        assert res.count == 0
    poking = _item(sphere(center=(0, 0, 0.12), radius=0.40), "body")  # front pokes 7 cm out
    front = poke_through(poking, [garment], named_camera("front", garment.positions, 4 / 3), (160, 120))
    back = poke_through(poking, [garment], named_camera("back", garment.positions, 4 / 3), (160, 120))
    assert front.count > 0.1 * front.covered
    assert back.count == 0


def test_open_hem_is_not_poke_through():
    """Skin seen through the opening of a tube (a skirt hem, from below) is not covered, so not counted."""
    legs = _item(tube(radius=0.2, y0=-0.9, y1=0.9, nv=12), "body")
    skirt = _item(tube(radius=0.3), "garment", "cloth")
    below = Camera(eye=(0.0, -1.6, 0.9), target=(0.0, 0.0, 0.0), fov_y=45.0)
    res = poke_through(legs, [skirt], below, (160, 120))
    gi_depth, gi_front = raycast(below, 160, 120, skirt.positions, skirt.faces)
    assert (np.isfinite(gi_depth) & ~gi_front).sum() > 200  # the inside of the skirt is in view...
    assert res.count == 0  # ...and skin seen through the hem does not count
    bulging = _item(tube(radius=0.2, y0=-0.9, y1=0.9, nv=12, bulge=0.15), "body")
    assert poke_through(bulging, [skirt], below, (160, 120)).count > 0


@pytest.mark.parametrize("center", [(0.0, 0.0, 0.12), (0.09, 0.05, 0.0)])
def test_matches_cpu_raycast(center):
    body = _item(sphere(center=center, radius=0.40), "body")
    garment = _item(sphere(radius=0.45, nu=40, nv=20), "garment", "cloth")
    w, h = 96, 72
    cam = named_camera("three_quarter", garment.positions, w / h)
    res = poke_through(body, [garment], cam, (w, h))
    gd, gf = raycast(cam, w, h, garment.positions, garment.faces)
    bd, _ = raycast(cam, w, h, body.positions, body.faces)
    ref_cov = gf
    ref_poke = ref_cov & np.isfinite(bd) & (bd < gd - 1e-4)
    assert ref_poke.sum() > 50
    # pixel centres exactly on an edge may go either way; allow a thin boundary disagreement
    assert (res.covered_mask != ref_cov).sum() <= 0.01 * ref_cov.sum() + 3
    assert (res.mask != ref_poke).sum() <= 0.03 * ref_poke.sum() + 3


def test_count_scales_with_resolution_and_report():
    body = _item(sphere(center=(0, 0, 0.12), radius=0.40), "body")
    garment = _item(sphere(radius=0.45, nu=40, nv=20), "garment", "cloth")
    recs = poke_through_report(body, {"shell": garment}, views=("front", "knees"), sizes=("720p", "2160p"),
                               frame_points=garment.positions)
    assert [(r["view"], r["resolution"]) for r in recs] == [
        ("front", "720p"), ("knees", "720p"), ("front", "2160p"), ("knees", "2160p")]
    by = {(r["view"], r["resolution"]): r for r in recs}
    small, big = by["front", "720p"], by["front", "2160p"]
    assert small["width"] == 1280 and big["height"] == 2160
    assert small["poke_through_pixels"] > 0
    ratio = big["poke_through_pixels"] / small["poke_through_pixels"]
    assert 8.5 < ratio < 9.5  # same area in 9x as many pixels


def test_poke_mask_tolerance_and_validation():
    gi = np.array([[1, 1, -1, 0]])
    gd = np.array([[1.0, 1.0, 1.0, np.inf]])
    bi = np.array([[1, 1, 1, 1]])
    bd = np.array([[0.99995, 0.98, 0.5, 0.5]])
    cov, poke = poke_mask(gi, gd, bi, bd, tolerance_m=1e-4)
    assert cov.tolist() == [[True, True, False, False]]
    assert poke.tolist() == [[False, True, False, False]]
    _, poke0 = poke_mask(gi, gd, bi, bd, tolerance_m=0.0)
    assert poke0.tolist() == [[True, True, False, False]]
    with pytest.raises(KisekaeError, match="tolerance_m"):
        poke_mask(gi, gd, bi, bd, tolerance_m=-1)
    with pytest.raises(KisekaeError, match="shape"):
        poke_mask(gi, gd[:, :2], bi, bd)
    with pytest.raises(KisekaeError, match="garment"):
        poke_through(_item(sphere(), "body"), [], _front(sphere()[0]))


def test_mark_pixels():
    img = np.zeros((5, 5, 3), np.uint8)
    m = np.zeros((5, 5), bool)
    m[2, 2] = True
    out = mark_pixels(img, m)
    assert out[2, 2].tolist() == [255, 0, 255] and out.sum() == 255 * 2
    grown = mark_pixels(img, m, grow=1, color=(1, 2, 3))
    assert (grown.sum(axis=2) > 0).sum() == 5
    assert img.sum() == 0
    with pytest.raises(KisekaeError):
        mark_pixels(img, m[:4])


@pytest.mark.parametrize("tol", [0.0, 1e-4, 0.02])
def test_gpu_masks_equal_numpy_reference(tol):
    """Renderer.poke_masks (GPU comparison) == poke_mask over the two id/depth passes (NumPy)."""
    from kisekae.render import Camera, DrawItem, Renderer

    from conftest import icosphere

    body = DrawItem(*icosphere(3, 0.5), role="body")
    bump = DrawItem(*icosphere(2, 0.15, center=(0.1, 0.1, 0.42)), role="body")
    shell = DrawItem(*icosphere(3, 0.52), role="garment")
    cam = Camera(eye=(0.4, 0.2, 2.5), target=(0, 0, 0), fov_y=30)
    r = Renderer(samples=0)
    cov, poke = r.poke_masks([body, bump], [shell], cam, (160, 120), tolerance_m=tol)
    gi, gd = r.id_depth([shell], cam, (160, 120))
    bi, bd = r.id_depth([body, bump], cam, (160, 120))
    flipped = [DrawItem(b.positions, b.faces[:, ::-1]) for b in (body, bump)]  # back faces become front faces
    fi, fd = r.id_depth(flipped, cam, (160, 120))
    back = np.where(fi > 0, fd, np.inf)  # nearest back face of the body = nearest front face of the flipped mesh
    cov_ref, poke_ref = poke_mask(gi, gd, bi, bd, body_back_depth=back, tolerance_m=tol)
    assert poke_ref.sum() > 50 and cov_ref.sum() > 1000
    assert np.array_equal(cov, cov_ref) and np.array_equal(poke, poke_ref)


def test_body_part_outside_the_garment_in_front_of_it_is_not_poke_through():
    """An 'arm' (a ball outside the shell, between it and the camera) hides the shell but does not poke."""
    from test_render_shapes import pixel_rays

    body = _item(sphere(radius=0.40), "body")
    arm = _item(sphere(center=(0.0, 0.0, 0.75), radius=0.12), "body")
    shell = _item(sphere(radius=0.45, nu=40, nv=20), "garment", "cloth")
    cam = Camera(eye=(0.0, 0.0, 2.5), target=(0.0, 0.0, 0.0), fov_y=30)
    res = poke_through([body, arm], [shell], cam, (112, 84))
    gd, _ = raycast(cam, 112, 84, shell.positions, shell.faces)
    bd, _ = raycast(cam, 112, 84, np.r_[body.positions, arm.positions], np.r_[body.faces, arm.faces + len(body.positions)])
    hidden = np.isfinite(bd) & (bd < gd - 1e-3)
    assert hidden.sum() > 150  # the arm covers the shell in many pixels...
    assert res.count == 0  # ...without poking through it
    # an arm that crosses the shell does poke through: its far side (exit) lies beyond the cloth
    crossing = _item(sphere(center=(0.0, 0.0, 0.5), radius=0.12), "body")
    res2 = poke_through([body, crossing], [shell], cam, (112, 84))
    o, d = pixel_rays(cam, 112, 84)
    assert res2.count > 40
    # analytic reference: pixels whose ray meets the crossing ball first, enters before the shell, exits after
    oc = o - np.array([0.0, 0.0, 0.5])
    a = np.einsum("hwk,hwk->hw", d, d)
    b = np.einsum("hwk,k->hw", d, oc)
    disc = b * b - a * (oc @ oc - 0.12 ** 2)
    root = np.sqrt(np.maximum(disc, 0))
    t_in, t_out = (-b - root) / a, (-b + root) / a  # linear view depth (d is not normalised)
    ref = (disc > 0) & (t_in < gd - 1e-3) & (t_out > gd + 1e-3)
    assert abs(int(res2.mask.sum()) - int(ref.sum())) <= 0.1 * ref.sum() + 20


def test_screen_box_holds_the_projected_points():
    from kisekae.render.renderer import _screen_box

    rng = np.random.default_rng(3)
    pts = rng.normal(size=(200, 3)) * 0.1 + [0.3, 0.2, 0.0]
    cam = Camera(eye=(0.0, 0.0, 3.0), target=(0.0, 0.0, 0.0), fov_y=30)
    x, y, w, h = _screen_box(pts, cam, (320, 240))
    hp = np.c_[pts, np.ones(len(pts))] @ cam.view_projection(320 / 240).T
    px = (hp[:, :2] / hp[:, 3:] * 0.5 + 0.5) * [320, 240]
    assert np.all((px[:, 0] >= x) & (px[:, 0] <= x + w) & (px[:, 1] >= y) & (px[:, 1] <= y + h))
    assert w < 200 and h < 200  # a real restriction, not the whole frame
    assert _screen_box(np.array([[0.0, 0.0, 3.5]]), cam, (320, 240)) is None  # behind the camera


def _cull_far_half(pf):
    """The sphere ``pf`` without the triangles facing away from +Z (what culling under a cloth would leave out)."""
    p, f = pf
    n = np.cross(p[f[:, 1]] - p[f[:, 0]], p[f[:, 2]] - p[f[:, 0]])
    return p, f[n[:, 2] > 0]


def test_culled_skin_keeps_the_whole_body_for_the_inside_test():
    """A knee in front of a skirt, drawn with its far half culled, is still outside the cloth: with the whole body as
    ``solid`` it is not counted (without it the missing back faces read as 'inside'); a body that pokes through
    the cloth is counted either way."""
    garment = _item(sphere(radius=0.45, nu=40, nv=20), "garment", "cloth")
    cam = _front(garment.positions)
    knee = sphere(center=(0.0, 0.0, 0.75), radius=0.15)
    culled = _item(_cull_far_half(knee), "body")
    assert poke_through(_item(knee, "body"), [garment], cam).count == 0
    assert poke_through(culled, [garment], cam).count > 0  # the artefact the solid body removes
    assert poke_through(culled, [garment], cam, solid=_item(knee, "body")).count == 0
    poking = sphere(center=(0.0, 0.0, 0.12), radius=0.40)
    whole = poke_through(_item(poking, "body"), [garment], cam).count
    assert whole > 0
    assert poke_through(_item(_cull_far_half(poking), "body"), [garment], cam, solid=_item(poking, "body")).count \
        == whole


def _nearest(cam, w, h, surfaces):
    """CPU reference of the id buffer: per pixel the nearest of ``surfaces`` [(positions, faces, id)], negated on
    back faces, 0 on a miss."""
    best, ids = np.full((h, w), np.inf), np.zeros((h, w), dtype=np.int64)
    for p, f, k in surfaces:
        if len(f) == 0:
            continue
        d, front = raycast(cam, w, h, p, f)
        near = d < best
        best[near] = d[near]
        ids[near] = np.where(front, k, -k)[near]
    return ids


def test_culled_skin_seen_through_a_hem_counts_as_holes():
    """Legs in a skirt, seen from below: culling the legs' skin inside the skirt leaves holes where the view looks
    up the hem (an independent CPU ray cast of the same rule agrees); culling nothing leaves none."""
    from kisekae.render.poke import culled_skin_seen

    lp, lf = tube(radius=0.2, y0=-0.9, y1=0.9, nv=12)
    legs = _item((lp, lf), "body")
    skirt = _item(tube(radius=0.3), "garment", "cloth")
    cut = lp[lf].mean(axis=1)[:, 1] > -0.3  # the skin well inside the skirt
    w, h = 200, 150
    below = Camera(eye=(0.0, -1.6, 0.6), target=(0.0, 0.0, 0.0), fov_y=45.0)
    res = culled_skin_seen(legs, cut, [skirt], below, (w, h))
    first = _nearest(below, w, h, [(lp, lf[~cut], 1), (lp, lf[cut], 2), (skirt.positions, skirt.faces, 3)])
    after = _nearest(below, w, h, [(lp, lf[~cut], 1), (skirt.positions, skirt.faces, 3)])
    want = (first == 2) & (np.abs(after) != 3)
    assert want.sum() > 30 and res.count > 30
    assert (res.mask != want).sum() <= 0.05 * want.sum() + 3
    assert culled_skin_seen(legs, np.zeros(len(lf), bool), [skirt], below, (w, h)).count == 0
    assert culled_skin_seen(legs, np.ones(len(lf), bool), [skirt], below, (w, h)).count >= res.count


def test_culled_skin_poking_through_the_front_is_not_a_hole():
    """Skin that pokes through a shell and is culled shows the shell behind it: seen, but no hole."""
    from kisekae.render.poke import culled_skin_seen, culled_skin_seen_report

    bp, bf = sphere(center=(0, 0, 0.12), radius=0.40)
    body = _item((bp, bf), "body")
    shell = _item(sphere(radius=0.45, nu=40, nv=20), "garment", "cloth")
    cam = named_camera("front", shell.positions, 4 / 3)
    everything = np.ones(len(bf), bool)
    res = culled_skin_seen(body, everything, [shell], cam, (160, 120))
    assert res.covered > 100 and res.count == 0
    open_front = culled_skin_seen(body, everything, [_item(sphere(center=(0, 0, -2.0), radius=0.1), "garment",
                                                          "cloth")], cam, (160, 120))
    assert open_front.count == open_front.covered > 1000  # nothing over the skin: every culled pixel is a hole
    recs = culled_skin_seen_report(body, {"shell": everything}, {"shell": shell}, views=("front", "back"),
                                   sizes=((80, 60),), frame_points=shell.positions)
    assert [r["culled_skin_seen_pixels"] for r in recs] == [0, 0]
    with pytest.raises(KisekaeError, match="culled"):
        culled_skin_seen(body, everything[:-1], [shell], cam, (80, 60))
    with pytest.raises(KisekaeError, match="culled"):
        culled_skin_seen_report(body, {}, {"shell": shell}, views=("front",), sizes=((80, 60),))


def test_near_plane_points_project_to_their_pixels_and_a_camera_under_the_cloth_sees_no_holes():
    from kisekae.render.poke import culled_skin_seen, near_plane_points

    cam = Camera(eye=(0.3, 0.2, 1.5), target=(0.0, 0.1, 0.0), fov_y=40.0, near=0.07)
    w, h = 64, 48
    rows, cols = np.array([0, 10, 47, 23]), np.array([0, 50, 63, 31])
    p = near_plane_points(cam, (w, h), rows, cols)
    clip = np.c_[p, np.ones(len(p))] @ cam.view_projection(w / h).T
    ndc = clip[:, :3] / clip[:, 3:]
    np.testing.assert_allclose(ndc[:, 2], -1.0, atol=1e-9)  # on the near plane
    np.testing.assert_allclose((ndc[:, 0] + 1) / 2 * w - 0.5, cols, atol=1e-9)
    np.testing.assert_allclose((1 - ndc[:, 1]) / 2 * h - 0.5, rows, atol=1e-9)
    # legs in a skirt, the camera between them and the cloth: it sees the culled skin from under the cloth
    lp, lf = tube(radius=0.2, y0=-0.9, y1=0.9, nv=12)
    legs = _item((lp, lf), "body")
    skirt = _item(tube(radius=0.3, nu=64, nv=16), "garment", "cloth")
    under = Camera(eye=(0.0, -0.2, 0.27), target=(0.0, 0.1, 0.2), fov_y=60.0, near=0.01)
    every = np.ones(len(lf), bool)
    res = culled_skin_seen(legs, every, [skirt], under, (80, 60))
    assert res.covered > 100 and res.count == 0

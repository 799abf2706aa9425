"""Poke-through pixels: skin that shows through where a garment covers the body.

Definition (per view and resolution, sampled at pixel centres, no MSAA):

* A pixel is **covered** when the nearest garment surface along its ray is a *front* face of a
  garment (the outside of the cloth). Pixels where the ray first meets a garment's back face look
  into the garment through an opening (a hem, a neck hole, a sleeve end): the skin seen there is not
  covered, so it is never counted.
* A covered pixel **pokes through** when the nearest body surface on the same ray is closer to the
  camera than that garment surface by more than ``tolerance_m`` (linear view depth, metres), *and*
  the garment surface lies inside the body: the body's nearest back face on the ray (where the ray
  leaves the body) is beyond the garment surface. The second condition keeps body parts that are
  outside the garment but in front of it (an arm in front of a skirt, a raised knee in front of the
  other leg's tights) from counting: there the ray leaves the body before it reaches the cloth.

Garments are expected with outward (counter-clockwise seen from outside) triangles, like the body.
A garment that lies outside the body everywhere gives 0 from any view; body geometry that crosses a
garment's outer surface gives > 0 wherever that crossing is visible.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import KisekaeError
from ..validate import positive
from .camera import Camera, RESOLUTIONS, VIEWS, named_camera, resolution as _resolution
from .renderer import DrawItem, Renderer, as_item, default_renderer

#: Depth allowance (metres) below which the body is not said to be in front of the garment.
DEFAULT_TOLERANCE_M = 1e-4
#: Views and resolutions of the standard poke-through report.
REPORT_VIEWS = VIEWS
REPORT_SIZES = ("720p", "2160p")


@dataclass
class PokeResult:
    """Poke-through pixels of one view at one resolution.

    Attributes
    ----------
    count : int
        Pixels where the body shows through a covering garment.
    covered : int
        Pixels covered by a garment's outside.
    mask : (H,W) bool
        The poke-through pixels (row 0 at the top).
    covered_mask : (H,W) bool
    size : (int, int)
        ``(width, height)``.
    camera : Camera
    """

    count: int
    covered: int
    mask: np.ndarray
    covered_mask: np.ndarray
    size: tuple
    camera: Camera

    @property
    def fraction(self) -> float:
        """``count / covered`` (0 when nothing is covered)."""
        return float(self.count) / self.covered if self.covered else 0.0


def poke_mask(garment_ids, garment_depth, body_ids, body_depth, *, body_back_depth=None,
              tolerance_m: float = DEFAULT_TOLERANCE_M):
    """Combine separately rendered id/depth buffers into the covered and poke-through masks (NumPy reference).

    Parameters
    ----------
    garment_ids, body_ids : (H,W) int
        Nearest-surface ids (negative on back faces, 0 background), see :meth:`Renderer.id_depth`.
    garment_depth, body_depth : (H,W) float
        Linear view depth, metres (``inf`` on background).
    body_back_depth : (H,W) float, optional
        Depth of the body's nearest back face (``inf`` where there is none); default: ignore this
        condition (every body surface in front of the cloth counts).
    tolerance_m : float
        Depth allowance, metres.

    Returns
    -------
    covered, poke : (H,W) bool
    """
    tol = positive(tolerance_m, "tolerance_m", allow_zero=True)
    gi, gd, bi, bd = (np.asarray(a) for a in (garment_ids, garment_depth, body_ids, body_depth))
    if not (gi.shape == gd.shape == bi.shape == bd.shape) or gi.ndim != 2:
        raise KisekaeError(f"buffers must share one (H,W) shape, got {gi.shape}, {gd.shape}, {bi.shape}, {bd.shape}",
                           "poke_mask")
    covered = gi > 0
    poke = covered & (bi != 0) & (bd < gd - tol)
    if body_back_depth is not None:
        back = np.asarray(body_back_depth)
        if back.shape != gd.shape:
            raise KisekaeError(f"body_back_depth must have shape {gd.shape}, got {back.shape}", "poke_mask")
        poke &= back > gd
    return covered, poke


def _split(body, garments):
    body_items = [body] if isinstance(body, DrawItem) else [as_item(b) for b in body]
    garment_items = [as_item(g) for g in garments]
    if not body_items:
        raise KisekaeError("no body mesh given", "body")
    if not garment_items:
        raise KisekaeError("no garment mesh given", "garments")
    return body_items, garment_items


def poke_through(body, garments, camera: Camera, size="720p", *, tolerance_m: float = DEFAULT_TOLERANCE_M,
                 renderer: Renderer | None = None, solid=None, _body_pass=None) -> PokeResult:
    """Count the body pixels that show through covering garments in one view.

    Parameters
    ----------
    body : DrawItem or list of DrawItem
        The (posed) body; several items are treated as one body.
    garments : list of DrawItem
        The garments (outward triangles). Covered = union of their outsides.
    camera : Camera
    size : str or (int, int), default ``"720p"``
    tolerance_m : float, default :data:`DEFAULT_TOLERANCE_M`
        Depth allowance in metres.
    renderer : Renderer, optional
    solid : DrawItem or list of DrawItem, optional
        The whole body for the inside test, when ``body`` leaves culled skin out (default: ``body``): culling
        changes which skin is drawn, not which cloth is inside the body.

    Returns
    -------
    PokeResult
    """
    r = renderer or default_renderer()
    body_items, garment_items = _split(body, garments)
    tol = positive(tolerance_m, "tolerance_m", allow_zero=True)
    w, h = _resolution(size)
    solid_items = None if solid is None else _split(solid, garments)[0]
    covered, poke = r.poke_masks(body_items, garment_items, camera, (w, h), tolerance_m=tol,
                                 reuse_body=bool(_body_pass), solid=solid_items)
    return PokeResult(count=int(poke.sum()), covered=int(covered.sum()), mask=poke, covered_mask=covered,
                      size=(w, h), camera=camera)


def near_plane_points(camera: Camera, size, rows, cols) -> np.ndarray:
    """World points (P, 3) where the rays through pixel centres ``(rows, cols)`` (row 0 at the top) cross the near
    plane, metres."""
    w, h = _resolution(size)
    right, up, forward = camera.basis()
    t = np.tan(np.radians(camera.fov_y) / 2.0)
    x = (2.0 * (np.asarray(cols) + 0.5) / w - 1.0) * t * w / h
    y = (1.0 - 2.0 * (np.asarray(rows) + 0.5) / h) * t
    d = forward[None] + x[:, None] * right[None] + y[:, None] * up[None]  # linear view depth 1 along d
    return np.asarray(camera.eye, dtype=np.float64)[None] + float(camera.near) * d


class _Solid:
    """Generalized winding numbers against a draw item's triangles (:mod:`kisekae.geom.winding`), its tree built on
    the first question and kept: a report asks of the same posed body in every view (0.3 s a tree for the body)."""

    def __init__(self, item):
        self.item, self._tree = item, None

    def winding(self, points) -> np.ndarray:
        from ..geom.bvh import build_bvh, refit
        from ..geom.winding import winding_number

        f = np.asarray(self.item.faces, dtype=np.int64)
        if not len(f):
            return np.zeros(len(points))
        if self._tree is None:
            v = np.asarray(self.item.positions, dtype=np.float64)
            bvh = build_bvh(v, f)
            self._tree = (bvh, refit(bvh, v, f))
        return winding_number(points, *self._tree)


def culled_skin_seen(body, culled, garments, camera: Camera, size="720p", *,
                     renderer: Renderer | None = None, _solids=None) -> PokeResult:
    """Count the pixels where skin that culling leaves out would have been seen: holes that culling makes.

    Culling the skin under a garment hides what pokes through it, but skin that a view sees *past* the garment
    (inside a hem or a neck hole, from below) must be drawn. A pixel counts when the nearest surface of the whole
    scene is the front of a culled body triangle and, with the culled triangles left out, the nearest surface is not
    the front of a garment: the viewer then sees through the body (another limb, the inside of the cloth, the
    background) where skin belongs. Where the garment's front lies behind the culled skin, that skin was poking
    through it, and culling shows the cloth as it should. Nor does it count where the garment's inside (a back face)
    is what shows: a view that looks into the cloth sees fabric, as a double-sided garment is drawn. A hole is where
    the body's own inside, another body part or the background shows instead of skin. Pixels whose ray starts (on
    the near plane) inside the garment or the body (generalized winding number over 0.5) are left out: a close-up
    camera that a raised leg reaches sits under the cloth, and sees the skin from where no culling can hold.

    Parameters
    ----------
    body : DrawItem
        The whole posed body.
    culled : (F,) bool
        The body triangles an engine leaves out (:func:`kisekae.render.scene.covered_body_faces`).
    garments : list of DrawItem
        The garments worn.
    camera : Camera
    size : str or (int, int), default ``"720p"``
    renderer : Renderer, optional

    Returns
    -------
    PokeResult
        ``count``: the holes; ``covered``: the pixels where culled skin is the nearest surface.
    """
    from dataclasses import replace

    r = renderer or default_renderer()
    body_items, garment_items = _split(body, garments)
    if len(body_items) != 1:
        raise KisekaeError("expected one body item (its triangles are what `culled` marks)", "body")
    whole = body_items[0]
    cut = np.asarray(culled, dtype=bool)
    if cut.shape != (len(whole.faces),):
        raise KisekaeError(f"expected one flag per body triangle ({len(whole.faces)}), got shape {cut.shape}", "culled")
    w, h = _resolution(size)
    if not cut.any():
        none = np.zeros((h, w), dtype=bool)
        return PokeResult(count=0, covered=0, mask=none, covered_mask=none, size=(w, h), camera=camera)
    kept = [(replace(whole, faces=whole.faces[~cut]), 1)] if not cut.all() else []
    cloth = [(g, 3 + k) for k, g in enumerate(garment_items)]
    first = kept + [(replace(whole, faces=whole.faces[cut]), 2)] + cloth
    ids, _ = r.id_depth([i for i, _ in first], camera, (w, h), item_ids=[k for _, k in first])
    shown = ids == 2
    if not shown.any():
        return PokeResult(count=0, covered=0, mask=shown, covered_mask=shown, size=(w, h), camera=camera)
    after, _ = r.id_depth([i for i, _ in kept + cloth], camera, (w, h), item_ids=[k for _, k in kept + cloth])
    holes = shown & (after < 3) & (after > -3)
    if holes.any():
        rows, cols = np.nonzero(holes)
        start = near_plane_points(camera, (w, h), rows, cols)
        inside = np.zeros(len(rows), dtype=bool)
        # the body's and the garments' trees, kept by a report across its views (_solids)
        for solid in _solids or [_Solid(whole), *map(_Solid, garment_items)]:
            inside |= solid.winding(start) > 0.5
        holes[rows[inside], cols[inside]] = False
    return PokeResult(count=int(holes.sum()), covered=int(shown.sum()), mask=holes, covered_mask=shown, size=(w, h),
                      camera=camera)


def culled_skin_seen_report(body, culled: dict, garments: dict, *, views=REPORT_VIEWS, sizes=REPORT_SIZES,
                            frame_points=None, landmarks=None, renderer: Renderer | None = None,
                            progress=None) -> list[dict]:
    """:func:`culled_skin_seen` per garment, view and resolution, framed as :func:`poke_through_report` frames them.

    Parameters
    ----------
    body : DrawItem
        The whole posed body.
    culled : dict[str, (F,) bool]
        Per garment, the body triangles culled under it alone.
    garments : dict[str, DrawItem]
        Named garments; each is drawn alone with the skin its own mask culls.
    views, sizes, frame_points, landmarks, renderer, progress
        As :func:`poke_through_report`.

    Returns
    -------
    list of dict
        ``{"garment", "view", "resolution", "width", "height", "culled_skin_seen_pixels"}``.
    """
    r = renderer or default_renderer()
    missing = [g for g in garments if g not in culled] if isinstance(garments, dict) else []
    if missing:
        raise KisekaeError(f"no culled triangles given for {', '.join(missing)}", "culled")
    records, solids = [], {}
    for body_items, rec, cam, _k, (gname, g) in _report_cells(body, garments, views, sizes, frame_points, landmarks):
        if not solids:
            solids[None] = _Solid(body_items[0])
        if gname not in solids:
            solids[gname] = _Solid(g)
        res = culled_skin_seen(body_items, culled[gname], [g], cam, (rec["width"], rec["height"]), renderer=r,
                               _solids=[solids[None], solids[gname]])
        records.append({**rec, "culled_skin_seen_pixels": res.count})
        if progress is not None:
            progress()
    return records


def _report_cells(body, garments, views, sizes, frame_points, landmarks):
    """The (body items, record head, camera, garment index, (name, item)) of every size, view and named garment of a
    report, the cameras framing ``frame_points`` (default: the body's vertices)."""
    if not isinstance(garments, dict) or not garments:
        raise KisekaeError("expected a non-empty dict of named garments", "garments")
    body_items, _ = _split(body, list(garments.values()))
    pts = frame_points if frame_points is not None else np.concatenate([b.positions for b in body_items])
    for size in sizes:
        w, h = _resolution(size)
        label = size if isinstance(size, str) else f"{w}x{h}"
        for view in views:
            cam = named_camera(view, pts, w / h, landmarks=landmarks)
            for k, (gname, g) in enumerate(garments.items()):
                yield body_items, {"garment": gname, "view": view, "resolution": label, "width": w, "height": h}, \
                    cam, k, (gname, g)


def poke_through_report(body, garments: dict, *, views=REPORT_VIEWS, sizes=REPORT_SIZES, frame_points=None,
                        landmarks=None, tolerance_m: float = DEFAULT_TOLERANCE_M, renderer: Renderer | None = None,
                        keep_masks: bool = False, progress=None, solid=None) -> list[dict]:
    """Poke-through pixels per garment, view and resolution.

    Parameters
    ----------
    body : DrawItem or list of DrawItem
        The posed body.
    garments : dict[str, DrawItem]
        Named garments; each is checked alone against the body.
    views : sequence of str, default all :data:`~kisekae.render.camera.VIEWS` (9)
    sizes : sequence of str or (int, int), default ``("720p", "2160p")``
    frame_points : (N,3) float, optional
        Points the cameras frame (default: the body's vertices).
    landmarks : dict, optional
        Close-up centres, see :func:`~kisekae.render.camera.named_camera`.
    tolerance_m : float
    keep_masks : bool
        Put each :class:`PokeResult` under the key ``"result"`` of its record.
    progress : callable, optional
        Called with no argument after each (view, size, garment).
    solid : DrawItem or list of DrawItem, optional
        The whole body for the inside test when ``body`` is drawn with skin left out (:func:`poke_through`).

    Returns
    -------
    list of dict
        ``{"garment", "view", "resolution", "width", "height", "covered_pixels", "poke_through_pixels"}``.
    """
    r = renderer or default_renderer()
    records = []
    for body_items, rec, cam, k, (_gname, g) in _report_cells(body, garments, views, sizes, frame_points, landmarks):
        res = poke_through(body_items, [g], cam, (rec["width"], rec["height"]), tolerance_m=tolerance_m, renderer=r,
                           solid=solid, _body_pass=k > 0)  # the body pass of the first garment is reused
        rec.update(covered_pixels=res.covered, poke_through_pixels=res.count)
        if keep_masks:
            rec["result"] = res
        records.append(rec)
        if progress is not None:
            progress()
    return records


def mark_pixels(rgb, mask, *, color=(255, 0, 255), grow: int = 0) -> np.ndarray:
    """Paint masked pixels of an image.

    Parameters
    ----------
    rgb : (H,W,3) uint8
    mask : (H,W) bool
    color : (3,) int, default magenta
    grow : int, default 0
        Dilate the mask by this many pixels first (to keep single pixels visible in thumbnails).

    Returns
    -------
    (H,W,3) uint8
        A marked copy.
    """
    img = np.array(rgb, dtype=np.uint8, copy=True)
    m = np.asarray(mask, dtype=bool)
    if img.ndim != 3 or img.shape[2] != 3 or m.shape != img.shape[:2]:
        raise KisekaeError(f"need rgb (H,W,3) and mask (H,W), got {img.shape} and {m.shape}", "mark_pixels")
    for _ in range(max(0, int(grow))):
        g = m.copy()
        g[1:] |= m[:-1]
        g[:-1] |= m[1:]
        g[:, 1:] |= m[:, :-1]
        g[:, :-1] |= m[:, 1:]
        m = g
    img[m] = np.asarray(color, dtype=np.uint8)
    return img

"""Comparison sheets (labelled image grids) and animated GIFs, with Pillow."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import KisekaeError


def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1
        return ImageFont.load_default()


def _as_image(a, name):
    from PIL import Image

    if isinstance(a, Image.Image):
        return a.convert("RGB")
    arr = np.asarray(a)
    if arr.ndim != 3 or arr.shape[2] != 3 or arr.dtype != np.uint8:
        raise KisekaeError(f"expected an (H,W,3) uint8 image, got {arr.shape} {arr.dtype}", name)
    return Image.fromarray(arr)


def comparison_sheet(cells, *, row_labels=None, col_labels=None, title: str = "", cell_width: int | None = None,
                     pad: int = 6, label_width: int = 140, background=(255, 255, 255)):
    """Lay out images in a labelled grid.

    Parameters
    ----------
    cells : list of list of (H,W,3) uint8 arrays or PIL images (``None`` leaves a cell empty)
        Rows of images; each is scaled to ``cell_width`` keeping its aspect ratio.
    row_labels, col_labels : list of str, optional
    title : str
    cell_width : int, optional
        Width of every cell in pixels (default: the first image's width).
    pad : int
        Space between cells, pixels.
    label_width : int
        Width of the row-label column, pixels (used when ``row_labels`` is given).

    Returns
    -------
    PIL.Image.Image
    """
    from PIL import Image, ImageDraw

    rows = [list(r) for r in cells]
    if not rows or not any(c is not None for r in rows for c in r):
        raise KisekaeError("no images to lay out", "cells")
    ncol = max(len(r) for r in rows)
    if row_labels is not None and len(row_labels) != len(rows):
        raise KisekaeError(f"{len(row_labels)} labels for {len(rows)} rows", "row_labels")
    if col_labels is not None and len(col_labels) != ncol:
        raise KisekaeError(f"{len(col_labels)} labels for {ncol} columns", "col_labels")
    imgs = [[None if c is None else _as_image(c, f"cells[{i}][{j}]") for j, c in enumerate(r)]
            for i, r in enumerate(rows)]
    first = next(c for r in imgs for c in r if c is not None)
    cw = int(cell_width or first.width)
    scaled = [[None if c is None else c.resize((cw, max(1, round(c.height * cw / c.width))), Image.LANCZOS)
               for c in r] for r in imgs]
    row_h = [max([c.height for c in r if c is not None] or [1]) for r in scaled]
    font, tfont = _font(18), _font(24)
    lw = label_width if row_labels is not None else 0
    top = (36 if title else 0) + (26 if col_labels is not None else 0)
    width = lw + ncol * (cw + pad) + pad
    height = top + sum(h + pad for h in row_h) + pad
    sheet = Image.new("RGB", (width, height), tuple(background))
    draw = ImageDraw.Draw(sheet)
    if title:
        draw.text((pad, 6), title, fill=(0, 0, 0), font=tfont)
    if col_labels is not None:
        for j, lab in enumerate(col_labels):
            draw.text((lw + pad + j * (cw + pad), top - 24), str(lab), fill=(40, 40, 40), font=font)
    y = top + pad
    for i, r in enumerate(scaled):
        if row_labels is not None:
            draw.text((pad, y + row_h[i] // 2 - 10), str(row_labels[i]), fill=(40, 40, 40), font=font)
        for j, c in enumerate(r):
            if c is not None:
                sheet.paste(c, (lw + pad + j * (cw + pad), y))
        y += row_h[i] + pad
    return sheet


def label(image, text: str, *, color=(0, 0, 0)):
    """A copy of an image with ``text`` in its top-left corner (PIL image)."""
    from PIL import ImageDraw

    img = _as_image(image, "image").copy()
    ImageDraw.Draw(img).text((8, 6), text, fill=tuple(color), font=_font(max(12, img.height // 28)))
    return img


def save_gif(frames, path, *, fps: float = 12.0, loop: int = 0) -> Path:
    """Write frames as an animated GIF.

    Parameters
    ----------
    frames : sequence of (H,W,3) uint8 arrays or PIL images, all the same size
    path : str or Path
    fps : float, default 12
        Frames per second (GIF stores whole centiseconds per frame).
    loop : int, default 0
        0 loops forever.

    Returns
    -------
    Path
    """
    imgs = [_as_image(f, f"frames[{i}]") for i, f in enumerate(frames)]
    if not imgs:
        raise KisekaeError("no frames", "frames")
    if any(im.size != imgs[0].size for im in imgs):
        raise KisekaeError("all frames must have the same size", "frames")
    if not (0 < float(fps) <= 100):
        raise KisekaeError(f"must be in (0, 100], got {fps!r}", "fps")
    path = Path(path)
    duration = max(20, int(round(1000.0 / float(fps) / 10.0)) * 10)
    # one shared palette, built from (a sample of) all frames, keeps colours stable (no flicker)
    from PIL import Image

    step = max(1, len(imgs) // 8)
    sample = imgs[::step]
    w, h = imgs[0].size
    montage = Image.new("RGB", (w, h * len(sample)))
    for k, im in enumerate(sample):
        montage.paste(im, (0, k * h))
    pal = montage.quantize(colors=255, method=2)
    q = [im.quantize(palette=pal, dither=0) for im in imgs]
    q[0].save(path, save_all=True, append_images=q[1:], duration=duration, loop=int(loop), optimize=False)
    return path

"""Comparison sheets (labelled image grids) and animated GIFs, with Pillow."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import KisekaeError


def _font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=size)  # a scalable font (Pillow >= 10.1)


def _as_image(a, name):
    from PIL import Image

    if isinstance(a, Image.Image):
        return a.convert("RGB")
    arr = np.asarray(a)
    if arr.ndim != 3 or arr.shape[2] != 3 or arr.dtype != np.uint8:
        raise KisekaeError(f"expected an (H,W,3) uint8 image, got {arr.shape} {arr.dtype}", name)
    return Image.fromarray(arr)


def _wrap(draw, text: str, font, width: float) -> list:
    """Break ``text`` into lines no wider than ``width`` pixels (at spaces; inside a word only when
    the word alone is wider)."""
    lines = []
    for para in str(text).split("\n"):
        line = ""
        for word in para.split(" "):
            trial = f"{line} {word}" if line else word
            if draw.textlength(trial, font=font) <= width:
                line = trial
                continue
            if line:
                lines.append(line)
            while draw.textlength(word, font=font) > width and len(word) > 1:
                k = len(word) - 1
                while k > 1 and draw.textlength(word[:k], font=font) > width:
                    k -= 1
                lines.append(word[:k])
                word = word[k:]
            line = word
        lines.append(line)
    return lines


def comparison_sheet(cells, *, row_labels=None, col_labels=None, captions=None, title: str = "",
                     cell_width: int | None = None, pad: int = 6, label_width: int | None = None,
                     font_size: int = 18, background=(255, 255, 255)):
    """Lay out images in a labelled grid.

    Parameters
    ----------
    cells : list of list of (H,W,3) uint8 arrays or PIL images (``None`` leaves a cell empty)
        Rows of images; each is scaled to ``cell_width`` keeping its aspect ratio.
    row_labels, col_labels : list of str, optional
        Column labels are wrapped to the cell width.
    captions : list of list of str, optional
        A caption per cell (``None`` or ``""`` for none), same shape as ``cells``, written in a strip
        under the cell (not over the picture), wrapped to the cell width.
    title : str
    cell_width : int, optional
        Width of every cell in pixels (default: the first image's width).
    pad : int
        Space between cells, pixels.
    label_width : int, optional
        Width of the row-label column, pixels (used when ``row_labels`` is given; default: the widest
        label). Longer labels are wrapped.
    font_size : int
        Font size of labels and captions, pixels (the title is a third larger). Pick it for the width
        the sheet is shown at: shown ``s`` times its size, the text is ``s * font_size`` pixels.

    Returns
    -------
    PIL.Image.Image
        The sheet, ``(lw + ncol * (cell_width + pad) + pad)`` pixels wide, where ``lw`` is the label
        width (0 without row labels).
    """
    from PIL import Image, ImageDraw

    rows = _check_grid(cells, row_labels, col_labels, captions, font_size)
    ncol = max(len(r) for r in rows)
    scaled, cw = _scaled_images(rows, cell_width)
    font, tfont = _font(int(font_size)), _font(round(font_size * 4 / 3))
    lw, row_text, col_text, cap_text = _texts(font, row_labels, col_labels, captions, label_width, pad, cw)
    line_h = int(font_size) + 8
    row_h, cap_h = _row_heights(scaled, row_text, cap_text, line_h)
    title_h = 2 * int(font_size) if title else 0
    top = title_h + (max(len(t) for t in col_text) * line_h if col_text else 0)
    sheet = Image.new("RGB", (lw + ncol * (cw + pad) + pad, top + sum(h + c + pad for h, c in zip(row_h, cap_h)) + pad),
                      tuple(background))
    draw = ImageDraw.Draw(sheet)
    if title:
        draw.text((pad, 6), title, fill=(0, 0, 0), font=tfont)
    for j, lines in enumerate(col_text or []):
        for k, line in enumerate(lines):
            draw.text((lw + pad + j * (cw + pad), title_h + k * line_h + 2), line, fill=(40, 40, 40), font=font)
    y = top + pad
    for i, r in enumerate(scaled):
        _draw_row(sheet, draw, font, r, y, row_h[i], line_h, lw, pad, cw, row_text[i] if row_text else None,
                  cap_text[i] if cap_text else None)
        y += row_h[i] + cap_h[i] + pad
    return sheet


def _scaled_images(rows, cell_width):
    """``(rows of PIL images scaled to the cell width or None, cell width)``; the width defaults to the
    first image's."""
    from PIL import Image

    imgs = [[None if c is None else _as_image(c, f"cells[{i}][{j}]") for j, c in enumerate(r)]
            for i, r in enumerate(rows)]
    first = next(c for r in imgs for c in r if c is not None)
    cw = int(cell_width or first.width)
    return [[None if c is None else c.resize((cw, max(1, round(c.height * cw / c.width))), Image.LANCZOS)
             for c in r] for r in imgs], cw


def _row_heights(scaled, row_text, cap_text, line_h: int):
    """``(picture height per row, at least its label's lines; caption strip height per row)``, pixels."""
    cap_h = [max([len(t) for t in r] or [0]) * line_h for r in cap_text] if cap_text else [0] * len(scaled)
    row_h = [max([c.height for c in r if c is not None] or [1]) for r in scaled]
    row_h = [max(h, len(t) * line_h) for h, t in zip(row_h, row_text)] if row_text else row_h
    return row_h, cap_h


def _texts(font, row_labels, col_labels, captions, label_width, pad: int, cw: int):
    """``(label column width, row label lines, column label lines, caption lines)``, each text wrapped to
    its width (the label column fits the widest label unless ``label_width`` is given)."""
    from PIL import Image, ImageDraw

    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    if row_labels is not None and label_width is None:
        label_width = int(np.ceil(max(measure.textlength(line, font=font) for t in row_labels
                                      for line in str(t).split("\n")))) + 2 * pad
    lw = int(label_width) if row_labels is not None else 0
    row_text = [_wrap(measure, t, font, lw - 2 * pad) for t in row_labels] if row_labels is not None else None
    col_text = [_wrap(measure, t, font, cw) for t in col_labels] if col_labels is not None else None
    cap_text = [[_wrap(measure, t, font, cw) if t else [] for t in r] for r in captions] if captions else None
    return lw, row_text, col_text, cap_text


def _check_grid(cells, row_labels, col_labels, captions, font_size) -> list:
    """The rows of ``cells`` as lists, after checking that labels and captions fit the grid."""
    rows = [list(r) for r in cells]
    if not rows or not any(c is not None for r in rows for c in r):
        raise KisekaeError("no images to lay out", "cells")
    ncol = max(len(r) for r in rows)
    if row_labels is not None and len(row_labels) != len(rows):
        raise KisekaeError(f"{len(row_labels)} labels for {len(rows)} rows", "row_labels")
    if col_labels is not None and len(col_labels) != ncol:
        raise KisekaeError(f"{len(col_labels)} labels for {ncol} columns", "col_labels")
    if captions is not None and (len(captions) != len(rows)
                                 or any(len(c) != len(r) for c, r in zip(captions, rows))):
        raise KisekaeError("must have the shape of cells (one caption per cell, None for none)", "captions")
    if isinstance(font_size, bool) or not isinstance(font_size, (int, np.integer)) or not 6 <= font_size <= 200:
        raise KisekaeError(f"must be an integer from 6 to 200 pixels, got {font_size!r}", "font_size")
    return rows


def _draw_row(sheet, draw, font, row, y, row_h, line_h, lw, pad, cw, label_lines, caption_lines) -> None:
    """One row at height ``y``: its label centred in the label column, its cells, their captions below."""
    if label_lines is not None:
        y0 = y + row_h // 2 - len(label_lines) * line_h // 2
        for k, line in enumerate(label_lines):
            draw.text((pad, y0 + k * line_h + 4), line, fill=(40, 40, 40), font=font)
    for j, c in enumerate(row):
        x = lw + pad + j * (cw + pad)
        if c is not None:
            sheet.paste(c, (x, y))
        if caption_lines is not None:
            for k, line in enumerate(caption_lines[j]):
                draw.text((x, y + row_h + k * line_h + 2), line, fill=(0, 0, 0), font=font)


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

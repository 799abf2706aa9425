"""Comparison sheets and GIFs."""

import numpy as np
import pytest
from PIL import Image

from kisekae.errors import KisekaeError
from kisekae.render.sheets import comparison_sheet, label, save_gif


def _solid(color, w=40, h=30):
    a = np.zeros((h, w, 3), np.uint8)
    a[:] = color
    return a


def test_sheet_layout_places_cells():
    cells = [[_solid((255, 0, 0)), _solid((0, 255, 0))], [_solid((0, 0, 255)), None]]
    s = comparison_sheet(cells, row_labels=["a", "b"], col_labels=["x", "y"], title="t", pad=4, label_width=50)
    a = np.asarray(s)
    top = 36 + 26 + 4
    assert a[top + 15, 50 + 4 + 20].tolist() == [255, 0, 0]
    assert a[top + 15, 50 + 4 + 44 + 20].tolist() == [0, 255, 0]
    assert a[top + 34 + 15, 50 + 4 + 20].tolist() == [0, 0, 255]
    assert a[top + 34 + 15, 50 + 4 + 44 + 20].tolist() == [255, 255, 255]  # empty cell
    assert s.size == (50 + 2 * 44 + 4, 36 + 26 + 2 * 34 + 4)


def test_sheet_scales_and_validates():
    s = comparison_sheet([[_solid((9, 9, 9), 80, 60)]], cell_width=40, pad=0)
    assert s.size == (40, 30)
    with pytest.raises(KisekaeError, match="row_labels"):
        comparison_sheet([[_solid(1)]], row_labels=["a", "b"])
    with pytest.raises(KisekaeError, match="cells"):
        comparison_sheet([[np.zeros((4, 4), np.uint8)]])
    with pytest.raises(KisekaeError, match="no images"):
        comparison_sheet([[None]])
    assert label(_solid((255, 255, 255)), "hi").size == (40, 30)


def test_gif_round_trip(tmp_path):
    frames = [_solid((255, 0, 0)), _solid((0, 255, 0)), _solid((0, 0, 255))]
    path = save_gif(frames, tmp_path / "a.gif", fps=10)
    with Image.open(path) as im:
        assert im.n_frames == 3
        got = []
        for k in range(3):
            im.seek(k)
            got.append(np.asarray(im.convert("RGB"))[5, 5].tolist())
            assert im.info["duration"] == 100
    assert got == [[255, 0, 0], [0, 255, 0], [0, 0, 255]]
    with pytest.raises(KisekaeError, match="same size"):
        save_gif([_solid(0), _solid(0, 10, 10)], tmp_path / "b.gif")


def _ink_rows(a, y0, y1, x0, x1, background=255):
    """Rows of a[y0:y1, x0:x1] that hold any non-background pixel."""
    return np.flatnonzero((a[y0:y1, x0:x1] != background).any(axis=(1, 2))) + y0


def test_sheet_captions_sit_under_the_cells_at_the_font_size():
    cells = [[_solid((0, 0, 255), 200, 100), _solid((0, 255, 0), 200, 100)]]
    captions = [["HH", "a caption long enough to wrap onto a second line"]]
    s = comparison_sheet(cells, captions=captions, pad=0, font_size=40, cell_width=200)
    a = np.asarray(s)
    assert (a[:100, :200] == [0, 0, 255]).all() and (a[:100, 200:] == [0, 255, 0]).all()  # pictures untouched
    ink = _ink_rows(a, 100, a.shape[0], 0, 200)
    # the capital H is about 0.7 em tall: 40 px text draws 26-32 px of ink
    assert 26 <= ink.max() - ink.min() + 1 <= 32
    two = _ink_rows(a, 100, a.shape[0], 200, 400)
    assert two.max() - two.min() > 60 and a.shape[0] >= 100 + 2 * 40  # wrapped: two lines of 40 px text
    with pytest.raises(KisekaeError, match="captions"):
        comparison_sheet(cells, captions=[["only one"]])
    with pytest.raises(KisekaeError, match="font_size"):
        comparison_sheet(cells, font_size=2)


def test_sheet_labels_fit_their_column():
    """Row labels get a column as wide as the longest one; column labels wrap to the cell width."""
    from PIL import ImageDraw

    from kisekae.render.sheets import _font

    s = comparison_sheet([[_solid(200, 100, 50)]], row_labels=["leg_raise before"], col_labels=["a b c d e f g h"],
                         font_size=24, pad=6)
    width = ImageDraw.Draw(Image.new("RGB", (1, 1))).textlength("leg_raise before", font=_font(24))
    lw = s.width - 100 - 2 * 6
    assert width + 12 <= lw <= width + 13
    a = np.asarray(s)
    label_ink = np.flatnonzero((a[:, :lw] != 255).any(axis=(0, 2)))
    assert label_ink.max() < lw  # the row label is inside its column
    cell_rows = np.flatnonzero((a[:, lw + 6] == 200).all(axis=1))
    assert cell_rows.min() >= 2 * (24 + 8) + 6  # the column label took two lines or more, above the cell
    col_ink = np.flatnonzero((a[:cell_rows.min(), lw:] != 255).any(axis=(0, 2))) + lw
    assert col_ink.min() >= lw + 6 and col_ink.max() < lw + 6 + 100  # wrapped inside the cell's width
    two = comparison_sheet([[_solid(200, 100, 50)]], row_labels=["gender=0\nweight=1"], font_size=24, pad=6)
    assert two.width - 100 - 12 < lw  # a label of two lines is as wide as its longer line

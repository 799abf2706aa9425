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

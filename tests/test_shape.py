"""The garment shape fields against analytic cases and a brute-force crossing test."""

import numpy as np
import pytest

from _reference import crossing_edges_numpy
from kisekae.qa.shape import face_adjacency, folded_pairs, shape_stats


def grid(nx=8, ny=6, h=0.01):
    """A flat (nx+1) x (ny+1) vertex grid in the XY plane, two triangles per cell, all facing +Z."""
    xs, ys = np.meshgrid(np.arange(nx + 1) * h, np.arange(ny + 1) * h, indexing="ij")
    v = np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], 1)
    idx = lambda i, j: i * (ny + 1) + j  # noqa: E731
    f = []
    for i in range(nx):
        for j in range(ny):
            f += [(idx(i, j), idx(i + 1, j), idx(i + 1, j + 1)), (idx(i, j), idx(i + 1, j + 1), idx(i, j + 1))]
    f = np.array(f)
    e = np.unique(np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), 1), axis=0)
    return v, f, e


def test_uniform_scale_gives_exact_strain_and_no_flips():
    v, f, e = grid()
    s = shape_stats(v, v, v * 1.07, f, e)
    assert s["strain_p99"] == pytest.approx(0.07, abs=1e-12)
    assert s["strain_max"] == pytest.approx(0.07, abs=1e-12)
    assert (s["flipped_faces"], s["folded_pairs"], s["self_crossings"], s["zero_area_faces"]) == (0, 0, 0, 0)


def test_face_adjacency_counts_interior_edges():
    v, f, e = grid(5, 4)
    adj = face_adjacency(f)
    # interior edges of a triangulated 5x4 grid: all edges minus the 2*(5+4) on the border
    assert len(adj) == len(e) - 2 * (5 + 4)


def test_fold_over_90_degrees_is_counted_along_the_fold_line():
    v, f, e = grid(8, 6)
    folded = v.copy()
    right = v[:, 0] > 0.04 + 1e-9
    # fold the part right of x = 4 cm by 150 degrees about the line x = 4 cm
    a = np.radians(150.0)
    dx = v[right, 0] - 0.04
    folded[right, 0] = 0.04 + dx * np.cos(a)
    folded[right, 2] = dx * np.sin(a)
    # the pairs across the fold line: one per grid cell row along it (6)
    assert folded_pairs(folded, f) == 6
    assert folded_pairs(v, f) == 0
    s = shape_stats(v, v, folded, f, e)
    assert s["strain_max"] == pytest.approx(0.0, abs=1e-12)  # a fold is isometric
    assert s["folded_pairs"] == 6


def test_flipped_faces_exclude_faces_turned_by_skinning():
    v, f, e = grid()
    pushed = v.copy()
    pushed[20, 2] = 0.0
    pushed[20, :2] += (0.03, 0.0)  # drag one vertex across its neighbours: some faces turn over
    n = lambda x: np.cross(x[f[:, 1]] - x[f[:, 0]], x[f[:, 2]] - x[f[:, 0]])  # noqa: E731
    want = int((np.einsum("ij,ij->i", n(pushed), n(v)) < 0).sum())
    assert want > 0
    assert shape_stats(v, v, pushed, f, e)["flipped_faces"] == want
    # a skinned shape that already reversed every face: those faces are reported apart, not as flipped
    s = shape_stats(v, np.ascontiguousarray(v[:, [1, 0, 2]]), v, f, e)
    assert s["skinning_turned_faces"] == len(f)
    assert s["flipped_faces"] == 0


def test_zero_area_and_self_crossings_match_brute_force():
    v, f, e = grid(8, 6)
    after = v.copy()
    # fold the strip right of x = 5 cm back over the left part, sloping down through the sheet
    right = v[:, 0] > 0.05 + 1e-9
    dx = v[right, 0] - 0.05
    after[right, 0] = 0.05 - dx
    after[right, 2] = 0.004 - 0.4 * dx
    after[0] = after[1]  # collapse an edge: its triangle has zero area
    s = shape_stats(v, v, after, f, e)
    area = 0.5 * np.linalg.norm(np.cross(after[f[:, 1]] - after[f[:, 0]], after[f[:, 2]] - after[f[:, 0]]), axis=1)
    assert s["zero_area_faces"] == int((area < 1e-10).sum()) >= 1
    want = int(crossing_edges_numpy(after, f, e).sum())
    assert want > 0
    assert s["self_crossings"] == want

"""The flip guard (kisekae.avatar.flip_guard): moves around turned triangles halved, then undone."""

import numpy as np
import pytest

from kisekae.avatar.flip_guard import (GUARD_COS, GUARD_HALVINGS, GUARD_REVERTS, flip_guard, flip_guard_numpy,
                                       turned_faces_numpy)
from kisekae.errors import KisekaeError
from kisekae.geom.ring import vertex_faces

# a unit square in z = 0 as two triangles (normals +z), and a fifth vertex off the square joined to vertex 1 and 2
SQUARE = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [2.0, 0.5, 0.0]])
FACES = np.array([[0, 1, 2], [0, 2, 3], [1, 4, 2]])


def test_turned_faces_by_hand():
    """A corner dragged across the opposite edge turns its triangle over; a tilt of 45 degrees does not count at
    cosine 0.5, one of 70 degrees does; a triangle of zero area before is never turned."""
    y = SQUARE.copy()
    y[3] = [0.0, -1.0, 0.0]  # vertex 3 dragged below the diagonal: triangle 1 faces -z
    assert turned_faces_numpy(SQUARE, y, FACES, 0.0).tolist() == [False, True, False]
    for degrees, turned in ((45.0, False), (70.0, True)):
        y = SQUARE.copy()
        t = np.radians(degrees)  # triangle 2 (1, 4, 2) turned about the x = 1 edge
        y[4] = [1.0 + np.cos(t), 0.5, np.sin(t)]
        assert turned_faces_numpy(SQUARE, y, FACES, 0.5)[2] == turned
    flat = SQUARE.copy()
    flat[4] = [1.0, 0.5, 0.0]  # on the edge 1-2: zero area
    moved = flat.copy()
    moved[4] = [0.5, 0.5, 1.0]
    assert not turned_faces_numpy(flat, moved, FACES, 0.0)[2]


def test_guard_halves_then_undoes_by_hand():
    """Vertex 3 moved by (0, -2, 0) turns triangle 1 over; its corners 0, 2, 3 have their moves halved (only 3 moved):
    after one halving vertex 3 sits at y = 0, on the diagonal's line (zero area, not turned: dot 0 is not < 0), so
    the guard stops with a move of (0, -1, 0). A move that stays turned after every halving is undone."""
    faces_around = vertex_faces(FACES, len(SQUARE))
    y = SQUARE.copy()
    y[3] += [0.0, -2.0, 0.0]
    out = flip_guard_numpy(SQUARE, y, FACES, faces_around, cos_min=0.0)
    np.testing.assert_array_equal(out[3], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(out[[0, 1, 2, 4]], SQUARE[[0, 1, 2, 4]])
    y[3] = [2.0, -10.0, 0.0]  # (2, -11, 0) away: halved three times, (0.25, -0.375, 0) is still turned -> undone
    out = flip_guard_numpy(SQUARE, y, FACES, faces_around, cos_min=0.0, halvings=3, reverts=1)
    np.testing.assert_array_equal(out, SQUARE)
    out = flip_guard_numpy(SQUARE, y, FACES, faces_around, cos_min=0.0, halvings=3, reverts=0)
    np.testing.assert_allclose(out[3], SQUARE[3] + (y[3] - SQUARE[3]) / 8, atol=1e-15)


def test_nothing_turned_returns_the_step_bit_for_bit():
    rng = np.random.default_rng(3)
    y = SQUARE + rng.normal(scale=1e-3, size=SQUARE.shape)
    out = flip_guard(SQUARE, y, FACES, vertex_faces(FACES, len(SQUARE)))
    np.testing.assert_array_equal(out, y)


def _sphere(n_lat=14, n_lon=24):
    """A UV sphere of radius 0.1 m with a seam: the first and last longitude columns are copies (welded)."""
    lat = np.linspace(0.15, np.pi - 0.15, n_lat)
    lon = np.linspace(0.0, 2 * np.pi, n_lon + 1)  # last column repeats the first
    v = np.array([[np.sin(a) * np.cos(b), np.sin(a) * np.sin(b), np.cos(a)] for a in lat for b in lon]) * 0.1
    w = n_lon + 1
    f = []
    for i in range(n_lat - 1):
        for j in range(n_lon):
            a, b, c, d = i * w + j, i * w + j + 1, (i + 1) * w + j, (i + 1) * w + j + 1
            f += [[a, c, b], [b, c, d]]
    weld = np.arange(len(v))
    weld[n_lon::w] = np.arange(0, len(v), w)
    return v, np.array(f), weld


def test_numba_equals_numpy_and_seam_copies_move_alike():
    """On a sphere with a welded seam, random moves (some large enough to turn triangles): the kernel equals the
    reference within 1e-12 m, no triangle is turned afterwards (nor with more passes), and the two copies of
    each seam vertex end where each other end."""
    v, f, weld = _sphere()
    table = vertex_faces(f, len(v), weld)
    rng = np.random.default_rng(11)
    move = np.zeros_like(v)
    pick = rng.choice(len(v), 60, replace=False)
    move[pick] = rng.normal(scale=0.02, size=(60, 3))
    move[weld != np.arange(len(v))] = move[weld[weld != np.arange(len(v))]]  # copies moved alike, as the step does
    y = v + move
    before = turned_faces_numpy(v, y, f, GUARD_COS).sum()
    assert before >= 5
    ref = flip_guard_numpy(v, y, f, table)
    out = flip_guard(v, y, f, table)
    np.testing.assert_allclose(out, ref, atol=1e-12)
    assert not turned_faces_numpy(v, out, f, GUARD_COS).any()  # the default passes clear it
    full = flip_guard(v, y, f, table, reverts=20)
    assert not turned_faces_numpy(v, full, f, GUARD_COS).any()
    np.testing.assert_allclose(out[weld], out, atol=1e-12)  # each copy where its representative is (sin 2 pi != 0)
    assert GUARD_HALVINGS + GUARD_REVERTS >= 2


def test_bad_input_is_refused():
    table = vertex_faces(FACES, len(SQUARE))
    with pytest.raises(KisekaeError, match="flip guard"):
        flip_guard(SQUARE, SQUARE[:4], FACES, table)
    with pytest.raises(KisekaeError, match="do not fit"):
        flip_guard(SQUARE, SQUARE, FACES + 3, table)
    with pytest.raises(KisekaeError, match="do not fit"):
        flip_guard_numpy(SQUARE, SQUARE, FACES, (table[0][:-1], table[1]))

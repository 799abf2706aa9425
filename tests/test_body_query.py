"""BodyQuery's memo of winding numbers and edge crossings: the same answers, as copies, a bounded memo."""

import numpy as np

from conftest import icosphere

from kisekae.geom.crossings import edge_crossings_numpy
from kisekae.geom.winding import winding_number_numpy
from kisekae.qa.penetration import BodyQuery, BodyTopology


def _ball():
    v, f = icosphere(3, radius=0.1)
    return BodyQuery(BodyTopology.from_mesh(v, f), v), v, f


def test_repeated_questions_get_the_same_answers_as_copies():
    q, v, f = _ball()
    rng = np.random.default_rng(0)
    p = rng.uniform(-0.15, 0.15, size=(200, 3))
    e = rng.integers(0, 200, size=(300, 2))
    w = q.winding(p)
    np.testing.assert_allclose(w, winding_number_numpy(p, v, f), atol=0.05)  # the far field is approximate
    assert 20 < q.inside(p).sum() < 180
    first = q.inside(p)
    first[:] = ~first  # changing an answer does not change the memo
    np.testing.assert_array_equal(q.inside(p), ~first)
    np.testing.assert_array_equal(q.inside(p.astype(np.float32).astype(np.float64)), q.inside(p.astype(np.float32)))
    c = q.crossing_edges(p, e)
    np.testing.assert_array_equal(c, edge_crossings_numpy(p, e, v, f))
    hit, tri = q.crossing_edges(p, e, return_triangles=True)
    np.testing.assert_array_equal(hit, c)
    assert (tri[hit] >= 0).all() and (tri[~hit] == -1).all()
    moved = p.copy()
    moved[0] = 0.0  # the centre: one changed point is a new question
    assert q.inside(moved)[0] and not np.array_equal(q.winding(moved), q.winding(p))
    np.testing.assert_array_equal(q.crossing_edges(p, e[::-1]), c[::-1])  # other edges, another question


def test_the_memo_stays_bounded_and_forgets_the_oldest():
    q, v, f = _ball()
    sets = [np.full((3, 3), 0.01 * k) for k in range(BodyQuery.MEMO_SIZE + 3)]
    for s in sets:
        q.winding(s)
    assert len(q._memo) == BodyQuery.MEMO_SIZE
    keys = list(q._memo)
    q.winding(sets[-BodyQuery.MEMO_SIZE])  # the oldest kept becomes the newest
    assert list(q._memo)[-1] == keys[0]
    np.testing.assert_allclose(q.winding(sets[0]), winding_number_numpy(sets[0], v, f), atol=0.05)

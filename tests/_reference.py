"""Independent NumPy references shared by the tests."""

import numpy as np


def segment_triangle_numpy(p0, p1, tri):
    """Brute-force segment/triangle intersection (Möller–Trumbore) for all pairs: (E, T) bool."""
    d = (p1 - p0)[:, None, :]
    e1 = (tri[:, 1] - tri[:, 0])[None]
    e2 = (tri[:, 2] - tri[:, 0])[None]
    h = np.cross(d, e2)
    a = np.einsum("etk,etk->et", e1.repeat(len(p0), 0), h)
    with np.errstate(all="ignore"):
        f = 1.0 / a
        s = p0[:, None, :] - tri[None, :, 0]
        u = f * np.einsum("etk,etk->et", s, h)
        q = np.cross(s, e1)
        v = f * np.einsum("etk,etk->et", d.repeat(len(tri), 1), q)
        t = f * np.einsum("etk,etk->et", e2.repeat(len(p0), 0), q)
        return (np.abs(a) > 1e-15) & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0) & (t <= 1)


def crossing_edges_numpy(vertices, faces, edges):
    """(E,) bool: edges through faces that share none of their vertices (brute force)."""
    v = np.asarray(vertices, dtype=np.float64)
    hits = segment_triangle_numpy(v[edges[:, 0]], v[edges[:, 1]], v[faces])
    incident = (faces[None, :, :] == edges[:, 0, None, None]).any(2) | (faces[None, :, :] == edges[:, 1, None, None]).any(2)
    return (hits & ~incident).any(1)

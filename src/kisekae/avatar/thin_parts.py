"""Pose-space correctives on thin parts (fingers), smoothed over the one-ring.

The body's correctives (:mod:`kisekae.avatar.correctives`) are fitted vertex by vertex, and a vertex that no
training sample moved by more than ``ACTIVE`` gets none. On a finger that leaves 3-4 mm offsets beside vertices with
no offset at all, on edges of 3 mm. In held-out poses those edges shear into spikes and cross each other. Dropping the
fingers' correctives makes the bare body smoother, but it loses the offline solve's answer for a hand pressed on a
thigh, and the garments there get worse (docs/contact.md, "Correctives on thin parts").

So on thin parts the fitted offsets are smoothed instead. Offsets are linear in the coefficients, so a Jacobi pass of
the *offset field*, ``o_v <- (o_v + mean of o_u over v's one-ring) / 2`` on the thin vertices, is the same pass applied
to each vertex's coefficients joint by joint. A vertex then takes entries for the joints of its neighbours, too
(:func:`smooth_thin_parts`). :func:`kisekae.avatar.correctives.fit_correctives` ends with it for the body, and the
packaged bakes carry it.

A *thin part* (:func:`thin_part_vertices`) is the vertices whose heaviest bone is one bone, when their median distance
from their own principal axis is below :data:`THIN_PART`. On the built-in body that is every finger segment (5-9.6 mm)
and nothing else (toes 11.9 mm, clavicles 17.7 mm, hands 23 mm); on the ``cmu_mb`` rig, the thumbs (8.8 mm).
"""

from __future__ import annotations

import numpy as np

from ..errors import KisekaeError

#: A part whose vertices lie closer than this to their principal axis (median, metres) is thin.
THIN_PART = 0.01
#: Jacobi passes of :func:`smooth_thin_parts` (the packaged bakes' setting ``thin_passes``).
THIN_PASSES = 4


def thin_part_vertices(rest_vertices, skin, thin: float = THIN_PART) -> np.ndarray:
    """(N,) bool: the vertices of thin parts (module docstring). Parts of fewer than three vertices are not thin.

    Parameters
    ----------
    rest_vertices : (N, 3) metres
    skin : :class:`~kisekae.avatar.skinning.Skin` with (N, K) indices and weights
    thin : float, metres
    """
    v = np.asarray(rest_vertices, dtype=np.float64)
    idx, w = np.asarray(skin.indices), np.asarray(skin.weights)
    if v.ndim != 2 or v.shape[1] != 3 or len(idx) != len(v):
        raise KisekaeError(f"{len(idx)} skin rows for vertices of shape {v.shape}", "thin parts")
    own = idx[np.arange(len(idx)), np.argmax(w, axis=1)]
    out = np.zeros(len(v), dtype=bool)
    for b in np.unique(own):
        sel = own == b
        if sel.sum() < 3:
            continue
        q = v[sel] - v[sel].mean(axis=0)
        axis = np.linalg.eigh(q.T @ q)[1][:, 2]
        out[sel] = np.median(np.linalg.norm(q - np.outer(q @ axis, axis), axis=1)) < thin
    return out


def smooth_thin_parts(correctives, ring, thin, passes: int = THIN_PASSES):
    """``correctives`` with the offsets of the ``thin`` vertices smoothed by ``passes`` Jacobi passes over ``ring``.

    Parameters
    ----------
    correctives : :class:`~kisekae.avatar.correctives.PoseCorrectives`
    ring : ``(ptr (N + 1,), idx)`` welded one-ring of the body (:func:`kisekae.geom.ring.one_ring`)
    thin : (N,) bool, the vertices whose offsets are smoothed (the others are read, never changed)
    passes : int >= 0

    Returns
    -------
    PoseCorrectives
        For any pose, its offsets equal ``passes`` passes of ``o_v <- (o_v + mean over v's one-ring of o_u) / 2`` on the
        thin vertices, applied to the offsets of ``correctives`` (up to the float32 rounding of the coefficients).
    """
    from .correctives import PoseCorrectives

    c = correctives
    ptr, idx = (np.asarray(a, dtype=np.int64) for a in ring)
    thin = np.asarray(thin, dtype=bool).reshape(-1)
    if isinstance(passes, bool) or not isinstance(passes, (int, np.integer)) or passes < 0:
        raise KisekaeError(f"passes must be a whole number >= 0, got {passes!r}", "thin parts")
    if len(thin) != c.n_vertices or len(ptr) != c.n_vertices + 1:
        raise KisekaeError(f"{len(thin)} flags and a ring of {len(ptr) - 1} for {c.n_vertices} vertices", "thin parts")
    entries = [{int(c.entry_joint[e]): c.coefficients[e].astype(np.float64) for e in range(c.vertex_ptr[v],
                                                                                          c.vertex_ptr[v + 1])}
               for v in range(c.n_vertices)]
    for _ in range(int(passes)):
        new = {}
        for v in np.flatnonzero(thin):
            ring_v = idx[ptr[v]:ptr[v + 1]]
            if len(ring_v) == 0:
                continue
            acc = {j: 0.5 * x for j, x in entries[v].items()}
            for u in ring_v:
                for j, x in entries[u].items():
                    acc[j] = acc.get(j, 0.0) + x / (2 * len(ring_v))
            new[v] = acc
        for v, acc in new.items():
            entries[v] = acc
    counts = np.array([len(e) for e in entries], dtype=np.int64)
    slots = [j for e in entries for j in sorted(e)]
    coef = [e[j] for e in entries for j in sorted(e)]
    out = PoseCorrectives(c.joints, c.centres, c.sigma, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                          np.asarray(slots, dtype=np.int32),
                          np.asarray(coef, dtype=np.float32).reshape(-1, *c.coefficients.shape[1:]),
                          list(c.bone_names), c.mesh_hash, dict(c.settings, thin_passes=int(passes)))
    out.check()
    return out

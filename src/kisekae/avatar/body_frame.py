"""One frame of the default body from its rest mesh: corrective offsets, skinning and the joint planes.

The body's per-frame path is three per-vertex stages (:mod:`kisekae.avatar.correctives`,
:mod:`kisekae.avatar.skinning`, :mod:`kisekae.avatar.contact`). Run through their public functions, each
stage checks and converts its input again and the offsets take a detour through float32 skinned positions.
:func:`posed_body_frame` checks once and runs, in compiled code, the corrective offsets joint by joint over the
live joints' entries (:func:`~kisekae.avatar.correctives.joint_offsets_kernel`), skinning per vertex with them
added (as an engine's vertex stage does, ``KisekaeCorrectiveOffset`` then skinning), then the planes
(``KisekaeContactPlanes``), after the per-joint work of the frame (the correctives' features and the posed planes'
table, a few hundred numbers). All three stages in one loop measured slower than two loops (the planes' per-slot
branches); the offsets gathered per vertex inside the skinning loop slower than a joint-major pass before it
(crouch 0.25 -> 0.18 ms for offsets and skinning, 2026-12-06).

Its reference is the stages composed from their NumPy references: :func:`posed_body_frame_numpy`.
``benchmarks/bench_contact.py`` times it against plain skinning (the issue's gate: at most 3 times).
"""

from __future__ import annotations

import numba
import numpy as np

from ..errors import KisekaeError
from .contact import BAND, GAP, REST_SLACK, JointPlanes, _contact_kernel, check_gap_band, contact_planes_numpy
from .correctives import PoseCorrectives, corrective_offsets_numpy, joint_offsets_kernel, live_joints, skinned_offsets
from .skinning import _lbs_kernel, lbs_numpy, lbs_point


@numba.njit(cache=True, nogil=True)
def _offset_skin_kernel(rest, idx, w, m, joint_ptr, entry_vertex, coef_t, f, live, offsets,
                        out):  # pragma: no cover - compiled
    joint_offsets_kernel(joint_ptr, entry_vertex, coef_t, f, live, offsets)
    for i in range(rest.shape[0]):
        out[i, 0], out[i, 1], out[i, 2] = lbs_point(rest[i, 0] + offsets[i, 0], rest[i, 1] + offsets[i, 1],
                                                     rest[i, 2] + offsets[i, 2], i, idx, w, m)


def _float_dtype(a):
    """float32 for a float32 array, else float64: the kernels read float32 rest positions and weights as they are
    (each product with a float64 matrix or offset promotes them exactly), which spares two float64 copies of the
    body a frame and gives the same result bit for bit."""
    return np.float32 if getattr(a, "dtype", None) == np.float32 else np.float64


def _check(rest, skin, skin_matrices, correctives, features, planes, gap, band, keep_float32: bool = False):
    from ..validate import as_points

    x = as_points(rest, "body rest vertices", dtype=_float_dtype(rest) if keep_float32 else np.float64)
    m = np.ascontiguousarray(skin_matrices, dtype=np.float64)
    if m.ndim != 3 or m.shape[1:] != (4, 4) or not np.all(np.isfinite(m)):
        raise KisekaeError(f"expected finite (B, 4, 4) skinning matrices, got {m.shape}", "skinning matrices")
    if skin.n_vertices != len(x) or (skin.indices.size and skin.indices.max() >= len(m)):
        raise KisekaeError(f"skin of {skin.n_vertices} rows for {len(x)} vertices and {len(m)} bones", "skin")
    if correctives is not None:
        f = np.asarray(features, dtype=np.float64)
        if correctives.n_vertices != len(x) or f.shape != correctives.centres.shape[:2] or not np.all(np.isfinite(f)):
            raise KisekaeError(f"correctives for {correctives.n_vertices} vertices and features {f.shape} do not fit "
                               f"a body of {len(x)}", "correctives")
    if planes is not None:
        if len(planes.rest) != len(x):
            raise KisekaeError(f"joint planes for {len(planes.rest)} vertices, the body has {len(x)}", "contact")
        check_gap_band(gap, band)
    return x, m


def posed_body_frame(rest_vertices, skin, skin_matrices, *, correctives: PoseCorrectives | None = None,
                     features=None, planes: JointPlanes | None = None, gap: float = GAP,
                     band: float = BAND) -> np.ndarray:
    """The body of one frame: ``contact(LBS(rest + offsets))``, vertex by vertex in one Numba loop.

    Parameters
    ----------
    rest_vertices : (N, 3) rest positions, metres
    skin : Skin of the body
    skin_matrices : (B, 4, 4) the frame's skinning matrices
    correctives : PoseCorrectives or None (no offsets)
    features : (J, K) the frame's features (:meth:`PoseCorrectives.features`); needed with ``correctives``
    planes : JointPlanes or None (no contact step)
    gap, band : float, metres, the contact step's settings

    Returns
    -------
    (N, 3) float32 posed positions, metres; equal to :func:`posed_body_frame_numpy` within 1e-6 m.
    """
    x, m = _check(rest_vertices, skin, skin_matrices, correctives, features, planes, gap, band, keep_float32=True)
    idx = np.ascontiguousarray(skin.indices, dtype=np.int32)
    w = np.ascontiguousarray(skin.weights, dtype=_float_dtype(skin.weights))
    out = np.empty((len(x), 3))
    if correctives is None:
        _lbs_kernel(x, idx, w, m, out)
    else:
        f = np.ascontiguousarray(features, dtype=np.float64)
        _offset_skin_kernel(x, idx, w, m, *correctives.by_joint, f, live_joints(f), np.empty_like(out), out)
    if planes is not None:  # a second loop: fused into the first it ran slower (0.44 -> 0.58 ms with skinning)
        _contact_kernel(out, planes.rest_terms(), planes.slots, planes.side, planes.frame_table(m), float(gap),
                        float(band), REST_SLACK)
    return out.astype(np.float32)


def posed_body_frame_numpy(rest_vertices, skin, skin_matrices, *, correctives: PoseCorrectives | None = None,
                           features=None, planes: JointPlanes | None = None, gap: float = GAP,
                           band: float = BAND) -> np.ndarray:
    """:func:`posed_body_frame` from the stages' NumPy references, in float64: skinning, plus the corrective
    offsets carried by the blended rotations, then the joint planes."""
    x, m = _check(rest_vertices, skin, skin_matrices, correctives, features, planes, gap, band)
    y = lbs_numpy(x, skin.indices, skin.weights, m, dtype=np.float64)
    if correctives is not None:
        y = y + skinned_offsets(skin, m, corrective_offsets_numpy(correctives, features))
    if planes is not None:
        y = contact_planes_numpy(y, planes, m, gap=gap, band=band)
    return y

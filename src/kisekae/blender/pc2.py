"""Point-cache files (``.pc2``): per-frame vertex positions that Blender's Mesh Cache modifier reads.

Layout (little-endian): the 12-byte signature ``POINTCACHE2\\0``, int32 file version (1), int32
point count, float32 start frame, float32 sample rate (frames per sample), int32 sample count,
then ``samples x points x 3`` float32 positions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import KisekaeError
from ..outputs import check_outputs

SIGNATURE = b"POINTCACHE2\0"
_HEADER = np.dtype([("sig", "S12"), ("version", "<i4"), ("points", "<i4"), ("start", "<f4"), ("rate", "<f4"),
                    ("samples", "<i4")])


def write_pc2(path, frames, start: float, rate: float = 1.0, *, force: bool = False) -> Path:
    """Write a point cache.

    Parameters
    ----------
    path : str or os.PathLike
        File to write; an existing file is refused unless ``force`` (:func:`kisekae.outputs.check_outputs`).
    frames : (S, N, 3) float
        Positions per sample, in the object's local coordinates (Blender units, metres).
    start : float
        Frame of the first sample.
    rate : float
        Frames between samples.
    force : bool
        Overwrite an existing file.

    Returns
    -------
    Path
    """
    (path,) = check_outputs([path], force=force)
    data = np.asarray(frames, dtype="<f4")
    if data.ndim != 3 or data.shape[2] != 3:
        raise KisekaeError(f"expected shape (samples, points, 3), got {data.shape}", path)
    if not np.all(np.isfinite(data)):
        raise KisekaeError("non-finite position (NaN or inf)", path)
    head = np.array([(SIGNATURE, 1, data.shape[1], start, rate, data.shape[0])], dtype=_HEADER)
    with open(path, "wb") as fh:
        fh.write(head.tobytes())
        fh.write(np.ascontiguousarray(data).tobytes())
    return path


def read_pc2(path):
    """Read a point cache: ``(frames (S, N, 3) float32, start, rate)``; a bad file raises KisekaeError."""
    raw = Path(path).read_bytes()
    if len(raw) < _HEADER.itemsize or raw[:12] != SIGNATURE:
        raise KisekaeError("not a PC2 point cache (bad signature)", path)
    head = np.frombuffer(raw[:_HEADER.itemsize], dtype=_HEADER)[0]
    n, s = int(head["points"]), int(head["samples"])
    body = raw[_HEADER.itemsize:]
    if n < 0 or s < 0 or len(body) != 12 * n * s:
        raise KisekaeError(f"size does not match {s} samples of {n} points", path)
    return np.frombuffer(body, dtype="<f4").reshape(s, n, 3).copy(), float(head["start"]), float(head["rate"])

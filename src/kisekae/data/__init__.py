"""Packaged data: the built-in avatar and sample assets.

- ``makehuman_avatar.npz``: MakeHuman base mesh, helpers, rigs and weights (CC0 1.0).
- ``makehuman_shapes.npz``: MakeHuman macro and regional targets (lzma) and the rigs' joint strategies
  (CC0 1.0), for :mod:`kisekae.avatar.shape`.
- ``samples/``: two MakeHuman community garments (``.mhclo`` + ``.obj``, CC0 1.0) and an excerpt of CMU
  motion-capture clip 35_01 (free for research and commercial use). See ``samples/SOURCES.md``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def sample_path(name: str) -> Path:
    """Filesystem path of a packaged sample file, e.g. ``sample_path("cmu_35_01_excerpt.bvh")``."""
    p = resources.files(__name__).joinpath("samples", name)
    if not p.is_file():
        from ..errors import KisekaeError

        raise KisekaeError("no such packaged sample", name)
    return Path(str(p))


SAMPLE_GARMENTS = ("female_casualsuit01", "male_worksuit01")
SAMPLE_BVH = "cmu_35_01_excerpt.bvh"

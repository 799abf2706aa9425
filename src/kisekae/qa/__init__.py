"""Quality metrics: winding-number inside test, depth, edge crossings, reports."""

from .penetration import BodyQuery, BodyTopology, penetration_stats
from .winding import winding_number, winding_number_numpy

__all__ = ["BodyQuery", "BodyTopology", "penetration_stats", "winding_number", "winding_number_numpy"]

"""Quality metrics: winding-number inside test, depth, edge crossings, reports."""

from .penetration import BodyQuery, BodyTopology, penetration_stats

__all__ = ["BodyQuery", "BodyTopology", "penetration_stats"]

"""Storage engines behind one interface (see ``base``): Qdrant Edge embedded by default."""

from .base import Hit, PointData, Shard, Store, open_store

__all__ = ["Hit", "PointData", "Shard", "Store", "open_store"]

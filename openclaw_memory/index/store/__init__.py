"""Storage engines behind one interface (see ``base``): Qdrant Edge embedded by default."""

from .base import Hit, PointData, Shard, VectorStore
from .factory import open_store

__all__ = ["Hit", "PointData", "Shard", "VectorStore", "open_store"]

"""The product's own state in one SQLite database per data dir (``state.db``): see
:mod:`.connection` for durability and errors, :mod:`.schema` for the tables and their versions,
:mod:`.repair` for what ``doctor`` does with a damaged database."""

from .batches import in_batches
from .connection import DB_NAME, Database, database_path, forget_connections, is_read_only, read_only
from .failures import dec, enc

__all__ = ["DB_NAME", "Database", "database_path", "dec", "enc", "forget_connections", "in_batches", "is_read_only",
           "read_only"]

"""Every value of the state database as its column declares it.

SQLite keeps whatever a row was given: a NULL or a value of another type in a column of ours (a
row edited by hand, a bad restore) passes its integrity check, and the code that reads it then
fails deep inside (``int('yesterday')``, ``None[0]``), as a traceback. So what the columns hold is
checked as doctor looks at the database (:func:`mistyped`, one query), and a rebuild copies only
values of their column's type (:func:`fitter`): a wrong one in a column that may be NULL becomes
NULL, a row whose required value is wrong or NULL is left out and counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from .schema import declared

# The types SQLite's typeof() gives the values of a column of each declared type.
_TYPEOF = {"INTEGER": ("integer",), "REAL": ("real", "integer"), "TEXT": ("text",), "BLOB": ("blob",)}
_PYTHON: dict[str, tuple[type, ...]] = {"INTEGER": (int,), "REAL": (float, int), "TEXT": (str,), "BLOB": (bytes,)}
# Columns whose text is JSON, read as such: a row whose JSON does not parse fails its reader the
# same way.
JSON = frozenset({("manifest_files", "chunks"), ("term_stats", "data"), ("idempotency", "result"),
                  ("idempotency", "binding"), ("link_files", "headings")})
# Not checked: a doctor's, move's or rollback's record is read whatever it holds (bytes, text that
# is not JSON) and has its own finding, which sets its bytes aside before it drops the row.
_OWN_FINDING = frozenset({("journal", "record"), ("file_ops", "record"), ("rollback_ops", "record")})


def mistyped_sql(present: Iterable[tuple[str, str]]) -> str | None:
    """One query counting, per column of ours the file has (``present``: (table, column) rows), the
    rows whose value is not of its declared type (or NULL where one is required, or JSON that does
    not parse): a row (``table.column``, count) each; None when there is nothing to count.

    Each table is read once for all its columns (a scan per column cost a doctor at 30,000 notes
    with a watchdog snapshot 220-430 ms): SQLite from 3.35 computes a subquery named more than
    once a single time; the ``MATERIALIZED`` hint that asks it is a syntax error before 3.35 (and
    an error here reads as damage), so it is not written."""
    have = set(present)
    scans: list[str] = []
    rows: list[str] = []
    for table, columns in declared().items():
        sums: list[str] = []
        for column, kind, notnull in columns:
            if (table, column) not in have or kind not in _TYPEOF or (table, column) in _OWN_FINDING:
                continue
            allowed = ", ".join(f"'{t}'" for t in _TYPEOF[kind] + (() if notnull else ("null",)))
            wrong = f"typeof({column}) NOT IN ({allowed})"
            if (table, column) in JSON:
                wrong += f" OR ({column} IS NOT NULL AND NOT json_valid({column}))"
            rows.append(f"SELECT '{table}.{column}', n{len(sums)} FROM t{len(scans)}")  # noqa: S608 - our names
            sums.append(f"COALESCE(SUM({wrong}), 0) AS n{len(sums)}")
        if sums:
            scans.append(f"t{len(scans)} AS (SELECT {', '.join(sums)} FROM {table})")  # noqa: S608 - our names
    return f"WITH {', '.join(scans)} {' UNION ALL '.join(rows)}" if rows else None


def mistyped(counts: Iterable[tuple[str, int]]) -> str | None:
    """What :func:`mistyped_sql`'s rows say is wrong, or None."""
    found = [f"{where}: {n}" for where, n in counts if n]
    if not found:
        return None
    return ("rows hold a NULL or a value of the wrong type (" + ", ".join(found[:5])
            + (f" and {len(found) - 5} more columns" if len(found) > 5 else "") + ")")


def fitter(table: str, columns: list[str]) -> Callable[[tuple], tuple | None]:
    """A function making a row of ``columns`` of ``table`` fit its declared types: the row, a copy
    with NULL for each wrong value of a column that may be NULL, or None when a required value is
    wrong or NULL (the row cannot be kept)."""
    kinds = {c: (kind, notnull) for c, kind, notnull in declared().get(table, ())}
    checks = [(i, _PYTHON.get(kinds[c][0], (object,)), kinds[c][1], (table, c) in JSON)
              for i, c in enumerate(columns) if c in kinds and (table, c) not in _OWN_FINDING]

    def fit(row: tuple) -> tuple | None:
        fixed = None
        for i, types, notnull, is_json in checks:
            value = row[i]
            if value is None:
                if notnull:
                    return None
                continue
            if isinstance(value, types) and not isinstance(value, bool) and (not is_json or (isinstance(value, str) and _parses(value))):
                continue
            if notnull:
                return None
            fixed = list(row) if fixed is None else fixed
            fixed[i] = None
        return row if fixed is None else tuple(fixed)

    return fit


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True

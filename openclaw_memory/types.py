"""The closed sets of words the API speaks, as ``Literal`` types for type checkers."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from .index.results import SyncProgress

SearchMode = Literal["hybrid", "vector", "text"]
Severity = Literal["error", "warning", "info"]
RepairStatus = Literal["done", "declined", "failed", "rolled-back", "completed"]
FileStateName = Literal["read_fresh", "read_stale", "discovered_unread", "written_unread"]
WriteAction = Literal["append", "replace", "restore"]
DiffMode = Literal["diff", "unchanged", "full", "missing"]  # what ``read --diff`` gives back
# Who made a version the history logs (history.versions names each): `log --origin` takes one.
Origin = Literal["agent-write", "external-edit", "restore", "doctor-fix", "move", "remove"]
# Results a search returns at most, whoever asks (the command line, the library, memory_search's
# maxResults; OpenClaw sets none): a larger limit is a usage error, not an engine overflow.
MAX_LIMIT = 1000

# A day, and a moment, as typed: ISO 8601's extended form in ASCII digits only (``date.fromisoformat``
# also takes '20261103', the week date '2026-W45-2' and other digits than ASCII: a slip read as another
# day). Matched whole before ``fromisoformat`` reads it; ``t`` and ``z`` as RFC 3339 lets them.
DAY = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
# (its groups: the hour, minute, second and offset, as :func:`no_such_moment` reads them)
MOMENT = DAY + r"(?:[Tt ]([0-9]{2})(?::([0-9]{2})(?::([0-9]{2})(?:\.[0-9]+)?)?)?([Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?)?"


def typed_day(raw: str) -> dt.date:
    """``raw`` as a day (:data:`DAY`); ValueError when it is none."""
    import re

    if not re.fullmatch(DAY, raw):
        raise ValueError(raw)
    return dt.date.fromisoformat(raw)


def no_such_day(raw: str) -> str:
    """Why ``raw``, a day's form (:data:`DAY`, the whole of it), names no day ("February 2026 has 28
    days (2026 is not a leap year)"), for a usage error's end; "" where it names one or is no
    day's form at all (its form is the error then)."""
    import calendar
    import re

    if not re.fullmatch(DAY, raw):
        return ""
    year, month, day_of_month = int(raw[:4]), int(raw[5:7]), int(raw[8:10])
    if year == 0:
        return "there is no year 0"
    if not 1 <= month <= 12:
        return f"there is no month {month}"
    days = calendar.monthrange(year, month)[1]
    if day_of_month == 0:
        return "a month's days count from 1"
    if day_of_month <= days:
        return ""
    leap = f" ({year} is not a leap year)" if month == 2 and day_of_month == 29 else ""
    return f"{calendar.month_name[month]} {year} has {days} days{leap}"


def no_such_moment(raw: str) -> str:
    """Why ``raw``, a moment's form (:data:`MOMENT`, the whole of it), names no moment, worded for a
    usage error ("names no day: February 2026 has 28 days", "names no time: there is no minute 60",
    a leap second, an offset of a day or more: ``fromisoformat`` read ``+01:99`` as ``+02:39``); ""
    where it names one or is no moment's form at all (its form is the error then)."""
    import re

    form = re.fullmatch(MOMENT, raw)
    if form is None:
        return ""
    hour, minute, second, offset = form.groups()
    if second == "60":  # ISO 8601 writes one, but no clock here counts it (the history's times are POSIX seconds)
        return ("names a leap second (:60), which times here do not count: give 23:59:59.999999 or the next second "
                "instead")
    why = no_such_day(raw[:10])
    if why:
        return f"names no day: {why}"
    for value, limit, name in ((hour, 23, "hour"), (minute, 59, "minute"), (second, 59, "second")):
        if value is not None and int(value) > limit:
            return f"names no time: there is no {name} {int(value)} (a day's {name}s run 0-{limit})"
    if offset and offset[0] in "+-" and (int(offset[1:3]) > 23 or (len(offset) > 3 and int(offset[-2:]) > 59)):
        return f"names no time: an offset from UTC is less than a day, not {offset}"
    return ""


def typed_moment(raw: str) -> float:
    """``raw`` as a moment (:data:`MOMENT`), in seconds since the epoch; ValueError when it is none:
    ``rollback --to``'s time, which a snapshot label must not read as. A date alone is its start,
    a time without an offset UTC; RFC 3339 lets ``T`` and ``Z`` be lower case, which
    ``fromisoformat`` refuses; no other letter is read, and digits as typed (``20261201`` and the
    week date ``2026-W48-1`` were read as days)."""
    import re

    if not re.fullmatch(MOMENT, raw) or no_such_moment(raw):
        raise ValueError(raw)
    when = dt.datetime.fromisoformat(raw.upper())
    return (when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)).timestamp()

# Called with each progress report of an index run (in the caller's process: never sent to the service).
ProgressCallback = Callable[["SyncProgress"], None]

SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)
SEVERITIES: tuple[str, ...] = get_args(Severity)
REPAIR_STATUSES: tuple[str, ...] = get_args(RepairStatus)

"""A time zone named as OpenClaw's users name it (``agents.defaults.userTimezone``), taken as
JavaScript's Intl takes it: below the settings (which warn about a name it refuses) and the prompt
(which dates the daily notes by it). And the caller's local time while a service answers it."""

from __future__ import annotations

import contextvars
import datetime as dt
import functools
import io
import os
import re
import struct

# Files of the zone folder that zoneinfo opens and Intl refuses (``available_timezones`` leaves them out).
_NOT_ZONES = frozenset({"posix", "right", "posixrules", "localtime"})
_UTC_OFFSET = re.compile(r"^([+\-\u2212])(\d{2})(?::?(\d{2}))?$")  # U+2212, the minus sign, too


def resolve_zone(name: str | None) -> dt.tzinfo | None:
    """The zone JavaScript's Intl takes ``name`` for, as OpenClaw's ``resolveUserTimezone`` does:
    an IANA name or link in any letter case (``asia/kolkata``, ``Asia/Calcutta``) or a UTC offset
    (``+05``, ``+0530``, ``+05:30``); None for what Intl refuses, ``posix/Asia/Tokyo`` included
    (Python's zoneinfo opens any file of the zone folder; it also took no offset, no other case)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not name:
        return None
    offset = _UTC_OFFSET.match(name)
    if offset:
        hours, minutes = int(offset[2]), int(offset[3] or 0)
        if hours > 23 or minutes > 59:
            return None
        return dt.timezone((1 if offset[1] == "+" else -1) * dt.timedelta(hours=hours, minutes=minutes))
    if name.split("/", 1)[0].lower() not in _NOT_ZONES:  # (a file system that folds case opens Posix/...)
        # A name as the database spells it opens at once; listing the database to learn what
        # another spelling stands for costs tens of milliseconds, on every prompt.
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    canonical = _zone_names().get(name.lower())
    try:
        return ZoneInfo(canonical) if canonical else None
    except (ZoneInfoNotFoundError, ValueError):
        return None


@functools.cache
def _zone_names() -> dict[str, str]:
    from zoneinfo import available_timezones

    return {known.lower(): known for known in available_timezones()}


# The local time of the process a request came from, while a service answers it (serve/core): a
# day read or shown as local (log's --since/--until, a note's modification day in search) is the
# caller's, not the service's, which may run with another TZ. None: this process's own local time;
# a string: the caller's TZ, which cannot be named here (:class:`UnnamedZone` once a day is read).
CALLER_ZONE: contextvars.ContextVar[dt.tzinfo | str | None] = contextvars.ContextVar("caller_zone", default=None)


class UnnamedZone(Exception):
    """A day is to be read in the caller's local time, whose TZ cannot be named here."""


def tz_setting() -> str | None:
    """This process's TZ as its environment gives it (None: unset, the system's /etc/localtime)."""
    return os.environ.get("TZ")


def zone_of_tz(value: str | None) -> dt.tzinfo | None:
    """The zone a process whose environment holds ``TZ=value`` keeps its local time in, as the C
    library reads it: unset, the system's ``/etc/localtime`` (UTC without one); empty or ``UTC``,
    UTC; ``Area/City`` or ``:Area/City``, that zone. None for what cannot be named here (a POSIX
    rule such as ``EST+5EDT,M3.2.0,M11.1.0``, an unknown name, a file path)."""
    from zoneinfo import ZoneInfo

    if value is None:
        try:
            with open("/etc/localtime", "rb") as system:
                return ZoneInfo.from_file(system)
        except FileNotFoundError:
            return dt.UTC
        except (OSError, ValueError):
            return None
    name = value[1:] if value.startswith(":") else value
    if name in ("", "UTC", "UTC0", "GMT", "GMT0"):
        return dt.UTC
    try:
        return ZoneInfo(name)
    except (KeyError, ValueError, OSError):  # ZoneInfoNotFoundError is a KeyError
        return None


def caller_zone_of_tz(value: str | None) -> dt.tzinfo | None:
    """The zone a caller whose environment holds ``TZ=value`` keeps its local time in, as
    :func:`zone_of_tz` names it, and also where it names none but the C library reads one: a zone
    file's path (``:/etc/localtime``, which containers set) and a POSIX rule (``UTC+3``: three hours
    west of UTC; ``CET-1CEST,M3.5.0,M10.5.0/3``). A service answering that caller reads its days so:
    it refused them, and the caller's own answer then waited for the shards the service held
    (review). What glibc reads as UTC (an unknown name, a missing file) is UTC; None for a rule
    zoneinfo does not read as glibc does (an offset of a day or more; summer time without its dates,
    ``CET-1CEST``, which glibc dates by its posixrules file): that request is answered in-process."""
    from zoneinfo import ZoneInfo

    named = zone_of_tz(value)
    if named is not None or value is None:
        return named
    name = value[1:] if value.startswith(":") else value
    try:
        if name.startswith("/"):
            with open(name, "rb") as zone_file:
                zone: dt.tzinfo = ZoneInfo.from_file(zone_file)
        elif _RULE.match(name):
            zone = _rule_zone(name)
        else:
            return dt.UTC  # a name glibc finds no zone for: its local time is UTC
    except OSError:  # no such file: glibc's local time is UTC
        return dt.UTC
    except (ValueError, UnicodeEncodeError):  # a rule zoneinfo does not read as glibc does (UTC-25): in-process
        return None
    try:
        for moment in (dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC), dt.datetime(2026, 7, 1, 12, tzinfo=dt.UTC)):
            moment.astimezone(zone).utcoffset()
    except ValueError:  # a rule of 24 hours or more (UTC+24), which glibc reads and no Python zone holds
        return None
    return zone


# A POSIX rule's start: its standard time's name (three letters or more, or <...>) and its offset.
_RULE = re.compile(r"(?:[A-Za-z]{3,}|<[A-Za-z0-9+-]{3,}>)[+-]?[0-9]")


def _rule_zone(rule: str) -> dt.tzinfo:
    """The zone of a POSIX rule (ValueError where zoneinfo does not read it as glibc does: one naming
    summer time without its dates, ``CET-1CEST``, which glibc dates by its posixrules file)."""
    from zoneinfo import ZoneInfo

    if any(int(part) > 59 for part in re.findall(r":([0-9]+)", rule)):
        raise ValueError(rule)  # minutes or seconds past 59, which glibc and zoneinfo read apart
    return ZoneInfo.from_file(io.BytesIO(_rule_only(rule)), key=rule)


def _rule_only(rule: str) -> bytes:
    """A zone file (TZif version 2, RFC 8536) with no transition and one UTC type, its footer the
    POSIX ``rule``: a reader takes the rule for every moment, as the C library does for ``TZ=rule``."""
    counts = struct.pack(">6l", 0, 0, 0, 0, 1, 4)  # isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
    block = b"TZif2" + bytes(15) + counts + struct.pack(">lBB", 0, 0, 0) + b"UTC\0"
    return block + block + b"\n" + rule.encode("ascii") + b"\n"


def host_zone() -> dt.tzinfo:
    """The host's zone as OpenClaw takes it where no user zone is set or Intl refuses the one given
    (``Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"``): the zone TZ names (or the
    system's, TZ unset), UTC where it names none (a POSIX rule such as ``UTC+3``, a file path). It was
    the C library's local time: ``TZ=UTC+3`` dated the notes 3 hours back, and an offset of a day or
    more (``TZ=UTC+24``), which no Python zone holds, was a ValueError traceback."""
    return zone_of_tz(tz_setting()) or dt.UTC


def local_midnight(day: dt.date) -> float:
    """The first moment of ``day`` in the caller's local time, in seconds since the epoch."""
    return dt.datetime.combine(day, dt.time.min, tzinfo=_caller_zone()).timestamp()


def local_date(seconds: float) -> dt.date:
    """The caller's local day of a moment given in seconds since the epoch."""
    return dt.datetime.fromtimestamp(seconds, _caller_zone()).date()


def _caller_zone() -> dt.tzinfo | None:
    zone = CALLER_ZONE.get()
    if isinstance(zone, str):
        raise UnnamedZone(f"it cannot name the caller's time zone (TZ={zone[:80]!r}), by which a day is read")
    return zone

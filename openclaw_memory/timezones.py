"""A time zone named as OpenClaw's users name it (``agents.defaults.userTimezone``), taken as
JavaScript's Intl takes it: below the settings (which warn about a name it refuses) and the prompt
(which dates the daily notes by it)."""

from __future__ import annotations

import datetime as dt
import functools
import re

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
    if name.split("/", 1)[0] not in _NOT_ZONES:
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

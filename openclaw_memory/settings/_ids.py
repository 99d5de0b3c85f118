"""Agent and session ids: as a record names them, and as OpenClaw 2026.9.6 normalizes an agent's."""

from __future__ import annotations

import re

from ..errors import UsageError, shown
from ..files.jstext import js_trim

DEFAULT_AGENT = "main"


# OpenClaw's id (its VALID_ID_RE, /i, which in JavaScript folds no letter outside ASCII onto one in it):
# agent ids and profile names; a namespace is one too. `re` compiles it when first used.
OPENCLAW_ID = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"


_SESSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")


def check_agent(agent: str) -> str:
    """An agent id as a record names it (an archive's manifest): up to 100 printable characters, no
    '/' or '\\' (printed by ``log`` and ``history`` as it is)."""
    if not (0 < len(agent) <= 100 and agent.isprintable() and not {"/", "\\"} & set(agent) and agent not in (".", "..")):
        raise UsageError(f"an agent id is 1 to 100 printable characters without '/' or '\\', not {shown(agent)}")
    return agent


def agent_id(given: str) -> str:
    """The agent an id given to this product names (``--agent``, a service or MCP caller's, a log
    filter), as OpenClaw 2026.9.6 takes an explicit one (its ``normalizeAgentIdStrict``): ``Main``
    is ``main`` and ``ops!`` is ``ops``, one agent however typed. An id with nothing left is refused,
    as OpenClaw refuses it, rather than taken as ``main`` (its lenient form, for config keys)."""
    normalized = _strict_agent_id(given)
    if normalized is None:
        raise UsageError("an agent id needs a letter, a digit, '_' or '-' (OpenClaw makes each run of other "
                         f"characters one '-' and refuses an id with none left), not {shown(given)}")
    return normalized


def check_session(session: str | None) -> str | None:
    """A session id as given to ``--session``: 1-100 of ``A-Za-z0-9._:-``, starting with a letter or digit."""
    if session is None:
        return None
    if not _SESSION.match(session):
        raise UsageError(
            f"a session id is 1 to 100 letters, digits, '.', '_', ':' or '-' (starting with a letter or digit), "
            f"not {shown(session)}"
        )
    return session


def openclaw_agent_id(agent: str) -> str:
    """The agent id as OpenClaw 2026.9.6 normalizes it (its ``normalizeAgentId``) wherever it matches
    an id of openclaw.json or names a folder after one: ``main`` when nothing is left."""
    return _strict_agent_id(agent) or DEFAULT_AGENT


def _strict_agent_id(agent: str) -> str | None:
    """OpenClaw's ``normalizeAgentIdStrict``: trimmed as JavaScript trims; an id of its form as it is
    (ASCII only: ``/i`` in JavaScript folds no other letter onto one of it), lowercased; else lowercased,
    each run of characters other than ``a-z0-9_-`` one ``-``, no ``-`` at either end, cut to 64
    characters (a trailing ``-`` the cut leaves is kept, as there); None when nothing is left."""
    trimmed = js_trim(agent)
    lowered = trimmed.lower()
    if re.fullmatch(OPENCLAW_ID, trimmed):
        return lowered
    return re.sub(r"[^a-z0-9_-]+", "-", lowered).strip("-")[:64] or None

"""The variables OpenClaw's own ``.env`` files add to its environment, as OpenClaw 2026.9.6 loads them.

OpenClaw takes its environment from the process, then from ``<state dir>/.env`` and, where the
state dir is its default (``~/.openclaw``, or none named), ``~/.config/openclaw/gateway.env`` (its
``loadGlobalRuntimeDotEnvFiles``): a variable the process has, even empty, is kept; else the first
file that sets it wins. So an ``OPENCLAW_WORKSPACE_DIR``, an ``OPENCLAW_CONFIG_PATH`` or a
``${NAME}`` of openclaw.json kept in ``~/.openclaw/.env`` names the same folder for OpenClaw's agent
and for this product (read without them, the memory was looked for in another workspace without a
word). A file is read as OpenClaw reads it: by its real path, a regular file of at most 1 MiB,
else left out without a word (OpenClaw's quiet load); its text is parsed by the rules of the
``dotenv`` package 17 that OpenClaw uses (:func:`parse`), and a name that is not a portable
variable name (``[A-Za-z_][A-Za-z0-9_]*``) is dropped.

Not read: the current folder's ``.env``. OpenClaw's CLI reads it less ~200 names it refuses from a
project's file (every ``OPENCLAW_*`` among them); a memory tool run from any folder would take
that folder's variables.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Mapping

from .fsutil.private import check_planted, others_may_plant

MAX_BYTES = 1 << 20  # OpenClaw's MAX_DOTENV_FILE_BYTES

# JavaScript's \s and line terminators: the parser's regular expressions are JavaScript's, and
# Python's \s, ^, $ and . differ from them (\x1c-\x1f and \x85 are space in Python only, U+FEFF
# in JavaScript only; U+2028 and U+2029 end a line there).
_SPACE = "\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000\ufeff"
_S = f"[{_SPACE}]"
_ENDS = "\n\r\u2028\u2029"
_BOL = rf"(?:\A|(?<=[{_ENDS}]))"
_EOL = rf"(?=[{_ENDS}]|\Z)"
# dotenv 17.4.2's LINE, written for Python's re with JavaScript's meaning (flags m and g). Compiled
# when a file is there to parse (1.3 ms: most commands meet none).
_LINE = (rf"{_BOL}{_S}*(?:export{_S}+)?([A-Za-z0-9_.-]+)(?:{_S}*={_S}*?|:{_S}+?)"
         rf"({_S}*'(?:\\'|[^'])*'|{_S}*\"(?:\\\"|[^\"])*\"|{_S}*`(?:\\`|[^`])*`|[^#\r\n]+)?"
         rf"{_S}*(?:#[^{_ENDS}]*)?{_EOL}")
_QUOTED = rf"{_BOL}(['\"`])([\s\S]*)\1{_EOL}"
_PORTABLE = r"[A-Za-z_][A-Za-z0-9_]*\Z"


def parse(text: str) -> dict[str, str]:
    """``KEY=value`` lines as the ``dotenv`` package parses them (``export`` before, ``KEY: value``,
    a ``#`` comment after, a value in single, double or back quotes, a double-quoted one over several
    lines with ``\\n`` and ``\\r`` expanded; a later line wins over an earlier one), portable names only."""
    found: dict[str, str] = {}
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    for m in re.finditer(_LINE, text):
        value = (m.group(2) or "").strip(_SPACE)
        quote = value[:1]
        value = re.sub(_QUOTED, r"\2", value)
        if quote == '"':
            value = value.replace("\\n", "\n").replace("\\r", "\r")
        found[m.group(1)] = value
    return {key: value for key, value in found.items() if re.match(_PORTABLE, key)}


class FromFiles(dict):
    """An environment some of whose variables came from OpenClaw's ``.env`` files: ``files`` names
    the file of each (a message about a value says where it was set: the shell has no such variable)."""

    files: dict[str, str]


def where_set(name: str, env: Mapping[str, str]) -> str:
    """``from NAME``, and the ``.env`` file that set it where one did."""
    return f"from {name}{set_in(name, env)}"


def set_in(name: str, env: Mapping[str, str]) -> str:
    """`` in FILE``: the ``.env`` file that set ``name``; empty where the environment did (or none)."""
    files = env.files if isinstance(env, FromFiles) else {}
    return f" in {files[name]}" if name in files else ""


def with_dotenv(env: Mapping[str, str], state_dir: str, state_dir_named: bool, home: str | None) -> Mapping[str, str]:
    """``env`` with what OpenClaw's global ``.env`` files add to it: those of ``state_dir`` (as named,
    before links are followed: ``state_dir_named`` when ``OPENCLAW_STATE_DIR`` or ``--state-dir``
    named it) and of OpenClaw's ``home`` (None: there is none to tell)."""
    paths = [os.path.join(state_dir, ".env")]
    if home is not None and (not state_dir_named
                             or os.path.abspath(paths[0]) == os.path.abspath(os.path.join(home, ".openclaw", ".env"))):
        paths.append(os.path.join(home, ".config", "openclaw", "gateway.env"))
    added: dict[str, tuple[str, str]] = {}
    for path in paths:
        for key, value in _read(path).items():
            added.setdefault(key, (value, path))
    fresh = {key: found for key, found in added.items() if key not in env}
    if not fresh:
        return env
    merged = FromFiles({**env, **{key: value for key, (value, _) in fresh.items()}})
    merged.files = {key: path for key, (_, path) in fresh.items()}
    return merged


def _read(path: str) -> dict[str, str]:
    """The variables of the file at ``path``; none where it is missing, unreadable, not a regular
    file or over ``MAX_BYTES`` (OpenClaw leaves such a file out without a word).

    In a folder another user may add files to (a 1777 state dir) the file is refused
    (StateDirUnsafe) unless it is this user's (or root's) and closed to others' writes, as the
    descriptor opened says, and it is never read through a symbolic link there: another user's
    ``.env`` chose the Qdrant server the notes were sent to. OpenClaw reads it all the same."""
    guarded, named = False, path
    try:
        folder = os.path.realpath(os.path.dirname(path) or ".")
        guarded = others_may_plant(folder)
        named = os.path.join(folder, os.path.basename(path))
        fd = os.open(named if guarded else os.path.realpath(path),
                     os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_NOFOLLOW if guarded else 0))
    except OSError as exc:
        if guarded and exc.errno == errno.ELOOP:
            try:
                check_planted("config file", named, os.lstat(named))  # a link: refused
            except FileNotFoundError:
                pass
        return {}
    except ValueError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return {}
        if guarded:
            check_planted("config file", named, st)
        data = os.read(fd, MAX_BYTES + 1)
        while len(data) <= MAX_BYTES and (more := os.read(fd, MAX_BYTES + 1 - len(data))):
            data += more
    except OSError:
        return {}
    finally:
        os.close(fd)
    return {} if len(data) > MAX_BYTES else parse(data.decode("utf-8", "replace"))

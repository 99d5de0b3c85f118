"""The archive's manifest (``manifest.json``, its first member): what it holds, checked before use.

Every other member is listed with its size and xxh3_128 hash; each memory file names its root
(``workspace`` or ``extra/N``, the N-th extra path), its path below it, its member and its
permission bits (``mode``, at most ``0o777``: a private note stays private where it is imported);
each path with a history lists its versions oldest first, as the version log holds them, each with
the permission bits the history saw it with (``null`` where it saw none) and what the log knows of
it besides its path's (``name``: the root and path it was logged under, a moved file's entries
keeping the name they had then; ``movedFrom``: a move's source; ``previous``: the version the
path logged before it, what ``log`` counts its lines against; ``arrivedBy``: for an entry a move
brought to the path, how many of the path's entries precede that move's arrival; each ``null``
where there is none); each folder below a root
that holds an exported file is listed with its root, its path and its permission bits (``folders``:
import makes a folder it has to make with them, so a private ``memory/priv/`` stays private; an
archive without the list, an older export's, is read too). Nothing in it is
trusted: :func:`parse` checks every field's type and form, every name against the member-name
rules, sizes against the limits, and that the files, the history and the members agree.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from ..errors import UsageError
from ..history.versions import ORIGINS, iso_time
from ..settings import agent_id, check_agent, check_session

FORMAT = "openclaw-memory-export"
FORMAT_VERSION = 2  # 2: each version's name, movedFrom, previous and arrivedBy (format 1 re-filed every
# version of a moved file under its current name: `log` after an import rewrote where things were)
READS = (1, FORMAT_VERSION)  # a format-1 archive (0.1.0's backups) is read as it was: each version under its path
MANIFEST = "manifest.json"
WORKSPACE = "workspace"
# What import holds or reads at most: the manifest is parsed whole; a member and the whole archive
# are counted as they stream (a member's header and the manifest both declare its size first).
MANIFEST_LIMIT = 64 << 20
MEMBER_LIMIT = 1 << 30
TOTAL_LIMIT = 16 << 30
_HASH = re.compile(r"[0-9a-f]{32}")
_EXTRA = re.compile(r"extra/(0|[1-9][0-9]{0,3})")
PERMISSIONS = 0o777  # the bits an archive carries: never set-id or sticky


class Refusal(Exception):
    """What is wrong with an archive (``member``: which member, "" for the archive as a whole);
    the importer words it with the archive's name (:class:`~openclaw_memory.errors.ImportRefused`)."""

    def __init__(self, problem: str, member: str = ""):
        super().__init__(problem)
        self.problem, self.member = problem, member


@dataclass(frozen=True)
class Member:
    name: str
    size: int
    hash: str  # xxh3_128 of its bytes


@dataclass(frozen=True)
class Root:
    name: str  # "workspace" or "extra/N"
    path: str  # where it was on the exporting machine (shown, never used to write)


@dataclass(frozen=True)
class FileRecord:
    root: str
    path: str  # below the root, "/"-separated; "" for an extra path that is the file itself
    member: str
    mode: int  # its permission bits when it was exported (& PERMISSIONS)


@dataclass(frozen=True)
class FolderRecord:
    root: str
    path: str  # below the root, "/"-separated, never ""
    mode: int  # its permission bits when it was exported (& PERMISSIONS)


@dataclass(frozen=True)
class Version:
    version: str
    time: float
    size: int
    origin: str
    agent: str | None
    session: str | None
    mode: int | None = None  # the permission bits the history saw it with (& PERMISSIONS); None: none seen
    name: tuple[str, str] | None = None  # (root, path) it was logged under; None: its history's own path
    moved_from: tuple[str, str] | None = None  # a move's source (root, path); None: not a move, or none logged
    previous: str | None = None  # the version its path logged before it (``log``'s counts); None: none
    arrived_by: int | None = None  # brought by a move: how many of its path's entries precede that arrival


@dataclass(frozen=True)
class PathHistory:
    root: str
    path: str
    versions: tuple[Version, ...]  # oldest first


@dataclass(frozen=True)
class ArchiveManifest:
    product: str
    agent: str
    created: str
    roots: tuple[Root, ...]
    members: tuple[Member, ...]
    files: tuple[FileRecord, ...]
    history: tuple[PathHistory, ...]
    folders: tuple[FolderRecord, ...] = ()
    format_version: int = FORMAT_VERSION  # the format it was read in (1: no version names its previous one)

    def to_bytes(self) -> bytes:
        body = {
            "format": FORMAT, "formatVersion": FORMAT_VERSION, "product": self.product, "agent": self.agent,
            "created": self.created,
            "roots": [{"name": r.name, "path": r.path} for r in self.roots],
            "members": [{"name": m.name, "size": m.size, "hash": m.hash} for m in self.members],
            "files": [{"root": f.root, "path": f.path, "member": f.member, "mode": f.mode} for f in self.files],
            "history": [{"root": h.root, "path": h.path, "versions": [
                {"version": v.version, "time": v.time, "size": v.size, "origin": v.origin, "agent": v.agent,
                 "session": v.session, "mode": v.mode, "name": _place_json(v.name), "movedFrom": _place_json(v.moved_from),
                 "previous": v.previous, "arrivedBy": v.arrived_by} for v in h.versions]} for h in self.history],
            "folders": [{"root": d.root, "path": d.path, "mode": d.mode} for d in self.folders],
        }
        # ASCII only: a file name that is not UTF-8 travels as its \\udcXX escapes and comes back exactly.
        return json.dumps(body, ensure_ascii=True, indent=1, allow_nan=False).encode("ascii")

    def member(self, name: str) -> Member:
        return self._by_name[name]

    @cached_property
    def _by_name(self) -> dict[str, Member]:
        """Each member by name (a look-up per file went through the list: 20,000 files took 2.4 s,
        the 300,000 a manifest may list hours)."""
        return {m.name: m for m in self.members}


def _place_json(place: tuple[str, str] | None) -> dict | None:
    return None if place is None else {"root": place[0], "path": place[1]}


def file_member(root: str, path: str, basename: str) -> str:
    """A memory file's member name: ``files/PATH`` for the workspace's, ``extra/N/PATH`` for an extra path's."""
    below = path or basename
    return f"files/{below}" if root == WORKSPACE else f"{root}/{below}"


def object_member(version: str) -> str:
    return f"objects/{version}"


def check_relative(path: str, *, empty: bool = False) -> str:
    """A path below a root as an archive may name it: "/"-separated, every component a plain name
    (no "", ".", "..", no NUL or backslash), never absolute. Refusal otherwise."""
    if path == "" and empty:
        return path
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\x00" in path or "\\" in path:
        raise Refusal(f"the path {json.dumps(path)} is not a plain relative path (absolute, '..', '.' or empty parts)")
    return path


def check_member_name(name: str) -> str:
    """``manifest.json``, ``files/PATH``, ``extra/N/PATH`` or ``objects/HASH``; nothing else."""
    if name == MANIFEST:
        return name
    head, _, rest = name.partition("/")
    if head == "objects" and _HASH.fullmatch(rest):
        return name
    if head == "files":
        check_relative(rest)
        return name
    if head == "extra":
        number, _, below = rest.partition("/")
        if _EXTRA.fullmatch(f"extra/{number}"):
            check_relative(below)
            return name
    raise Refusal(f"the member name {json.dumps(name)} is none an export writes", name)


# A manifest's JSON values, counted outside its strings (each ``,``, ``[`` and ``{``): an export's
# has one every 17 bytes or more (24 as it writes it, indented), and Python's parse holds each value
# in 8 to 80 bytes. One past a value every DENSE bytes is refused before it is parsed: 64 MiB of
# ``[],`` (a 65 KB archive) took 1.7 GB to parse; what passes takes at most about 8 times its size
# (an export's own, about 4). Checked past DENSE_FROM bytes only: less costs little whatever it holds.
DENSE = 8
DENSE_FROM = 1 << 20
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def _refuse_dense(data: bytes) -> None:
    if len(data) <= DENSE_FROM:
        return
    outside = _STRING.sub(b'""', data)
    values = outside.count(b",") + outside.count(b"[") + outside.count(b"{")
    if values * DENSE > len(data):
        raise Refusal(f"its manifest holds {values:,} JSON values in {len(data):,} bytes, far more than an export's "
                      f"(one every {DENSE} bytes at most)", MANIFEST)


def parse(data: bytes) -> ArchiveManifest:
    _refuse_dense(data)
    try:
        body = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refusal(f"its manifest is not JSON ({exc})", MANIFEST) from None
    except RecursionError:  # arrays or objects nested past the parser's depth: a traceback, exit 1
        raise Refusal("its manifest is nested too deeply to be an export's", MANIFEST) from None
    body = _obj(body, "the manifest")
    if body.get("format") != FORMAT:
        raise Refusal(f"its manifest is not an openclaw-memory export's (format {json.dumps(body.get('format'))[:60]})",
                      MANIFEST)
    version = body.get("formatVersion")
    if type(version) is not int or version not in READS:
        raise Refusal(f"it is export format {json.dumps(version)[:20]}; this release reads formats "
                      f"{' and '.join(map(str, READS))} only (another release made it)", MANIFEST)
    roots = tuple(Root(_root(_str(r, "name")), _str(r, "path")) for r in _list(body, "roots"))
    members = tuple(_member(m) for m in _list(body, "members"))
    files = tuple(_file(f) for f in _list(body, "files"))
    history = tuple(_history(h) for h in _list(body, "history"))
    folders = tuple(_folder(d) for d in _list(body, "folders")) if "folders" in body else ()
    manifest = ArchiveManifest(_str(body, "product"), _agent(body), _str(body, "created"), roots, members, files, history,
                               folders, version)
    _agree(manifest)
    return manifest


def _agree(m: ArchiveManifest) -> None:
    """The manifest's parts name the same things: one member per name, within the limits; each file
    its own member, in a declared root, at most once per path; each object named by its own hash
    and of the size the history gives its version."""
    names = [mem.name for mem in m.members]
    if len(set(names)) != len(names) or MANIFEST in names:
        raise Refusal("its manifest lists a member twice", MANIFEST)
    big = next((mem for mem in m.members if mem.size > MEMBER_LIMIT), None)
    if big is not None:
        raise Refusal(f"a member of {big.size:,} bytes is past the limit of {MEMBER_LIMIT:,}", big.name)
    total = sum(mem.size for mem in m.members)
    if total > TOTAL_LIMIT:
        raise Refusal(f"its members hold {total:,} bytes, past the limit of {TOTAL_LIMIT:,}")
    by_name = {mem.name: mem for mem in m.members}
    roots = {r.name for r in m.roots}
    if WORKSPACE not in roots or len(roots) != len(m.roots):
        raise Refusal("its manifest's roots are not the workspace and distinct extra paths", MANIFEST)
    placed: set[tuple[str, str]] = set()
    used: set[str] = set()
    for f in m.files:
        if f.root not in roots or (f.root == WORKSPACE and not f.path):
            raise Refusal(f"its manifest places {json.dumps(f.path)} in an undeclared root {json.dumps(f.root)}", MANIFEST)
        if f.member not in by_name or f.member in used or (f.root, f.path) in placed or not f.member.startswith(
                ("files/", "extra/")):
            raise Refusal(f"its manifest's file {json.dumps(f.path)} does not name a member of its own", MANIFEST)
        if f.member != file_member(f.root, f.path, f.member.rsplit("/", 1)[-1]):
            raise Refusal(f"its manifest's file {json.dumps(f.path)} and its member name disagree", f.member)
        placed.add((f.root, f.path))
        used.add(f.member)
    sizes: dict[str, int] = {}
    for h in m.history:
        if h.root not in roots:
            raise Refusal(f"its manifest gives {json.dumps(h.path)} a history in an undeclared root", MANIFEST)
        for v in h.versions:
            if sizes.setdefault(v.version, v.size) != v.size:
                raise Refusal(f"its manifest gives version {v.version[:12]} two sizes", MANIFEST)
            if any(place is not None and place[0] not in roots for place in (v.name, v.moved_from)):
                raise Refusal(f"its manifest names a version of {json.dumps(h.path)} in an undeclared root", MANIFEST)
            if v.arrived_by is not None and v.arrived_by > len(h.versions):
                raise Refusal(f"its manifest's arrivedBy {v.arrived_by} is past the {len(h.versions)} versions of "
                              f"{json.dumps(h.path)}", MANIFEST)
    if len({(h.root, h.path) for h in m.history}) != len(m.history):
        raise Refusal("its manifest lists a path's history twice", MANIFEST)
    for d in m.folders:
        if d.root not in roots:
            raise Refusal(f"its manifest gives the folder {json.dumps(d.path)} an undeclared root", MANIFEST)
    if len({(d.root, d.path) for d in m.folders}) != len(m.folders):
        raise Refusal("its manifest lists a folder twice", MANIFEST)
    for mem in m.members:
        if mem.name.startswith("objects/"):
            version = mem.name.removeprefix("objects/")
            if mem.hash != version or sizes.get(version) != mem.size:  # and a version some history lists
                raise Refusal("its manifest gives a stored version another hash or size than its name and history, "
                              "or no history lists it", mem.name)
        elif mem.name not in used:
            raise Refusal("its manifest lists a member that is no file's", mem.name)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _obj(value: object, what: str) -> dict:
    if not isinstance(value, dict):
        raise Refusal(f"{what} is not a JSON object", MANIFEST)
    return value


def _list(body: dict, key: str) -> list[dict]:
    value = body.get(key)
    if not isinstance(value, list):
        raise Refusal(f"its manifest's {key} is not a list", MANIFEST)
    return [_obj(item, f"an item of its manifest's {key}") for item in value]


def _str(body: dict, key: str, *, optional: bool = False) -> str:
    value = body.get(key)
    if optional and value is None:
        return None  # type: ignore[return-value]  # only where the field is declared str | None
    if not isinstance(value, str):
        raise Refusal(f"its manifest's {key} {json.dumps(value)[:40]} is not a string", MANIFEST)
    return value


def _int(body: dict, key: str, what: str = "a count of bytes") -> int:
    value = body.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise Refusal(f"its manifest's {key} {json.dumps(value)[:40]} is not {what}", MANIFEST)
    return value


def _hash(body: dict, key: str) -> str:
    value = _str(body, key)
    if not _HASH.fullmatch(value):
        raise Refusal(f"its manifest's {key} {json.dumps(value)[:40]} is not an xxh3_128 hash", MANIFEST)
    return value


def _root(name: str) -> str:
    if name != WORKSPACE and not _EXTRA.fullmatch(name):
        raise Refusal(f"its manifest names a root {json.dumps(name)[:40]} (workspace or extra/N)", MANIFEST)
    return name


def _member(body: dict) -> Member:
    return Member(check_member_name(_str(body, "name")), _int(body, "size"), _hash(body, "hash"))


def _file(body: dict) -> FileRecord:
    root = _root(_str(body, "root"))
    return FileRecord(root, check_relative(_str(body, "path"), empty=root != WORKSPACE),
                      check_member_name(_str(body, "member")), _mode(body))


def _folder(body: dict) -> FolderRecord:
    return FolderRecord(_root(_str(body, "root")), check_relative(_str(body, "path")), _mode(body))


def _mode(body: dict, *, optional: bool = False) -> int:
    """Permission bits, 0 to 0o777 (an export never writes set-id or sticky bits: refused, never
    masked, as any other field an export never writes)."""
    value = body.get("mode")
    if optional and value is None:
        return None  # type: ignore[return-value]  # only where the field is declared int | None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= PERMISSIONS:
        raise Refusal(f"its manifest's mode {json.dumps(value)[:40]} is not permission bits (0 to 0o777)", MANIFEST)
    return value


def _agent(body: dict) -> str:
    agent = _who(body, "agent", _recorded_agent)
    if agent is None:
        raise Refusal("its manifest names no agent", MANIFEST)
    return agent


def _recorded_agent(value: str) -> str:
    """An agent id of an archive as this product records one: held to a record's rules, then
    normalized as ``--agent`` is (``Ops`` is ``ops``, as an older release recorded ``--agent Ops``:
    logged as it was, ``log --agent ops`` and ``log --agent Ops`` found none of it); an id with
    nothing left is refused, as ``--agent`` refuses it."""
    return agent_id(check_agent(value))


def _who(body: dict, field: str, check: Callable[[str], str | None]) -> str | None:
    """An agent or session id, held to the rules ``--agent`` and ``--session`` are (and an agent's
    normalized as theirs is): the log prints them as they are, and an archive's escape sequences or
    line breaks would be written to the terminal of whoever runs ``log`` or ``history`` (a forged
    line, a hidden one)."""
    value = _str(body, field, optional=True)
    if value is None:
        return None
    try:
        return check(value)
    except UsageError as exc:
        rule = exc.message.split(", not ")[0]  # the rule without the value as the command line shows it
        raise Refusal(f"its manifest's {field} {json.dumps(value)[:60]} is refused: {rule}", MANIFEST) from None


def _place(body: dict, key: str) -> tuple[str, str] | None:
    """A name a version was logged under (``name``, ``movedFrom``): a root and a path below it, or null."""
    value = body.get(key)
    if value is None:
        return None
    place = _obj(value, f"its manifest's {key}")
    root = _root(_str(place, "root"))
    return root, check_relative(_str(place, "path"), empty=root != WORKSPACE)


def _history(body: dict) -> PathHistory:
    root = _root(_str(body, "root"))
    path = check_relative(_str(body, "path"), empty=root != WORKSPACE)
    versions = []
    now = time.time()
    for v in _list(body, "versions"):
        when = v.get("time")
        if not isinstance(when, (int, float)) or isinstance(when, bool) or not 0 <= when < 1e11:
            raise Refusal(f"its manifest's time {json.dumps(when)[:40]} is not a time", MANIFEST)
        if when > now:
            # Logged here, a version from the future orders after every later write: a rollback to a
            # moment after the import took the file for holding its version before (the log's order
            # and its times disagree), and `log` lists it first for centuries.
            raise Refusal(f"its manifest dates a version of {json.dumps(path)[:80]} {iso_time(when)}, later than now "
                          f"({iso_time(now)}; is the exporting machine's clock ahead?)", MANIFEST)
        origin = _str(v, "origin")
        if origin not in ORIGINS:
            raise Refusal(f"its manifest's origin {json.dumps(origin)[:40]} is not one of {', '.join(ORIGINS)}", MANIFEST)
        versions.append(Version(_hash(v, "version"), float(when), _int(v, "size"), origin,
                                _who(v, "agent", _recorded_agent), _who(v, "session", check_session), _mode(v, optional=True),
                                _place(v, "name"), _place(v, "movedFrom"),
                                None if v.get("previous") is None else _hash(v, "previous"),
                                None if v.get("arrivedBy") is None else _int(v, "arrivedBy", "a count of entries")))
    return PathHistory(root, path, tuple(versions))

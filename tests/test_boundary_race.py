"""The workspace boundary under a real symlink-swap race.

A separate process swaps a folder under the workspace with a symlink to an outside
folder in a tight loop (``renameat2(RENAME_EXCHANGE)``: both names always exist, one
is the real folder, the other the symlink), while the product works under it: the CLI
(``read``, ``write``, ``restore``, ``history``, ``state``, ``doctor --fix``'s merge,
``watchdog snapshot``) and a real MCP client session (``memory_get``, ``memory_write``).

Counted: escapes (an outside file created, changed, read or stored in the history),
tracebacks, temp files left anywhere. All must be 0; a refused operation is fine and
must say the path changed while in use (or went through a symlink).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import io
import json
import os
import subprocess
import sys
import textwrap
import traceback
import zlib
from pathlib import Path

import pytest
import xxhash

from conftest import fault, write

RENAME_EXCHANGE = 2
OUTSIDE_MARK = "OUTSIDE-SECRET-7f3a"
OUTSIDE_ONLY = "OUTSIDE-ONLY.md"
# Moderate counts: the machine has 2 cores and the swapper keeps one busy.
# OPENCLAW_TEST_RACE_SCALE multiplies them for a longer hunt.
_SCALE = max(1, int(os.environ.get("OPENCLAW_TEST_RACE_SCALE", "1")))
READS, WRITES, RESTORES, HISTORIES, STATES, MCP_GETS, MCP_WRITES, MERGES, SNAPSHOTS = (
    n * _SCALE for n in (150, 100, 30, 30, 10, 150, 60, 20, 6)
)

SWAPPER = textwrap.dedent("""
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    fn = libc.renameat2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    AT_FDCWD = -100
    pairs = [(a.encode(), b.encode()) for a, b in zip(sys.argv[2::2], sys.argv[3::2])]
    stop = sys.argv[1]
    n = 0
    while not os.path.exists(stop):
        for a, b in pairs:
            fn(AT_FDCWD, a, AT_FDCWD, b, 2)
        n += 1
    print(n)
""")


def renameat2_works(tmp: Path) -> str | None:
    """None when RENAME_EXCHANGE works here, else why not (the test skips)."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return "libc has no renameat2"
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    (tmp / "probe-a").mkdir()
    (tmp / "probe-b").symlink_to(tmp)
    if fn(-100, str(tmp / "probe-a").encode(), -100, str(tmp / "probe-b").encode(), RENAME_EXCHANGE) != 0:
        return f"renameat2(RENAME_EXCHANGE) fails here: {os.strerror(ctypes.get_errno())}"
    return None


def exchange(a: Path, b: Path) -> None:
    fn = ctypes.CDLL(None, use_errno=True).renameat2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(-100, str(a).encode(), -100, str(b).encode(), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2", str(a))


def tree(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` (not following symlinks) with its bytes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, folder)] = os.readlink(path).encode() if os.path.islink(path) else Path(path).read_bytes()
    return out


def temp_files(*folders: Path) -> list[str]:
    found = []
    for folder in folders:
        for dirpath, _, filenames in os.walk(folder):
            found += [os.path.join(dirpath, n) for n in filenames if n.endswith(".tmp")]
    return found


class Tally:
    def __init__(self):
        self.runs = 0
        self.refused = 0
        self.tracebacks: list[str] = []
        self.escapes: list[str] = []
        self.bad_exits: list[str] = []

    def cli(self, args: list[str], ok=(0,), refused=(2,)) -> tuple[int, str, str]:
        """Run the CLI entry point in this process (as ``python -m openclaw_memory`` does)."""
        from openclaw_memory.cli.main import main

        out, err = io.StringIO(), io.StringIO()
        self.runs += 1
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(args)
        except BaseException:  # anything escaping main is a traceback the user would see
            self.tracebacks.append(f"{args}: {traceback.format_exc()}")
            return -1, out.getvalue(), err.getvalue()
        if "Traceback" in err.getvalue():
            self.tracebacks.append(f"{args}: {err.getvalue()}")
        if OUTSIDE_MARK in out.getvalue() or OUTSIDE_ONLY in out.getvalue():
            self.escapes.append(f"{args} showed outside content: {out.getvalue()[:200]}")
        if rc in refused:
            self.refused += 1
            if not any(w in err.getvalue() for w in ("changed while in use", "symlink", "changed since", "changed while")):
                self.bad_exits.append(f"{args} refused without saying why: {err.getvalue()}")
        elif rc not in ok:
            self.bad_exits.append(f"{args} exit {rc}: {err.getvalue()}")
        return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def arena(tmp_path, monkeypatch):
    why = renameat2_works(tmp_path)
    if why:
        pytest.skip(why)
    ws, state, outside, outside2 = (tmp_path / n for n in ("ws", "state", "outside", "outside2"))
    for folder in (ws, state, outside, outside2):
        folder.mkdir()
    write(ws / "MEMORY.md", "# Memory\n")
    write(ws / "memory/sub/secret.md", "inside secret\n")
    write(outside / "secret.md", f"{OUTSIDE_MARK}\n")
    write(outside / OUTSIDE_ONLY, f"{OUTSIDE_MARK} only outside\n")
    write(outside / "r.md", f"{OUTSIDE_MARK} restore target\n")
    (ws / "memory/evil").symlink_to(outside, target_is_directory=True)
    (ws / ".openclaw-repair/root-memory").mkdir(parents=True)
    (ws / ".openclaw-repair/evil").symlink_to(outside2, target_is_directory=True)
    monkeypatch.setenv("OPENCLAW_WORKSPACE", str(ws))
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    monkeypatch.chdir(ws)
    return ws, state, outside, outside2


@contextlib.contextmanager
def swapping(ws: Path, *pairs: tuple[str, str]):
    stop = ws.parent / "stop-swapping"
    args = [str(stop)] + [str(ws / p) for pair in pairs for p in pair]
    proc = subprocess.Popen([sys.executable, "-c", SWAPPER, *args], stdout=subprocess.PIPE, text=True)
    try:
        yield
    finally:
        stop.touch()
        out, _ = proc.communicate(timeout=60)
        stop.unlink()
        assert int(out.strip()) > 0, "the swapper never ran"
        for real, link in pairs:  # leave each real folder under its own name
            if os.path.islink(ws / real):
                exchange(ws / real, ws / link)


def history_objects(state: Path) -> list[bytes]:
    objects = []
    for path in state.rglob("*.z"):
        with contextlib.suppress(zlib.error):
            objects.append(zlib.decompress(path.read_bytes()))
    return objects


def test_cli_reads_writes_restores_and_history_never_leave_the_workspace(arena):
    ws, state, outside, outside2 = arena
    before = tree(outside)
    t = Tally()
    # Two versions of a file to restore between, made before the race starts.
    t.cli(["write", "memory/sub/r.md", "--append", "version one"])
    t.cli(["read", "memory/sub/r.md"])
    t.cli(["write", "memory/sub/r.md", "--append", "version two"])
    versions = json.loads(t.cli(["history", "memory/sub/r.md", "--json"])[1])["versions"]
    wanted = [v["version"] for v in versions]
    assert len(wanted) == 2 and not t.tracebacks

    with swapping(ws, ("memory/sub", "memory/evil")):
        for _ in range(READS):
            rc, out, _ = t.cli(["read", "memory/sub/secret.md", "--json"])
            if rc == 0 and json.loads(out)["text"] not in ("inside secret", ""):
                t.escapes.append(f"read returned {out[:100]}")
        for i in range(WRITES):
            t.cli(["write", f"memory/sub/n{i}.md", "--append", f"note {i}"], refused=(2, 3))
        for i in range(RESTORES):
            t.cli(["restore", "memory/sub/r.md", wanted[i % 2][:12]], refused=(2, 3))
        for _ in range(HISTORIES):
            rc, out, _ = t.cli(["history", "memory/sub/secret.md", "--json"])
        for _ in range(STATES):
            t.cli(["state", "--json"])
            t.cli(["files", "--json"])
        for _ in range(SNAPSHOTS):
            t.cli(["watchdog", "snapshot"])

    outside_versions = {xxhash.xxh3_128_hexdigest(b) for b in before.values()}
    for rc_out in (t.cli(["history", "memory/sub/secret.md", "--json"])[1], t.cli(["history", "memory/sub/r.md", "--json"])[1]):
        if any(v in rc_out for v in outside_versions):
            t.escapes.append("an outside file's version is in the history")
    if any(OUTSIDE_MARK.encode() in obj for obj in history_objects(state)):
        t.escapes.append("outside content stored in the history")
    from openclaw_memory.settings import Overrides, resolve_settings
    from openclaw_memory.watchdog.store import SnapshotStore

    baseline = SnapshotStore(resolve_settings(Overrides(), environ=dict(os.environ)).data_dir).baseline()
    if any(OUTSIDE_ONLY in p for p in baseline.paths):
        t.escapes.append("the watchdog recorded an outside file")
    after = tree(outside)
    if after != before:
        t.escapes.append(f"outside changed: {sorted(set(after) ^ set(before)) or 'contents'}")

    print(f"\nboundary race (CLI): {t.runs} runs, {t.refused} refused, {len(t.escapes)} escapes, {len(t.tracebacks)} tracebacks")
    assert t.escapes == []
    assert t.tracebacks == []
    assert t.bad_exits == []
    assert temp_files(ws, outside, outside2, state) == []
    written = [i for i in range(WRITES) if (ws / f"memory/sub/n{i}.md").exists()]
    assert written, "every write was refused: the race test tested nothing"
    for i in written:
        assert (ws / f"memory/sub/n{i}.md").read_text() == f"note {i}\n"


def test_doctor_merge_never_archives_outside(arena):
    ws, state, outside, outside2 = arena
    t = Tally()
    merged = 0
    with swapping(ws, (".openclaw-repair/root-memory", ".openclaw-repair/evil")):
        for i in range(MERGES):
            write(ws / "MEMORY.md", f"# Memory {i}\n")
            write(ws / "memory.md", f"legacy text {i}\n")
            rc, out, err = t.cli(["doctor", "--fix"], ok=(0, 1), refused=())
            if not (ws / "memory.md").exists():
                merged += 1
    if tree(outside2) != {}:
        t.escapes.append(f"the doctor wrote outside: {sorted(tree(outside2))}")
    print(f"\nboundary race (doctor): {t.runs} merges, {merged} done, {len(t.escapes)} escapes, {len(t.tracebacks)} tracebacks")
    assert t.escapes == [] and t.tracebacks == [] and t.bad_exits == []
    assert temp_files(ws, outside2, state) == []
    archived = list((ws / ".openclaw-repair/root-memory").rglob("memory.md"))
    assert len(archived) == merged  # every merge that happened left its archive inside


def test_mcp_get_and_write_never_leave_the_workspace(arena):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    ws, state, outside, outside2 = arena
    before = tree(outside)
    counts = {"get": 0, "write": 0, "refused": 0, "escapes": [], "unexplained": []}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "openclaw_memory", "mcp", "-w", str(ws), "--state-dir", str(state)],
        env={**{k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        cwd=str(ws),
    )

    def text_of(result) -> str:
        return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")

    def judge(result, kind: str) -> None:
        text = text_of(result)
        if OUTSIDE_MARK in text:
            counts["escapes"].append(f"{kind}: {text[:100]}")
        if result.is_error:
            counts["refused"] += 1
            if not any(w in text for w in ("changed while in use", "symlink")):
                counts["unexplained"].append(text)

    async def script(session):
        for _ in range(MCP_GETS):
            counts["get"] += 1
            judge(await session.call_tool("memory_get", {"path": "memory/sub/secret.md"}), "get")
        for i in range(MCP_WRITES):
            counts["write"] += 1
            judge(await session.call_tool("memory_write", {"path": f"memory/sub/m{i}.md", "content": f"mcp {i}\n"}), "write")

    async def main():
        async with stdio_client(params) as (read, write_stream):
            async with ClientSession(read, write_stream) as session:
                await session.initialize()
                with swapping(ws, ("memory/sub", "memory/evil")):
                    await script(session)

    asyncio.run(asyncio.wait_for(main(), timeout=600))
    if tree(outside) != before:
        counts["escapes"].append("outside changed")
    if any(OUTSIDE_MARK.encode() in obj for obj in history_objects(state)):
        counts["escapes"].append("outside content stored in the history")
    print(f"\nboundary race (MCP): {counts['get']} gets, {counts['write']} writes, {counts['refused']} refused, "
          f"{len(counts['escapes'])} escapes")
    assert counts["escapes"] == [] and counts["unexplained"] == []
    assert temp_files(ws, outside, state) == []
    assert any((ws / f"memory/sub/m{i}.md").exists() for i in range(MCP_WRITES))


# The same swap, made deterministically at the worst moment: right after the path was
# checked (every folder a real folder) and before it is used.
SWAP_AFTER_CHECK = [
    ("read", ["read", "memory/sub/secret.md", "--json"]),
    ("read --diff", ["read", "--diff", "memory/sub/secret.md", "--json"]),
    ("write new file", ["write", "memory/sub/new.md", "--append", "new note"]),
    ("write existing file", ["write", "memory/sub/r.md", "--append", "more", "--expect", "{r}"]),
    ("restore", ["restore", "memory/sub/r.md", "{r}"]),
    ("history", ["history", "memory/sub/secret.md", "--json"]),
]


@pytest.mark.parametrize("args", [a for _, a in SWAP_AFTER_CHECK], ids=[n for n, _ in SWAP_AFTER_CHECK])
def test_folder_swapped_between_check_and_use_is_refused(arena, monkeypatch, args):
    import openclaw_memory.files.read as read_module

    ws, state, outside, outside2 = arena
    t = Tally()
    t.cli(["write", "memory/sub/r.md", "--append", "version one"])
    r = json.loads(t.cli(["history", "memory/sub/r.md", "--json"])[1])["currentVersion"]
    before, inside = tree(outside), tree(ws / "memory/sub")
    original = read_module.resolve_memory_path

    def check_then_swap(*a, **k):
        resolved = original(*a, **k)
        exchange(ws / "memory/sub", ws / "memory/evil")
        return resolved

    for name in ("openclaw_memory.files.read", "openclaw_memory.history.placing", "openclaw_memory.history.diff"):
        monkeypatch.setattr(f"{name}.resolve_memory_path", check_then_swap)
    rc, out, err = t.cli([a.replace("{r}", r) for a in args], refused=(2,))
    exchange(ws / "memory/sub", ws / "memory/evil")
    assert (rc, t.tracebacks) == (2, []), (out, err)
    assert "changed while in use" in err
    assert tree(outside) == before and tree(ws / "memory/sub") == inside
    assert temp_files(ws, outside, state) == []
    assert not any(OUTSIDE_MARK.encode() in obj for obj in history_objects(state))


def test_a_link_swapped_for_a_folder_inside_realpath_is_refused_as_a_link(arena, monkeypatch):
    """Python 3.11's os.path.realpath raises EINVAL when a link it lstat'ed is a folder by its readlink
    (3.13 keeps the name): a write racing the swap said "error: Invalid argument (ws/memory/sub)"."""
    ws, _state, outside, _ = arena

    realpath = os.path.realpath

    def swapped_inside(path, *a, **k):
        if os.fspath(path).startswith(str(ws / "memory" / "evil")):
            raise OSError(22, "Invalid argument", os.fspath(path))  # as 3.11's readlink of the folder swapped in
        return realpath(path, *a, **k)

    monkeypatch.setattr(os.path, "realpath", swapped_inside)
    t = Tally()
    extra = ws.parent / "extra"  # with an extra path, a refused path is looked up again as one of its files
    extra.mkdir()
    rc, _out, err = t.cli(["write", "memory/evil/new.md", "--append", "note", "--extra", str(extra)], refused=(2,))
    assert (rc, t.tracebacks, t.bad_exits) == (2, [], []), err
    assert "symlink" in err and "Invalid argument" not in err, err
    assert not (outside / "new.md").exists()


def test_archive_folder_swapped_in_the_middle_of_a_merge_stays_inside(arena):
    """``doctor --fix`` paused after making its archive folder; the folder is then swapped for a symlink."""
    ws, state, outside, outside2 = arena
    write(ws / "memory.md", "legacy text\n")
    env = fault("merge:archive-dir=pause", env=dict(os.environ))
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "doctor", "--fix"], env=env, cwd=ws,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    assert "paused at merge:archive-dir" in line, line
    exchange(ws / ".openclaw-repair/root-memory", ws / ".openclaw-repair/evil")
    os.kill(proc.pid, __import__("signal").SIGUSR1)
    out, err = proc.communicate(timeout=120)
    exchange(ws / ".openclaw-repair/root-memory", ws / ".openclaw-repair/evil")
    assert "Traceback" not in err, err
    assert tree(outside2) == {}
    archived = list((ws / ".openclaw-repair/root-memory").rglob("memory.md"))
    assert [p.read_text() for p in archived] == ["legacy text\n"]
    assert not (ws / "memory.md").exists() and "legacy text" in (ws / "MEMORY.md").read_text()

"""Paged reads follow OpenClaw's memory_get semantics to the letter."""

from __future__ import annotations

import json
import os
from contextlib import closing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_paused, settings_for, write
from openclaw_memory import open_memory
from openclaw_memory.errors import BadValue, PathRefused
from openclaw_memory.files.jstext import truncate_utf16_safe, utf16_len
from openclaw_memory.files.read import NOTICE_CUT, read_memory_file
from openclaw_memory.files.window import NOTICE_NEXT, WindowScan
from openclaw_memory.wire import to_json


def read(ws, path, **kw):
    """The read's JSON as OpenClaw's ``memory_get`` gives it, without ``status`` (checked here:
    ``not_found`` exactly for a missing file) and the ``version`` this product adds (checked here too)."""
    result = read_memory_file(path, str(ws), **kw)
    out = to_json(result)
    assert out.pop("status") == ("not_found" if result.missing else "ok")
    assert out.pop("version", None) == result.version and (result.version is None) == result.missing
    return out


def test_default_window_and_continuation_notice(workspace):
    write(workspace / "MEMORY.md", "".join(f"line {i}\n" for i in range(1, 201)))
    out = read(workspace, "MEMORY.md")
    assert out["lines"] == 120 and out["from"] == 1
    assert out["truncated"] is True and out["nextFrom"] == 121
    assert out["text"].endswith("line 120\n\n[More content available. Use from=121 to continue.]")
    last = read(workspace, "MEMORY.md", from_line=121)
    assert last == {"text": "\n".join(f"line {i}" for i in range(121, 201)), "path": "MEMORY.md", "from": 121, "lines": 80}


def test_exact_keys_when_nothing_is_cut(workspace):
    write(workspace / "memory/a.md", "one\ntwo\n")
    assert read(workspace, "memory/a.md") == {"text": "one\ntwo", "path": "memory/a.md", "from": 1, "lines": 2}


def test_final_newline_is_not_an_extra_line(workspace):
    write(workspace / "memory/a.md", "one\ntwo\n")
    assert read(workspace, "memory/a.md", from_line=3) == {"text": "", "path": "memory/a.md", "from": 3, "lines": 0}
    write(workspace / "memory/b.md", "one\n\n")
    assert read(workspace, "memory/b.md")["lines"] == 2


def test_missing_file_gives_exactly_text_and_path(workspace):
    assert read(workspace, "memory/nope.md") == {"text": "", "path": "memory/nope.md"}
    assert read(workspace, "memory/no/such/dir.md") == {"text": "", "path": "memory/no/such/dir.md"}


def test_lines_dropped_to_fit_budget_give_next_from(workspace):
    write(workspace / "MEMORY.md", "aaaa\nbbbb\ncccc\n")
    out = read(workspace, "MEMORY.md", max_chars=9)
    assert out["text"] == "aaaa\nbbbb\n\n[More content available. Use from=3 to continue.]"
    assert out["lines"] == 2 and out["truncated"] is True and out["nextFrom"] == 3


def test_oversized_single_line_is_hard_cut_without_next_from(workspace):
    write(workspace / "MEMORY.md", "x" * 50 + "\nnext\n")
    out = read(workspace, "MEMORY.md", max_chars=10)
    assert out["text"] == "x" * 10 + "\n\n" + NOTICE_CUT
    assert out["truncated"] is True and "nextFrom" not in out and out["lines"] == 1


def test_hard_cut_counts_characters_not_bytes(workspace):
    write(workspace / "MEMORY.md", "é" * 30)
    out = read(workspace, "MEMORY.md", max_chars=7)
    assert out["text"].split("\n\n")[0] == "é" * 7


def test_more_remaining_only(workspace):
    write(workspace / "MEMORY.md", "a\nb\nc")
    out = read(workspace, "MEMORY.md", lines=2)
    assert out == {"text": "a\nb\n\n[More content available. Use from=3 to continue.]", "path": "MEMORY.md",
                   "from": 1, "lines": 2, "truncated": True, "nextFrom": 3}


def test_empty_text_gets_no_notice(workspace):
    write(workspace / "MEMORY.md", "a\n\nc\n")
    out = read(workspace, "MEMORY.md", from_line=2, lines=1)
    assert out == {"text": "", "path": "MEMORY.md", "from": 2, "lines": 1, "truncated": True, "nextFrom": 3}


@pytest.mark.parametrize("path,why", [
    ("notes.md", "not a memory path"),
    ("memory/a.txt", "not a Markdown"),
    ("memory.md", "legacy root"),
    ("../outside.md", "not a memory path"),
    ("memory/../../outside.md", "not a memory path"),
    ("~/MEMORY.md", "'~' is not expanded"),
    ("memory\\a.md", "backslash"),
    (".openclaw-repair/root-memory/x/memory.md", "not a memory path"),
    ("memory/.openclaw-repair/x.md", ".openclaw-repair"),
])
def test_refused_paths(workspace, path, why):
    write(workspace / "notes.md", "x")
    with pytest.raises(PathRefused, match=why):
        read_memory_file(path, str(workspace))


def test_a_name_starting_with_a_tilde_is_a_name(workspace):
    """`~` is not expanded, as OpenClaw reads a path: a folder `~` (or a file `~b.md`) of an extra path
    holding the workspace is read, as files lists it; it was refused for its `~`."""
    write(workspace / "~" / "a.md", "under a folder named ~\n")
    write(workspace / "~b.md", "a name starting with ~\n")
    from openclaw_memory.settings import normalize_extra_paths

    extra = normalize_extra_paths(["."], workspace)
    assert read_memory_file("~/a.md", str(workspace), extra_paths=extra).text == "under a folder named ~"
    assert read_memory_file("~b.md", str(workspace), extra_paths=extra).text == "a name starting with ~"


def test_the_repair_archive_is_refused_through_an_extra_path_naming_it(workspace):
    # files lists nothing of the workspace's .openclaw-repair/ even when an extra path names it; a read
    # there went through (only a .openclaw-repair folder below the extra path was refused).
    from openclaw_memory.settings import normalize_extra_paths

    write(workspace / ".openclaw-repair/other.md", "archived")
    write(workspace / "notes/n.md", "n")
    for extra in ([".openclaw-repair"], ["."]):
        with pytest.raises(PathRefused, match=r"inside a \.openclaw-repair archive"):
            read_memory_file(".openclaw-repair/other.md", str(workspace), extra_paths=normalize_extra_paths(extra, workspace))
    assert read_memory_file("notes/n.md", str(workspace), extra_paths=normalize_extra_paths(["."], workspace)).text == "n"


def test_a_path_through_a_file_is_refused_and_a_missing_folder_is_not_found(workspace):
    # OpenClaw's memory_get refuses memory/a.md/x.md when a.md is a file (here: not_found, as if
    # the folder were only missing); memory/no/x.md is "not found" on both sides.
    from openclaw_memory.settings import normalize_extra_paths

    write(workspace / "memory/a.md", "a")
    write(workspace / "notes/n.md", "n")
    os.mkfifo(workspace / "notes/pipe")
    extra = normalize_extra_paths(["notes"], workspace)
    for path in ("memory/a.md/x.md", "notes/n.md/x.md", "notes/pipe/deeper/x.md"):
        with pytest.raises(PathRefused, match=r"goes through (a\.md|n\.md|pipe), which is not a folder"):
            read_memory_file(path, str(workspace), extra_paths=extra)
    for path in ("memory/no/x.md", "notes/no/deeper/x.md"):
        assert read_memory_file(path, str(workspace), extra_paths=extra).status == "not_found"


def test_symlink_file_and_folder_are_refused(workspace, tmp_path):
    target = write(tmp_path / "secret.md", "secret")
    write(workspace / "memory/real.md", "r")
    os.symlink(target, workspace / "memory/link.md")
    os.symlink(tmp_path, workspace / "memory/dir")
    with pytest.raises(PathRefused, match="symlink"):
        read_memory_file("memory/link.md", str(workspace))
    with pytest.raises(PathRefused, match="symlink"):
        read_memory_file("memory/dir/secret.md", str(workspace))


def test_symlinked_memory_dir_is_refused(workspace, tmp_path):
    write(tmp_path / "real/a.md", "a")
    os.symlink(tmp_path / "real", workspace / "memory")
    with pytest.raises(PathRefused, match="symlink"):
        read_memory_file("memory/a.md", str(workspace))


def test_fifo_is_refused_without_blocking(workspace):
    (workspace / "memory").mkdir()
    os.mkfifo(workspace / "memory/pipe.md")
    with pytest.raises(PathRefused, match="not a regular file"):
        read_memory_file("memory/pipe.md", str(workspace))


def test_absolute_path_inside_extra_path(workspace, tmp_path):
    note = write(tmp_path / "extra/n.md", "extra note\n")
    out = to_json(read_memory_file(str(note), str(workspace), extra_paths=[str(tmp_path / "extra")]))
    assert out["text"] == "extra note" and out["path"] == "../extra/n.md"  # relative, as OpenClaw shows it
    with pytest.raises(PathRefused):
        read_memory_file(str(note), str(workspace))


def test_an_image_files_lists_is_refused_as_an_image_not_as_no_memory_path(cli, workspace, tmp_path):
    """`files --multimodal` lists an extra path's image and audio; `read` of one was refused as "not a
    memory path (... or a file in an existing configured extra path)", which it is. Refusing is as
    OpenClaw's memory_get ('path is not an allowed Markdown memory file'); the reason now says what it is."""
    extra = ("--extra", str(tmp_path / "ex"))
    write(tmp_path / "ex" / "p2.png", "PNG")
    write(tmp_path / "ex" / "voice.MP3", "ID3")
    write(workspace / "memory" / "pic.png", "PNG")
    listed = cli("files", "--multimodal", "--json", *extra)
    assert {f["path"] for f in listed.json()["files"]} >= {"../ex/p2.png", "../ex/voice.MP3"}
    for path, kind in (("../ex/p2.png", "an image file"), (str(tmp_path / "ex" / "voice.MP3"), "an audio file"),
                       ("memory/pic.png", "an image file")):
        refused = cli("read", path, "--multimodal", *extra)
        assert refused.returncode == 2 and f"refused: {path} is {kind}, which read does not show: it reads Markdown (.md) " \
            "memory files only" in refused.stderr, refused.stderr
    elsewhere = cli("read", str(tmp_path / "p3.png"), *extra)  # outside every memory path: as before
    assert elsewhere.returncode == 2 and "is not a memory path" in elsewhere.stderr


def test_a_non_markdown_file_of_an_extra_path_is_refused_for_its_extension(cli, workspace, tmp_path):
    """`--extra ../ex read ../ex/c.txt` said "not a memory path (... or a file in an existing configured
    extra path)", which it is; its extension is the cause (OpenClaw: 'path is not an allowed Markdown memory file')."""
    write(tmp_path / "ex" / "c.txt", "text\n")
    write(tmp_path / "ex" / "a.md", "a\n")
    write(tmp_path / "ex" / "sub" / "d.json", "{}")
    ex = os.path.relpath(tmp_path / "ex", workspace)
    for extra, path in ((ex, f"{ex}/c.txt"), (ex, str(tmp_path / "ex" / "c.txt")), (ex, f"{ex}/sub/d.json"),
                        (f"{ex}/c.txt", f"{ex}/c.txt")):
        refused = cli("--extra", extra, "read", path)
        assert refused.returncode == 2 and refused.stderr == (
            f"error: refused: {path} is not a Markdown (.md) memory file (as OpenClaw's memory_get: 'path is not an "
            "allowed Markdown memory file')\n"), refused.stderr
    for path in (ex, "notes.txt", str(tmp_path / "c.txt")):  # the extra folder itself, outside every memory path: as before
        assert "is not a memory path (MEMORY.md" in cli("--extra", ex, "read", path).stderr, path


def test_a_file_of_an_extra_path_named_through_a_linked_folder_has_one_name(cli, workspace, tmp_path):
    # The scanner names an extra path with its folders' links resolved; reads refused that name
    # (the one `files` and search print), and a write through the link's name kept a history of its own.
    (tmp_path / "real" / "notes").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    write(workspace / "MEMORY.md", "# Memory\n")
    write(tmp_path / "real" / "notes" / "a.md", "extra note\n")
    extra = ("--extra", str(tmp_path / "link" / "notes"))
    (listed,) = [f["path"] for f in cli("files", "--json", *extra).json()["files"] if f["source"] == "extra"]
    assert listed == "../real/notes/a.md"
    assert cli("read", listed, "--json", *extra).json()["path"] == listed
    through_link = str(tmp_path / "link" / "notes" / "a.md")
    assert cli("read", through_link, "--json", *extra).json()["path"] == listed
    assert cli("write", through_link, "--append", "agent line", *extra).returncode == 0
    versions = cli("history", listed, "--json", *extra).json()["versions"]
    assert len(versions) == 2  # the note as read, and as written: one history under either name


def test_a_path_through_a_link_to_the_workspace_names_the_workspace_file(cli, workspace, tmp_path):
    # The workspace is used by its real path; a path given through the link the user named it by
    # (`-w ~/agent`, ~/agent a link) was refused as outside it. Only the part above the workspace is
    # followed: a link below it is refused as ever.
    (tmp_path / "agent").symlink_to(workspace)
    write(workspace / "memory" / "a.md", "a note\n")
    (workspace / "memory" / "inner").symlink_to(workspace / "memory")
    link = tmp_path / "agent"
    assert cli("-w", str(link), "read", str(link / "memory" / "a.md"), "--json").json()["path"] == "memory/a.md"
    assert cli("-w", str(link), "write", str(link / "memory" / "a.md"), "--append", "more").returncode == 0
    assert (workspace / "memory" / "a.md").read_text() == "a note\nmore\n"
    refused = cli("-w", str(link), "read", str(link / "memory" / "inner" / "a.md"))
    assert refused.returncode == 2 and "symlink" in refused.stderr
    outside = cli("-w", str(link), "read", str(link / "notes.md"))
    assert outside.returncode == 2 and f"{link / 'notes.md'} is not a memory path" in outside.stderr


def test_a_path_through_a_link_above_an_extra_folder_names_its_file(cli, tmp_path):
    """An extra folder named through a link above it (``L -> real``: macOS's /tmp is one) is read,
    as OpenClaw reads it; it was refused as not a memory path, and a file of the workspace through
    a link inside an extra folder above it as going through a symlink. A link below the root is
    refused as ever."""
    real = tmp_path / "real"
    write(real / "ws" / "MEMORY.md", "m\n")
    write(real / "ex" / "e.md", "e\n")
    write(tmp_path / "elsewhere" / "x.md", "not memory\n")
    (real / "ex" / "sub").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "L").symlink_to(real)
    (real / "wslink").symlink_to(real / "ws")
    via = ["-w", str(tmp_path / "L" / "ws"), "--extra", "../ex"]
    assert cli(*via, "read", str(tmp_path / "L" / "ex" / "e.md"), "--json").json()["text"] == "e"
    refused = cli(*via, "read", str(tmp_path / "L" / "ex" / "sub" / "x.md"))
    assert refused.returncode == 2 and "symlink" in refused.stderr
    above = ["-w", str(real / "wslink"), "--extra", ".."]
    assert cli(*above, "read", str(real / "wslink" / "MEMORY.md"), "--json").json()["path"] == "MEMORY.md"
    # A symlinked extra path to the same folder, listed first, is no root (the scan ignores it).
    (tmp_path / "slink").symlink_to(real / "ex")
    twice = ["-w", str(real / "ws"), "--extra", str(tmp_path / "slink"), "--extra", str(real / "ex")]
    assert cli(*twice, "read", str(tmp_path / "L" / "ex" / "e.md"), "--json").json()["text"] == "e"
    # A link below an extra folder named through the link above it: named from its other name once,
    # then refused (each name led back to the other: a RecursionError traceback).
    through = ["-w", str(real / "ws"), "--extra", str(tmp_path / "L" / "ex")]
    for named in (tmp_path / "L" / "ex" / "sub" / "x.md", real / "ex" / "sub" / "x.md"):
        refused = cli(*through, "read", str(named))
        assert refused.returncode == 2 and "goes through a symlink" in refused.stderr, refused.stderr


def test_values_below_one_are_refused(workspace):
    write(workspace / "MEMORY.md", "x")
    for kw in ({"from_line": 0}, {"lines": 0}, {"max_chars": 0}):
        with pytest.raises(BadValue, match="at least 1"):
            read_memory_file("MEMORY.md", str(workspace), **kw)


def test_a_window_out_of_range_is_a_bad_value_each_front_end_words(cli, workspace, state_dir):
    """``Memory.read(lines=-1)`` raised PathRefused("--lines must be at least 1"): a path refusal, in
    the command line's words, to a library caller. It is a BadValue naming the parameter (the CLI
    names its flag, as typed)."""
    write(workspace / "MEMORY.md", "x\n")
    with closing(open_memory(settings_for(workspace, state_dir))) as memory:
        for kw, problem in (({"lines": -1}, "must be at least 1 (got -1)"), ({"max_chars": 0}, "must be at least 1 (got 0)"),
                            ({"from_line": 2**53}, "must be a positive integer (at most 9007199254740991), not 9007199254740992")):
            with pytest.raises(BadValue) as refused:
                memory.read("MEMORY.md", **kw)
            assert (refused.value.name, refused.value.problem) == (*kw, problem)
    for argv, said in ((["--lines", "0"], "--lines must be at least 1 (got 0)"),
                       (["--max-chars=0"], "--max-chars must be at least 1 (got 0)"),
                       (["--from", "0"], "--from must be at least 1 (got 0)"),
                       (["--diff", "--lines", "0"], "--lines must be at least 1 (got 0)")):
        done = cli("read", "MEMORY.md", *argv)
        assert (done.returncode, done.stderr) == (2, f"error: {said}\n"), argv


def test_non_utf8_is_replaced_with_a_warning(workspace):
    write(workspace / "MEMORY.md", b"caf\xe9\n")
    result = read_memory_file("MEMORY.md", str(workspace))
    assert result.text == "caf\ufffd" and result.warnings


def test_invalid_bytes_the_window_does_not_show_are_not_warned_of(workspace):
    """The warning says the text shown holds U+FFFD for invalid bytes: a line dropped past the budget,
    or the part of a first line its cut leaves out, is not shown, and was warned of all the same."""
    write(workspace / "memory" / "cut.md", b"ab\xff\n")
    write(workspace / "memory" / "dropped.md", b"a\n\xffb\n")
    for path in ("memory/cut.md", "memory/dropped.md"):
        result = read_memory_file(path, str(workspace), max_chars=1)
        assert "\ufffd" not in result.text and result.warnings == (), path
    shown = read_memory_file("memory/cut.md", str(workspace), max_chars=3)
    assert shown.text.startswith("ab\ufffd") and shown.warnings


def test_huge_single_line_is_not_loaded_whole(workspace):
    big = workspace / "MEMORY.md"
    with open(big, "wb") as fh:
        fh.write(b"y" * (64 << 20))
        fh.write(b"\nsecond\n")
    import tracemalloc

    tracemalloc.start()
    try:
        out = read(workspace, "MEMORY.md", max_chars=100)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out["text"].startswith("y" * 100) and "nextFrom" not in out
    assert peak < 8 << 20, f"reading a 64 MiB line allocated {peak} bytes at its peak"


def _reference(text: str, from_line: int, lines: int, max_chars: int) -> dict:
    """OpenClaw's algorithm on a whole string, written out plainly, as the oracle."""
    all_lines = text.split("\n")
    if text.endswith("\n"):
        all_lines.pop()
    if text == "":
        all_lines = []
    window = all_lines[from_line - 1 : from_line - 1 + lines]
    if not window:
        return {"text": "", "path": "MEMORY.md", "from": from_line, "lines": 0}
    more = len(all_lines) > from_line - 1 + lines
    inc = list(window)
    dropped = False
    while len(inc) > 1 and len("\n".join(inc)) > max_chars:
        inc.pop()
        dropped = True
    body = "\n".join(inc)
    hard = len(body) > max_chars
    if hard:
        body = body[:max_chars]
    nxt = from_line + len(inc) if not hard and (more or dropped) else None
    trunc = hard or dropped or more
    if trunc and body:
        body += "\n\n" + (f"[More content available. Use from={nxt} to continue.]" if nxt else NOTICE_CUT)
    out = {"text": body, "path": "MEMORY.md", "from": from_line, "lines": len(inc)}
    if trunc:
        out["truncated"] = True
    if nxt is not None:
        out["nextFrom"] = nxt
    if hard:
        out["lineChars"] = len(inc[0])  # this product's: the budget that shows the cut line whole
    return out


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(["a", "b", "é", "漢", "\n", "\n", " ", "\r"]), max_size=80),
    from_line=st.integers(1, 12),
    lines=st.integers(1, 12),
    max_chars=st.integers(1, 30),
)
def test_matches_reference_algorithm(tmp_path_factory, text, from_line, lines, max_chars):
    ws = tmp_path_factory.mktemp("ws")
    (ws / "MEMORY.md").write_bytes(text.encode("utf-8"))
    assert read(ws, "MEMORY.md", from_line=from_line, lines=lines, max_chars=max_chars) == _reference(text, from_line, lines, max_chars)


def test_a_binary_file_named_md_is_shown_escaped_with_a_warning(workspace, state_dir, cli):
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / "blob.md").write_bytes(b"\x7fELF\x02\x01\x00\x00\x1b[31mred\x07\nline two\n")
    done = cli("read", "memory/blob.md")
    assert done.returncode == 0
    assert "\x00" not in done.stdout and "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "\\x00" in done.stdout and "\\x1b[31mred" in done.stdout and "line two" in done.stdout
    assert "not text" in done.stderr
    exact = json.loads(cli("read", "memory/blob.md", "--json").stdout)
    assert exact["text"].startswith("\x7fELF\x02\x01\x00\x00\x1b")  # the JSON keeps what OpenClaw's reader gives


def test_a_window_of_every_line_reads_only_what_the_budget_can_show(workspace):
    """``memory_get`` with ``lines: 1000000000`` on a long note read, decoded and held every line of
    it for a budget of 12,000 characters (a 50 MB note: 4 s of a tool call), and warned of invalid
    bytes far past what it showed. The window ends at the first line past the budget."""
    import tracemalloc

    with open(workspace / "MEMORY.md", "wb") as fh:
        fh.write(b"# Memory\n" + b"a line of the memory\n" * 500_000 + b"caf\xe9\n")
    tracemalloc.start()
    try:
        out = read(workspace, "MEMORY.md", lines=10**9)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    result = read_memory_file("MEMORY.md", str(workspace), lines=10**9)
    assert out["lines"] == 572 and out["nextFrom"] == 573 and out["truncated"] is True  # 12,000 characters' worth
    assert result.warnings == ()  # the invalid byte is 500,000 lines further
    assert peak < 4 << 20, f"a window of 572 shown lines allocated {peak:,} bytes at its peak"
    assert read_memory_file("MEMORY.md", str(workspace), from_line=500_002).warnings  # where it is read, it is said


def test_a_name_copied_from_the_listing_with_its_byte_escapes_is_answered_with_how_to_type_it(cli, workspace):
    # `files` shows a byte that is not UTF-8 as \xNN; pasted back, that path was refused for its
    # backslash and no more. The refusal now says the escape stands for a byte, and how a shell types it.
    write(workspace / "MEMORY.md", "# Memory\n")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / os.fsdecode(b"bad\xffname.md")).write_text("note\n")
    listed = cli("files").stdout
    assert "memory/bad\\xffname.md\t" in listed
    refused = cli("read", "memory/bad\\xffname.md")
    assert refused.returncode == 2
    assert refused.stderr == ("error: refused: memory/bad\\xffname.md contains a backslash; memory paths use '/' (\\xff "
                              "in a listing is a byte of the name: in bash, $'memory/bad\\xffname.md')\n"), refused.stderr
    assert cli("read", os.fsdecode(b"memory/bad\xffname.md")).stdout == "note\n"
    assert "(" not in cli("read", "memory\\notes.md").stderr  # a backslash that stands for no byte: no such hint
    # A quote in the name is typed \' there ($'bob's' was no bash at all).
    assert "in bash, $'memory/bob\\'s\\xffnote.md')" in cli("read", "memory/bob's\\xffnote.md").stderr
    # A \u00e9 beside it (a character a Latin-1 stdout could not hold): bash would type that character in
    # the locale's bytes, another name: no such hint.
    assert "in bash" not in cli("read", "memory/caf\\u00e9\\xffnote.md").stderr


def _reference_window(data: bytes, from_line: int, count: int, max_chars: int) -> tuple[str, int, bool, int | None, bool]:
    """The window of ``data`` held whole, written out plainly (UTF-16 lengths, invalid bytes): the oracle
    of the streamed one. Each line is looked at for its first ``4 * (max_chars + 2)`` bytes; the warning
    is of invalid bytes in the text shown (a dropped line's are not)."""
    lines = data.split(b"\n")
    if data.endswith(b"\n") or not data:
        lines.pop()
    window, prefix = lines[from_line - 1 : from_line - 1 + count], 4 * (max_chars + 2)
    shown, invalid, chars = [], [], -1
    for i, line in enumerate(window):
        looked = line[:prefix]
        try:
            text, bad = (looked.decode("utf-8") if len(looked) < prefix else _decode_open(looked)), False
        except UnicodeDecodeError:
            text, bad = looked.decode("utf-8", errors="replace"), True
        chars += utf16_len(text[: max_chars + 1]) + 1
        shown.append(text)
        invalid.append(bad)
        if chars > max_chars:
            window = window[: i + 1]
            break
    more = len(lines) > from_line - 1 + len(window)
    if len(shown) > 1 and chars > max_chars:
        shown.pop()  # past the budget: dropped, its line read next
        invalid.pop()
        text, next_from = "\n".join(shown), from_line + len(shown)
        return (text + "\n\n" + NOTICE_NEXT.format(next=next_from) if text else text), len(shown), True, next_from, any(invalid)
    if shown and chars > max_chars:  # the first line alone: cut; invalid bytes past the cut are not shown
        cut = truncate_utf16_safe(shown[0][: max_chars + 1], max_chars)
        return cut + "\n\n" + NOTICE_CUT, 1, True, None, not window[0].startswith(cut.encode())
    text = "\n".join(shown)
    next_from = from_line + len(shown) if more else None
    return (text + "\n\n" + NOTICE_NEXT.format(next=next_from) if more and text else text), len(shown), more, next_from, any(invalid)


def _decode_open(looked: bytes) -> str:
    """A line's prefix cut inside a character: the cut character's first bytes are no error."""
    import codecs

    return codecs.getincrementaldecoder("utf-8")("strict").decode(looked, final=False)


ATOMS = [b"a", b"b", b" ", "\u00e9".encode(), "\u6f22".encode(), "\U0001f30a".encode(), b"\n", b"\n", b"\r",
         b"\xe9", b"\xe2\x82", b"\xf0\x9f", b"\xef\xbf\xbd", b"\xed\xa0\x80", b"x" * 40]


@settings(max_examples=400, deadline=None)
@given(data=st.lists(st.sampled_from(ATOMS), max_size=60).map(b"".join), from_line=st.integers(1, 8),
       count=st.integers(1, 10), max_chars=st.integers(1, 25), blocks=st.lists(st.integers(1, 9), min_size=1, max_size=4))
def test_a_window_streamed_in_any_blocks_is_the_window_of_the_whole_text(data, from_line, count, max_chars, blocks):
    """However the file's bytes arrive (a line, a character, a newline split between two blocks),
    the window is the one cut from the whole text: its lines, cuts, notice and invalid-UTF-8 warning."""
    scan, at, i = WindowScan(from_line, count, max_chars), 0, 0
    while at < len(data):
        scan.feed(data[at : at + blocks[i % len(blocks)]])
        at, i = at + blocks[i % len(blocks)], i + 1
    window = scan.end(lambda next_from: NOTICE_NEXT.format(next=next_from) if next_from is not None else NOTICE_CUT)
    expected = _reference_window(data, from_line, count, max_chars)
    assert (window.text, window.lines, window.truncated, window.next_from, window.bad_utf8) == expected
    hard_cut = expected[2] and expected[3] is None  # truncated with no line to go on to: the first line cut
    line = data.split(b"\n")[from_line - 1] if hard_cut else b""
    assert window.line_chars == (utf16_len(line.decode("utf-8", "replace")) if hard_cut else None)


def test_a_hard_cut_says_the_length_of_the_whole_line_and_that_budget_shows_it(workspace):
    """A line cut short says how long it is (``lineChars``, UTF-16 code units as OpenClaw counts:
    an emoji 2, the CR before its newline 1), measured past the prefix the cut looks at and across
    1 MiB blocks; a read with that budget shows it whole and goes on from the next line."""
    line = "\U0001f600\u00e9" * 700_000 + "\r"  # 4.2 MB, 2,100,001 code units
    write(workspace / "MEMORY.md", "a\nb\nc\n" + line + "\nlast\n")
    cut = read(workspace, "MEMORY.md", from_line=4, max_chars=100)
    assert cut["truncated"] and "nextFrom" not in cut and cut["lineChars"] == 2_100_001 == utf16_len(line), cut["lineChars"]
    whole = read(workspace, "MEMORY.md", from_line=4, max_chars=cut["lineChars"])
    assert whole["text"].startswith(line) and whole["lines"] == 1 and whole["nextFrom"] == 5 and "lineChars" not in whole
    assert "lineChars" not in read(workspace, "MEMORY.md", max_chars=3)  # lines dropped, none cut: nextFrom says it


def test_a_note_rewritten_while_it_is_read_is_read_again_and_that_version_recorded(workspace, state_dir, cli):
    """The version recorded for the write guard hashes the very bytes the window came from, in the
    same pass; a note whose stat moved during the pass (rewritten in place through the open file) is
    read again: the window and the version are the new note's, and a write after it goes through."""
    note = write(workspace / "memory" / "a.md", "old line\n" * 1000)

    def rewrite() -> None:
        with open(note, "r+b") as fh:
            fh.write(b"new line\n")
            fh.truncate()

    code, out, err = run_paused(workspace, state_dir, ("read", "memory/a.md", "--json"), "read:scanned:1", rewrite)
    assert code == 0, err
    assert json.loads(out)["text"] == "new line" and "truncated" not in json.loads(out)
    done = cli("write", "memory/a.md", "--append", "after the read")
    assert done.returncode == 0, done.stderr
    assert note.read_text() == "new line\nafter the read\n"


def test_a_from_past_what_json_holds_is_refused_as_a_citation_is(cli, workspace):
    """`--from 9007199254740993` was read and echoed as `"from": 9007199254740993`, a number no JSON
    reader holds whole (Node reads ...992), where `#L9007199254740993` and memory_get refuse it."""
    write(workspace / "memory" / "a.md", "a\nb\n")
    for typed in ("9007199254740993", "99999999999999999999"):
        done = cli("read", "memory/a.md", "--from", typed, "--json")
        assert done.returncode == 2 and done.json()["error"].startswith(
            "--from must be a positive integer (at most 9007199254740991)"), done.stdout
    assert cli("read", "memory/a.md", "--from", "9007199254740991", "--json").returncode == 0


def test_a_file_an_extra_folders_pattern_leaves_out_is_refused_naming_the_pattern(cli, workspace, state_dir, tmp_path):
    """It was "not a memory path (... or a file in an existing configured extra path)" though it is in
    one: only that path's pattern leaves it out."""
    notes = tmp_path / "notes"
    write(notes / "a-secret.md", "s\n")
    write(notes / "b-1.md", "b\n")
    (state_dir / "openclaw.json").write_text(json.dumps(
        {"agents": {"defaults": {"memorySearch": {"extraPaths": [{"path": str(notes), "pattern": "b-*.md"}]}}}}))
    assert cli("read", str(notes / "b-1.md"), "--json").json()["text"] == "b"
    refused = cli("read", str(notes / "a-secret.md"))
    assert refused.returncode == 2
    assert refused.stderr == (f"error: refused: {notes / 'a-secret.md'} is not a memory path: it is in the extra path {notes}, "
                              "whose pattern b-*.md leaves it out\n")


def test_a_name_with_white_space_around_it_is_read_by_that_name(cli, workspace):
    """An extra path's note `` top.md``: `files` and search name it so, but every path was trimmed,
    so reading `` top.md`` read ``top.md``, another note. The name as given wins where it is a note;
    the trim (OpenClaw's: an agent's stray space or newline) still applies where it is none."""
    write(workspace / " top.md", "note with a leading space\n")
    write(workspace / "top.md", "a different note\n")
    listed = cli("--extra", ".", "files", "--json").json()["files"]
    assert {" top.md", "top.md"} <= {f["path"] for f in listed}
    spaced = cli("--extra", ".", "read", " top.md", "--json").json()
    assert (spaced["path"], spaced["text"]) == (" top.md", "note with a leading space")
    for stray in ("top.md\n", "  top.md", "\ttop.md "):  # no such name: trimmed, as OpenClaw trims it
        assert cli("--extra", ".", "read", stray, "--json").json()["path"] == "top.md", repr(stray)
    assert read(workspace, "memory/a.md\n")["path"] == "memory/a.md"  # a missing note: not_found by its trimmed name
    os.remove(workspace / " top.md")  # gone: the stray space names top.md again (read asks no history)
    assert cli("--extra", ".", "read", " top.md", "--json").json()["text"] == "a different note"


def test_a_stray_white_space_around_a_name_no_note_has_had_is_trimmed_for_a_write(cli, workspace):
    """With ``--extra .`` a write of ``'\\nMEMORY.md'`` (an agent's stray newline) made a new note
    ``\\nMEMORY.md`` beside MEMORY.md, taking the name as given because its folder existed: a name
    neither there nor ever in the history is trimmed, as OpenClaw trims it, for a write as for a read."""
    write(workspace / "MEMORY.md", "old\n")
    om = ("--extra", ".")
    assert cli(*om, "read", "MEMORY.md").returncode == 0
    for n, stray in enumerate(("\nMEMORY.md", " MEMORY.md", "MEMORY.md\n")):
        written = cli(*om, "write", stray, "--append", f"more {n}", "--json").json()
        assert written["path"] == "MEMORY.md", (repr(stray), written)
    assert (workspace / "MEMORY.md").read_text() == "old\nmore 0\nmore 1\nmore 2\n"
    assert not any(name.strip() != name for name in os.listdir(workspace))

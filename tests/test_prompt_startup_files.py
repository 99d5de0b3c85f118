"""The startup prompt's budget is what OpenClaw spends: its other startup files (AGENTS.md, SOUL.md,
IDENTITY.md, BOOTSTRAP.md) take their share of bootstrapTotalMaxChars before USER.md and MEMORY.md,
a missing one costs its [MISSING] line, an unreadable memory file is injected as OpenClaw's
[UNREADABLE: ...], and the text is what OpenClaw's system prompt renders."""

from __future__ import annotations

import datetime as dt
import errno
import os

from conftest import write
from openclaw_memory.files.scan import scan_memory_files
from openclaw_memory.prompt import build_prompt_section
from openclaw_memory.prompt import loader as prompt_loader
from openclaw_memory.prompt.bootstrap import prompt_text, trim_bootstrap_content

TODAY = dt.date(2026, 11, 30)


def section(ws, **kw):
    return build_prompt_section(scan_memory_files(ws), today=TODAY, **kw)


def _others(ws, agents=19_990, soul=20_000, identity=19_000):
    write(ws / "AGENTS.md", "# Agents\n" + "A" * agents + "\n")
    write(ws / "SOUL.md", "S" * soul + "\n")
    write(ws / "IDENTITY.md", "I" * identity + "\n")


def test_other_startup_files_take_the_total_first(workspace, cli):
    _others(workspace)  # 19,999 + 20,000 + 19,000 of the 60,000: 1,001 left for MEMORY.md
    write(workspace / "MEMORY.md", "# Memory\n" + "- fact\n" * 700)
    result = section(workspace)
    assert [(f.name, f.injected_chars) for f in result.startup] == [
        ("AGENTS.md", 19_999), ("SOUL.md", 20_000), ("IDENTITY.md", 19_000), ("MEMORY.md", 1_000)]
    assert [(c.path, c.original_chars, c.kept_chars, c.reason) for c in result.truncated] == [
        ("MEMORY.md", 4_908, 1_000, "total-cap")]  # OpenClaw's cut to 1,001: its marker inside
    assert "[...truncated, read MEMORY.md for full content...]" in result.text
    assert "AAAA" not in result.text and "SSSS" not in result.text  # counted, not shown
    assert result.other_startup_chars == 58_999
    data = cli("prompt", "--json", "--date", "2026-11-30").json()
    assert data["otherStartupChars"] == 58_999
    assert data["otherFiles"] == [
        {"path": "AGENTS.md", "chars": 19_999, "injectedChars": 19_999, "missing": False},
        {"path": "SOUL.md", "chars": 20_000, "injectedChars": 20_000, "missing": False},
        {"path": "IDENTITY.md", "chars": 19_000, "injectedChars": 19_000, "missing": False},
    ]
    assert any("take 58,999 of the 60,000" in w for w in data["warnings"])
    findings = {f["id"]: f for f in cli("doctor", "--json").json()["findings"]}
    assert "AGENTS.md, SOUL.md, IDENTITY.md took 58,999 of them first" in findings["prompt-total-cap"]["message"]
    budget = findings["bootstrap-budget"]["message"].split("\n")
    assert budget[:2] == ["Workspace bootstrap files exceed limits and will be truncated:",
                          "- MEMORY.md: 4,908 raw / 1,000 injected (80% truncated; max/total)"]
    assert "Total bootstrap injected chars: 59,999 (100% of max/total 60,000)." in budget
    assert "Total bootstrap raw chars (before truncation): 63,907." in budget
    assert "- SOUL.md: 20,000 chars (100% of max/file 20,000)" in budget
    assert budget[-1].startswith("- Tip: tune `agents.entries.*.bootstrapTotalMaxChars`")
    assert findings["bootstrap-budget"]["paths"] == ["AGENTS.md", "SOUL.md", "IDENTITY.md", "MEMORY.md"]


def test_under_64_left_memory_md_is_skipped(workspace, cli):
    _others(workspace, identity=19_980)  # 40 left: OpenClaw injects no further file
    write(workspace / "MEMORY.md", "m" * 500 + "\n")
    result = section(workspace)
    assert "MEMORY.md" not in [f.name for f in result.startup] and "mmm" not in result.text
    assert [(c.path, c.kept_chars, c.reason) for c in result.truncated] == [("MEMORY.md", 0, "total-cap")]
    assert list(result.bootstrap_warnings) == [
        "remaining bootstrap budget is 21 chars (<64); skipping additional bootstrap files"]
    (cap,) = [f for f in cli("doctor", "--json").json()["findings"] if f["id"] == "prompt-total-cap"]
    assert cap["message"].endswith(": MEMORY.md is left out at the start of a session.")


def test_a_missing_startup_file_costs_its_marker(workspace):
    write(workspace / "MEMORY.md", "m" * 1_000)
    markers = [f"[MISSING] Expected at: {os.path.join(str(workspace), n)}" for n in ("AGENTS.md", "SOUL.md", "IDENTITY.md")]
    spent = sum(len(m) for m in markers)
    result = section(workspace, total_cap=spent + 500)
    assert [(f.name, f.content, f.missing) for f in result.startup[:3]] == [
        (n, m, True) for n, m in zip(("AGENTS.md", "SOUL.md", "IDENTITY.md"), markers)]
    (memory,) = result.injected
    assert memory.injected_chars == 499 and result.truncated[0].reason == "total-cap"  # cut to the 500 left
    assert result.other_startup_chars == spent
    assert "[MISSING]" not in result.text
    assert result.budget is not None and "Total bootstrap raw chars (before truncation): 1,000." in result.budget


def test_bootstrap_md_counts_when_there_and_nothing_when_not(workspace):
    write(workspace / "MEMORY.md", "m\n")
    assert "BOOTSTRAP.md" not in [f.name for f in section(workspace).startup]  # setup done: OpenClaw leaves it out
    write(workspace / "BOOTSTRAP.md", "b" * 300 + "\n")
    names = [(f.name, f.injected_chars) for f in section(workspace).startup]
    assert names[3:] == [("BOOTSTRAP.md", 300), ("MEMORY.md", 1)]  # OpenClaw's order: before MEMORY.md


def test_an_unreadable_memory_file_is_injected_as_openclaws_marker(workspace, monkeypatch):
    write(workspace / "USER.md", "u\n")
    write(workspace / "MEMORY.md", "secret\n")
    real = prompt_loader.open_regular_under

    def refuse(root, path):
        if path.endswith("MEMORY.md"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real(root, path)

    monkeypatch.setattr(prompt_loader, "open_regular_under", refuse)
    result = section(workspace)
    marker = f"[UNREADABLE: EACCES: permission denied, open '{workspace / 'MEMORY.md'}']"
    assert [(f.name, f.content) for f in result.injected] == [("USER.md", "u"), ("MEMORY.md", marker)]
    assert result.text.endswith(f"## MEMORY.md\n\n{marker}\n")
    assert any(w.startswith("MEMORY.md is not loaded: cannot read it (Permission denied)") for w in result.warnings)
    assert {"path": "MEMORY.md", "chars": len(marker), "truncated": False} in result.files


def test_text_is_what_openclaws_system_prompt_renders(workspace):
    heartbeat = ("Default heartbeat prompt:\n`Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. "
                 "If nothing needs attention, reply HEARTBEAT_OK.`")
    write(workspace / "MEMORY.md", "a\n\n\n\nb\n\n\n" + heartbeat + "\nc\n")
    write(workspace / "USER.md", "u1\n\n\n\nu2\n")
    result = section(workspace)
    assert result.text == "# Memory\n\n## USER.md\n\nu1\n\nu2\n\n## MEMORY.md\n\na\n\nb\n\nc\n"
    # The caps count the file as loaded; the rendering comes after them.
    assert [f.raw_chars for f in result.injected] == [len("u1\n\n\n\nu2"), len(f"a\n\n\n\nb\n\n\n{heartbeat}\nc")]
    assert prompt_text("x\r\n\r\n\r\ny") == "x\r\n\r\n\r\ny"  # only line feeds in a row are collapsed


def test_agents_md_over_its_cap_is_cut_around_a_policy_digest(workspace):
    body = "# Rules\n" + "prose line\n" * 3000 + "- never push to main\n" + "tail\n" * 500
    content, cut = trim_bootstrap_content(body, "AGENTS.md", 2_000)
    assert cut and len(content) <= 2_000
    assert "[...truncated, read AGENTS.md for full content...]\n[Policy digest from AGENTS.md]\n" in content
    assert "- never push to main" in content and content.endswith("tail")


def test_agents_md_digest_words_match_as_javascript_iu_matches_them():
    # OpenClaw's /\b(?:...must...)\b/iu folds ſ (U+017F) to s and K (U+212A) to k, and counts both as word
    # characters for \b; nothing else beyond ASCII. ASCII-only matching left "this muſt be kept" out of
    # the digest (OpenClaw keeps it), and Unicode matching would take İ, ı and é as letters.
    from openclaw_memory.prompt.bootstrap import _DIGEST_CANDIDATE, _DIGEST_HIGH_PRIORITY

    taken = ["this mu\u017ft be kept", "MU\u017fT", "AGENT\u017f.md", "\u017fecret", "\u00e9must", "must\u00e9",
             "\u0130must", "\u0131must", "\u00b5must", "pr\u0131"]
    left = ["\u212amust", "must\u212a", "\u017fmust", "must_", "\u0441ommit", "p\u0131", "\u0131"]
    assert [line for line in taken + left if _DIGEST_CANDIDATE.search(line)] == taken
    assert [line for line in taken[:-1] + left if _DIGEST_HIGH_PRIORITY.search(line)] == taken[:-1]


def test_user_md_fixed_cap_line_in_the_budget_report(workspace):
    write(workspace / "USER.md", "u" * 4_500)
    write(workspace / "MEMORY.md", "m\n")
    report = section(workspace).budget
    assert report is not None
    assert report[1] == "- USER.md: 4,500 raw / 3,999 injected (11% truncated; max/file)"
    assert report[-2:] == ("", "USER.md has a fixed 4,000-character bootstrap cap; keep it compact.")


def test_an_unreadable_file_of_a_symlinked_workspace_names_its_real_path(tmp_path, monkeypatch):
    # OpenClaw's guarded open opens the file under the workspace's real path, and its EACCES names that path;
    # only the [MISSING] lines name the workspace as configured. The marker named the link: another length,
    # so MEMORY.md was cut elsewhere under the total budget (748 characters kept, OpenClaw 719).
    real = tmp_path / "a-much-longer-real-folder-name" / "ws"
    write(real / "USER.md", "u\n")
    write(real / "MEMORY.md", "m" * 3000 + "\n")
    (tmp_path / "l").symlink_to(real.parent)
    real_open = prompt_loader.open_regular_under

    def refuse(root, path):
        if path.endswith("USER.md"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(root, path)

    monkeypatch.setattr(prompt_loader, "open_regular_under", refuse)
    result = section(real, total_cap=1000, workspace_spelled=str(tmp_path / "l" / "ws"))
    assert [(f.name, f.content) for f in result.startup][:4] == [
        ("AGENTS.md", f"[MISSING] Expected at: {tmp_path}/l/ws/AGENTS.md"),
        ("SOUL.md", f"[MISSING] Expected at: {tmp_path}/l/ws/SOUL.md"),
        ("IDENTITY.md", f"[MISSING] Expected at: {tmp_path}/l/ws/IDENTITY.md"),
        ("USER.md", f"[UNREADABLE: EACCES: permission denied, open '{real}/USER.md']")]
    spent = sum(f.injected_chars for f in result.startup[:4])
    assert result.truncated[0].kept_chars == 1000 - spent - 1  # OpenClaw's cut, one under what is left


NOTICE = ("## Bootstrap Context Notice\n"
          "[Bootstrap truncation warning]\n"
          "Some workspace bootstrap files were truncated before Project Context injection.\n"
          "Treat Project Context as partial and read the relevant files directly if details seem missing.\n")


def test_a_cut_startup_file_puts_openclaws_notice_before_the_files(workspace, state_dir, cli):
    # OpenClaw's system prompt tells the agent when a startup file was cut ("## Bootstrap Context Notice",
    # always: no setting turns it off); the section held only the in-file marker, the rest went to stderr.
    write(workspace / "USER.md", "u" * 3000)
    write(workspace / "MEMORY.md", "m\n")
    result = section(workspace, total_cap=2000)
    assert result.text.startswith(f"# Memory\n\n{NOTICE}\n## USER.md\n\n")
    assert result.notice == NOTICE
    result = section(workspace)  # nothing cut: no notice
    assert result.notice is None and result.text.startswith("# Memory\n\n## USER.md\n\n")
    write(state_dir / "openclaw-memory.toml", "[prompt]\ntotal_chars = 2000\n")
    out = cli("prompt", "--peek", "--json")
    assert out.returncode == 0 and out.json()["text"].startswith(f"# Memory\n\n{NOTICE}\n## USER.md")


def test_the_notice_follows_openclaws_rule_for_every_startup_file(workspace):
    write(workspace / "AGENTS.md", "a" * 25_000)  # only AGENTS.md cut: OpenClaw tells the agent too
    write(workspace / "MEMORY.md", "m\n")
    result = section(workspace)
    assert not result.truncated and result.text == f"# Memory\n\n{NOTICE}\n## MEMORY.md\n\nm\n"
    (workspace / "MEMORY.md").unlink()  # nothing of the memory files to go with: the section stays empty
    assert section(workspace).text == ""
    (workspace / "AGENTS.md").unlink()
    write(workspace / "MEMORY.md", "m" * 500)  # MEMORY.md cut away whole (the [MISSING] lines took the 60): the notice alone
    result = section(workspace, total_cap=60)
    assert [(c.path, c.kept_chars) for c in result.truncated] == [("MEMORY.md", 0)]
    assert result.text == f"# Memory\n\n{NOTICE}"


def test_a_cut_daily_note_alone_brings_no_notice(workspace):
    write(workspace / "MEMORY.md", "m\n")
    write(workspace / "memory/2026-11-30.md", "d" * 5_000)
    result = section(workspace)
    assert [c.reason for c in result.truncated] == ["daily-cap"] and result.notice is None
    assert "Bootstrap Context Notice" not in result.text

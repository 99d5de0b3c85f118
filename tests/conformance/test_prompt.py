"""``prompt`` against OpenClaw's bootstrap loader (every startup file: AGENTS.md, SOUL.md, IDENTITY.md,
USER.md, BOOTSTRAP.md, MEMORY.md, under one budget), its system prompt's rendering of them, doctor's
bootstrap budget numbers, and its new-session prelude."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from openclaw_memory.files.scan import scan_memory_files
from openclaw_memory.prompt import build_prompt_section
from openclaw_memory.prompt.bootstrap import prompt_text
from openclaw_memory.settings._openclaw import startup_context

from .workspaces import build

NOW = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)


def ours(ws, *, max_chars=20_000, total=60_000, startup=None, tz=None, now=NOW):
    cfg = startup_context({"startupContext": startup or {}, **({"userTimezone": tz} if tz else {})})
    return build_prompt_section(scan_memory_files(ws), now=now, file_cap=max_chars, total_cap=total, startup=cfg)


def boot(ws, **kw) -> dict:
    """OpenClaw's bootstrap request for ``ws``: every startup file; BOOTSTRAP.md left out when it is not
    there, as OpenClaw leaves it out once it records the workspace's setup complete (which it does when
    the first-run BOOTSTRAP.md is deleted), the state this product assumes (docs/openclaw.md)."""
    return {"op": "bootstrap", "ws": str(ws), "setupCompleted": not (ws / "BOOTSTRAP.md").exists(), **kw}


def compare_startup(checks, label, section, answer):
    """The injected startup files, their rendering, OpenClaw's warnings and doctor's budget numbers."""
    checks.same(f"{label}: injected", [(f.name, f.content) for f in section.startup],
                [(f["name"], f["content"]) for f in answer["injected"]])
    checks.same(f"{label}: rendered", [prompt_text(f.content) for f in section.startup], answer["rendered"])
    checks.same(f"{label}: warnings", list(section.bootstrap_warnings), answer["warnings"])
    rows = section.budget_rows
    budget = answer["budget"]
    checks.same(f"{label}: budget files", [[r.name, r.raw_chars, r.injected_chars, r.limit, list(r.causes)] for r in rows],
                budget["files"])
    checks.same(f"{label}: budget totals", [sum(r.raw_chars for r in rows), sum(r.injected_chars for r in rows)],
                budget["totals"])
    for f in section.injected:  # the memory files as the section shows them
        if f"## {f.name}\n\n{prompt_text(f.content)}\n" not in section.text:
            checks.failures.append(f"{label}: {f.name} is not shown as rendered")
    # The system prompt's "## Bootstrap Context Notice" (a startup file cut), at the head of the section
    # (one with nothing to show has none: not a memory section, docs/openclaw.md).
    if section.text:
        checks.same(f"{label}: notice", section.notice, answer["notice"])
        if section.notice and not section.text.startswith(f"# Memory\n\n{section.notice}"):
            checks.failures.append(f"{label}: the notice is not at the head of the section")


BOOTSTRAP_CASES = [
    ({"MEMORY.md": "short\n\n  \n"}, 20_000, 60_000),
    ({"MEMORY.md": "m" * 20_000 + "\n\n\n"}, 20_000, 60_000),  # the cap is checked without trailing white space
    ({"MEMORY.md": "m" * 20_001}, 20_000, 60_000),
    ({"MEMORY.md": "H" * 15_000 + "M" * 10_000 + "T" * 5_000}, 20_000, 60_000),
    ({"MEMORY.md": "😀" * 12_000}, 20_000, 60_000),  # astral characters at both cut points
    ({"MEMORY.md": "a😀" * 40}, 50, 60_000),
    ({"MEMORY.md": "x" * 300}, 10, 60_000),  # the compact marker
    ({"MEMORY.md": "x" * 300}, 100, 60_000),
    ({"MEMORY.md": "x" * 300}, 1, 60_000),
    ({"MEMORY.md": "line\r\n" * 5000}, 20_000, 60_000),
    ({"MEMORY.md": ""}, 20_000, 60_000),  # empty: left out
    ({"MEMORY.md": " \n\t\r\n"}, 20_000, 60_000),  # white space only: left out
    ({"USER.md": "u" * 4_000, "MEMORY.md": "m"}, 20_000, 60_000),
    ({"USER.md": "u" * 4_001, "MEMORY.md": "m"}, 20_000, 60_000),  # USER.md's own cap
    ({"USER.md": "u" * 9_000, "MEMORY.md": "m" * 30_000}, 3_000, 60_000),
    ({"USER.md": "u" * 5_000, "MEMORY.md": "m" * 5_000}, 20_000, 4_050),  # total budget spent in order
    ({"USER.md": "u" * 3_990, "MEMORY.md": "m" * 5_000}, 20_000, 4_050),  # under 64 left: MEMORY.md skipped
    ({"USER.md": "u" * 100, "MEMORY.md": "m" * 5_000}, 20_000, 150),
    ({"USER.md": "u" * 100, "MEMORY.md": "m" * 5_000}, 20_000, 60),
    ({"MEMORY.md": "m" * 70}, 20_000, 66),
    ({"USER.md": "   ", "MEMORY.md": "m\n"}, 20_000, 60_000),
    ({"user.md": "lower case is not USER.md", "MEMORY.md": "m"}, 20_000, 60_000),
    # Large files: astral characters across 1 MiB and at the cut points, trailing white space.
    ({"MEMORY.md": "é😀x" * 150_000 + " \n\u3000" * 50_000}, 20_000, 60_000),  # 1.3 MB, under OpenClaw's 2 MiB
    ({"USER.md": "😀" * 9_001 + "\n" * 9_000, "MEMORY.md": "a😀" * 30_000 + " " * 300}, 101, 60_000),
    # OpenClaw's loader reads at most 2 MiB of a bootstrap file: a bigger one is not loaded at all.
    ({"MEMORY.md": "é😀x" * 400_000}, 20_000, 60_000),
    ({"USER.md": "u" * (2 * 1024 * 1024), "MEMORY.md": "m" * (2 * 1024 * 1024 + 1)}, 20_000, 60_000),
]


def compare_cases(oracle, new_ws, checks, cases) -> None:
    """Each (tree, bootstrapMaxChars, bootstrapTotalMaxChars) built in a new workspace, loaded by
    OpenClaw and by this product, compared."""
    built = []
    for tree, max_chars, total in cases:
        ws = new_ws()
        build(ws, tree)
        built.append((ws, tree, max_chars, total))
    answers = oracle.more([boot(ws, maxChars=m, totalMaxChars=t) for ws, _tr, m, t in built])
    for (ws, tree, max_chars, total), answer in zip(built, answers):
        label = f"{ {k: len(v) for k, v in tree.items()} } max={max_chars} total={total}"
        compare_startup(checks, label, ours(ws, max_chars=max_chars, total=total), answer)
    checks.done()


def test_bootstrap_files(oracle, new_ws, checks):
    compare_cases(oracle, new_ws, checks, BOOTSTRAP_CASES)


HEARTBEAT = ("Default heartbeat prompt:\n`Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. "
             "If nothing needs attention, reply HEARTBEAT_OK.`")
POLICY = "".join([
    "# Agents\n\nSome prose before a rule.\n- must run the tests first\n", "plain prose\n" * 400,
    "## Security\nnever print a secret\n```\n- fenced, not a rule\n```\n1) numbered item\n",
    "禁止 deleting notes\n", "a rule line, long: must " + "x" * 300 + "\n", "😀 prose\n" * 300,
    "- commit with a message\n", "Do NOT push\n", "tail prose\n" * 200,
])
# Every startup file (OpenClaw's order: AGENTS.md, SOUL.md, IDENTITY.md, USER.md, BOOTSTRAP.md, MEMORY.md)
STARTUP_CASES = [
    # the reviewer's case: the other files take 58,999 of the 60,000
    ({"AGENTS.md": "# Agents\n" + "A" * 19_990 + "\n", "SOUL.md": "S" * 20_000 + "\n", "IDENTITY.md": "I" * 19_000 + "\n",
      "MEMORY.md": "# Memory\n" + "- fact\n" * 700}, 20_000, 60_000),
    ({"AGENTS.md": "# Agents\n" + "A" * 19_990 + "\n", "SOUL.md": "S" * 20_000 + "\n", "IDENTITY.md": "I" * 19_000 + "\n",
      "BOOTSTRAP.md": "first run\n", "MEMORY.md": "# Memory\n" + "- fact\n" * 700}, 20_000, 60_000),
    # under 64 left: MEMORY.md skipped; USER.md cut by the total
    ({"AGENTS.md": "a" * 20_000, "SOUL.md": "s" * 20_000, "IDENTITY.md": "i" * 19_980, "MEMORY.md": "m" * 500}, 20_000, 60_000),
    ({"AGENTS.md": "a" * 20_000, "SOUL.md": "s" * 20_000, "IDENTITY.md": "i" * 17_000, "USER.md": "u" * 4_500,
      "MEMORY.md": "m" * 500}, 20_000, 60_000),
    # missing files cost their [MISSING] line, also when the total is small
    ({"MEMORY.md": "m" * 1_000}, 20_000, 300),
    ({"USER.md": "u" * 100, "MEMORY.md": "m" * 1_000}, 20_000, 150),
    ({"SOUL.md": "soul\n", "MEMORY.md": "m" * 1_000}, 20_000, 40),
    ({"BOOTSTRAP.md": "b" * 300, "MEMORY.md": "m" * 300}, 20_000, 60_000),
    # AGENTS.md over its cap: head, policy digest, tail
    ({"AGENTS.md": POLICY, "MEMORY.md": "m\n"}, 20_000, 60_000),
    ({"AGENTS.md": POLICY, "MEMORY.md": "m\n"}, 3_000, 60_000),
    ({"AGENTS.md": POLICY, "MEMORY.md": "m\n"}, 500, 60_000),
    ({"AGENTS.md": POLICY, "MEMORY.md": "m\n"}, 60, 60_000),
    ({"AGENTS.md": POLICY, "SOUL.md": POLICY, "MEMORY.md": "m" * 5_000}, 4_000, 6_000),
    # the system prompt's rendering: line feeds collapsed, the default heartbeat prompt deleted
    ({"SOUL.md": "a\n\n\n\nb", "USER.md": "u1\n\n\n\nu2\n", "MEMORY.md": "a\n\n\n\nb\n\n\n" + HEARTBEAT + "\nc\n"}, 20_000, 60_000),
    ({"MEMORY.md": "x\r\n\r\n\r\n" + HEARTBEAT.replace("\n", "\r\n") + "\n\n\n\n" + "y" * 300}, 200, 60_000),
]


def test_all_startup_files(oracle, new_ws, checks):
    """With AGENTS.md, SOUL.md, IDENTITY.md and BOOTSTRAP.md there or missing, USER.md and MEMORY.md
    are cut or skipped as OpenClaw cuts them, and doctor's budget numbers are OpenClaw's."""
    compare_cases(oracle, new_ws, checks, STARTUP_CASES)


def test_shared_driver_prompt_op(oracle, new_ws, checks):
    """The shared driver's ``prompt`` op (MEMORY.md alone, UTC): caps and prelude together."""
    ws = new_ws()
    build(ws, {"MEMORY.md": "M" * 21_000 + "\n", "memory/2026-11-30.md": "today\n", "memory/2026-11-29.md": "yesterday\n"})
    (answer,) = oracle.batch([{"op": "prompt", "ws": str(ws), "date": "2026-11-30"}])
    section = ours(ws)
    checks.same("MEMORY.md injected", [f.content for f in section.injected], [f["content"] for f in answer["bootstrap"]])
    checks.same("prelude", section.prelude, answer["prelude"])
    checks.done()


REFUSED_TREES = {
    "symlinked MEMORY.md, target inside": {"real.md": "real text\n", "MEMORY.md": ("symlink", "real.md")},
    "symlinked USER.md, dangling": {"USER.md": ("symlink", "nowhere.md"), "MEMORY.md": "m\n"},
    "symlinked MEMORY.md to a folder": {"d/x.md": "x", "MEMORY.md": ("symlink", "d")},
    "MEMORY.md a folder": {"MEMORY.md/inner.md": "inner", "USER.md": "u\n"},
    "USER.md a folder": {"USER.md": None, "MEMORY.md": "m\n"},
    "MEMORY.md a FIFO": {"MEMORY.md": ("fifo",)},
}


def test_bootstrap_files_openclaw_refuses(oracle, new_ws, checks):
    """A root file that is there but that OpenClaw's guarded read refuses (a symlink, a folder, a
    FIFO, a file with two hard links, also one over 2 MiB) is injected as its ``[UNREADABLE: ...]``."""
    cases = []
    for label, tree in REFUSED_TREES.items():
        ws = new_ws()
        build(ws, tree)
        cases.append((label, ws))
    for label, names in (("hard-linked MEMORY.md", ["MEMORY.md"]), ("hard-linked USER.md over 2 MiB", ["USER.md"])):
        ws = new_ws()
        build(ws, {"MEMORY.md": "m\n", "USER.md": "u" * (3 * 1024 * 1024)})
        for name in names:
            os.link(ws / name, ws.parent / f"second-{name}")
        cases.append((label, ws))
    answers = oracle.more([boot(ws) for _label, ws in cases])
    for (label, ws), answer in zip(cases, answers):
        compare_startup(checks, label, ours(ws), answer)
    checks.done()


def test_hard_linked_daily_note_left_out(oracle, new_ws, checks):
    ws = new_ws()
    today, yesterday = _days(0, 1)
    build(ws, {f"memory/{today}.md": "today, with a second name\n", f"memory/{yesterday}.md": "yesterday\n"})
    os.link(ws / f"memory/{today}.md", ws.parent / "second.md")
    (answer,) = oracle.more([{"op": "prelude", "ws": str(ws), "nowMs": int(NOW.timestamp() * 1000), "userTimezone": "UTC"}])
    checks.same("prelude with a hard-linked note of today", ours(ws, tz="UTC").prelude, answer["prelude"])
    checks.done()


def _days(*offsets):
    return [(NOW.date() - dt.timedelta(days=o)).isoformat() for o in offsets]


def _prelude_tree():
    today, yesterday, before, old = _days(0, 1, 2, 20)
    return {
        f"memory/{today}.md": "today's note\n```code```\n",
        f"memory/{yesterday}.md": "yesterday\r\nwith CRLF\r\n",
        f"memory/{before}.md": "two days ago " + "😀" * 700,
        f"memory/{old}.md": "too old",
        **{f"memory/{today}-s{i}.md": f"slug {i}\n" for i in range(6)},
        f"memory/{yesterday}-blank.md": " \n\t\n",
        f"memory/{yesterday}-big.md": "b" * 20_000,
        f"memory/{yesterday}-[weird] name é.md": "odd label",
        f"memory/{today}x.md": "not a slug (no dash)",
        f"memory/sub/{today}.md": "not directly under memory/",
    }


PRELUDE_SETTINGS = [
    {}, {"dailyMemoryDays": 1}, {"dailyMemoryDays": 3}, {"dailyMemoryDays": 20}, {"dailyMemoryDays": 0},
    {"maxFileChars": 5}, {"maxFileChars": 1}, {"maxTotalChars": 300}, {"maxTotalChars": 120}, {"maxTotalChars": 1},
    {"maxTotalChars": 600, "maxFileChars": 50}, {"maxFileBytes": 10}, {"maxFileBytes": 19_999}, {"maxFileBytes": 20_000},
    {"maxFileBytes": 100_000}, {"enabled": False}, {"applyOn": ["reset"]}, {"applyOn": ["new", "reset"]},
    {"maxFileChars": 2.9, "dailyMemoryDays": "3"},
]


def test_prelude_settings(oracle, new_ws, checks):
    ws = new_ws()
    tree = _prelude_tree()
    build(ws, tree)
    # Distinct modification times, newest first as listed: OpenClaw keeps the newest 4 slugged notes.
    for i, rel in enumerate(sorted(r for r in tree if "-s" in r)):
        t = 1_700_000_000 + i * 10
        os.utime(ws / rel, (t, t))
    requests = [{"op": "prelude", "ws": str(ws), "nowMs": int(NOW.timestamp() * 1000), "userTimezone": "UTC",
                 "startupContext": sc} for sc in PRELUDE_SETTINGS]
    for sc, answer in zip(PRELUDE_SETTINGS, oracle.more(requests)):
        mine = ours(ws, startup=sc, tz="UTC").prelude
        theirs = answer["prelude"]
        if sc.get("applyOn") == ["reset"] or sc.get("enabled") is False:
            # OpenClaw checks these before it builds the prelude (shouldApplyStartupContext, for the
            # session's action; ours is "new"), so the builder the oracle calls still answers.
            checks.same(f"prelude {sc}: not applied to a new session", mine, None)
            continue
        checks.same(f"prelude {sc}", mine, theirs)
    checks.done()


TIMES = [
    (dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC), "UTC"),
    (dt.datetime(2026, 11, 30, 23, 30, tzinfo=dt.UTC), "Pacific/Kiritimati"),
    (dt.datetime(2026, 11, 30, 0, 30, tzinfo=dt.UTC), "America/Los_Angeles"),
    (dt.datetime(2026, 11, 30, 5, 0, tzinfo=dt.UTC), "Asia/Kolkata"),
    (dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC), "Pacific/Pago_Pago"),
    (dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC), "Not/AZone"),
    # As Intl takes a zone: UTC offsets, any letter case, links; not a file of the zone folder.
    (dt.datetime(2026, 11, 30, 20, 30, tzinfo=dt.UTC), "+05:00"),
    (dt.datetime(2026, 11, 30, 20, 30, tzinfo=dt.UTC), "+0530"),
    (dt.datetime(2026, 11, 30, 3, 0, tzinfo=dt.UTC), "\u221205:00"),
    (dt.datetime(2026, 11, 30, 20, 30, tzinfo=dt.UTC), "asia/kolkata"),
    (dt.datetime(2026, 11, 30, 3, 0, tzinfo=dt.UTC), "AMERICA/NEW_YORK"),
    (dt.datetime(2026, 11, 30, 20, 30, tzinfo=dt.UTC), "Asia/Calcutta"),
    (dt.datetime(2026, 11, 30, 20, 30, tzinfo=dt.UTC), "posix/Asia/Tokyo"),
    (dt.datetime(2026, 11, 30, 20, 30, tzinfo=dt.UTC), "+24:00"),
]


def test_prelude_dates_in_user_timezone_and_utc(oracle, new_ws, checks):
    ws = new_ws()
    build(ws, {f"memory/{d}.md": f"note of {d}\n" for d in ["2026-11-28", "2026-11-29", "2026-11-30", "2026-12-01", "2026-12-02"]})
    requests = [{"op": "prelude", "ws": str(ws), "nowMs": int(now.timestamp() * 1000), "userTimezone": tz,
                 "startupContext": {"dailyMemoryDays": 2}} for now, tz in TIMES]
    for (now, tz), answer in zip(TIMES, oracle.more(requests)):
        # An unknown zone falls back to the host's zone (UTC for both sides here).
        checks.same(f"prelude at {now} in {tz}", ours(ws, tz=tz, now=now, startup={"dailyMemoryDays": 2}).prelude,
                    answer["prelude"])
    checks.done()


CHARS = st.sampled_from(["a", " ", "\n", "\r\n", "\t", "😀", "é", "`", "```", "\u3000", "\ufeff", "x"])
TEXT = st.lists(CHARS, max_size=80).map("".join)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
          phases=[Phase.explicit, Phase.generate])  # every example costs an OpenClaw run: no shrinking
@given(cases=st.lists(st.tuples(TEXT, TEXT, st.integers(1, 90), st.integers(1, 600), TEXT, TEXT,
                                st.integers(1, 60), st.integers(1, 400), TEXT), min_size=10, max_size=10))
def test_generated_caps_and_notes(oracle, new_ws, cases):
    from .conftest import Checks

    checks = Checks()
    built = []
    for user, memory, max_chars, total, today_note, slug_note, file_chars, total_chars, soul in cases:
        ws = new_ws()
        build(ws, {"USER.md": user, "MEMORY.md": memory, "memory/2026-11-30.md": today_note,
                   "memory/2026-11-29-s.md": slug_note, "SOUL.md": soul, "AGENTS.md": soul + "\n- must " + user})
        built.append((ws, max_chars, total, {"maxFileChars": file_chars, "maxTotalChars": total_chars}))
    answers = oracle.more([boot(ws, maxChars=m, totalMaxChars=t) for ws, m, t, _s in built])
    pre = oracle.more([{"op": "prelude", "ws": str(ws), "nowMs": int(NOW.timestamp() * 1000), "userTimezone": "UTC",
                        "startupContext": s} for ws, _m, _t, s in built])
    for (ws, m, t, s), b, p in zip(built, answers, pre):
        section = ours(ws, max_chars=m, total=t, startup=s, tz="UTC")
        compare_startup(checks, f"{ws} max={m} total={t}", section, b)
        checks.same(f"{ws} {s}: prelude", section.prelude, p["prelude"])
    checks.done()


def test_slugged_notes_of_one_time_in_localecompare_order(oracle, new_ws, checks):
    """Slugged notes with one modification time: OpenClaw keeps the newest four by its
    ``localeCompare`` (ICU), where '_' < '-' < '#' < digits < letters, lower case before upper."""
    today = _days(0)[0]
    slugs = [["1", "_a", "-a", "#a", "b", "B", "a"], ["x", "X", "x_1", "x-1", "x1", "é", "e"],
             ["a b", "a_b", "a-b", "ab", "aB", "Ab", "😀"], ["2", "10", "_", "-", "ß", "ss", "st"]]
    built = []
    for names in slugs:
        ws = new_ws()
        for name in names:
            path = ws / f"memory/{today}-{name}.md"
            build(ws, {f"memory/{today}-{name}.md": f"note {name}\n"})
            os.utime(path, (1_700_000_000, 1_700_000_000))
        built.append(ws)
    requests = [{"op": "prelude", "ws": str(ws), "nowMs": int(NOW.timestamp() * 1000), "userTimezone": "UTC"} for ws in built]
    for ws, names, answer in zip(built, slugs, oracle.more(requests)):
        checks.same(f"prelude of slugs {names}", ours(ws, tz="UTC").prelude, answer["prelude"])
    checks.done()


def test_slugged_notes_less_than_a_quarter_microsecond_apart(oracle, new_ws, checks):
    """OpenClaw orders slugged notes by Node's ``mtimeMs`` (``sec * 1e3 + nsec / 1e6``): times 123 ns
    apart differ there, though ``ns / 1e6`` makes them equal."""
    today = _days(0)[0]
    base = int(NOW.timestamp()) * 10**9
    built = []
    for offsets in ((0, 123), (123, 0), (0, 1), (100, 200), (999_999_877, 999_999_999)):
        ws = new_ws()
        for name, offset in zip(("z", "a"), offsets):
            build(ws, {f"memory/{today}-{name}.md": f"note {name}\n"})
            os.utime(ws / f"memory/{today}-{name}.md", ns=(base + offset, base + offset))
        built.append((offsets, ws))
    requests = [{"op": "prelude", "ws": str(ws), "nowMs": int(NOW.timestamp() * 1000), "userTimezone": "UTC"}
                for _o, ws in built]
    for (offsets, ws), answer in zip(built, oracle.more(requests)):
        checks.same(f"prelude of slugs z, a at +{offsets} ns", ours(ws, tz="UTC").prelude, answer["prelude"])
    checks.done()


def test_workspace_reached_through_a_symlink_is_named_as_configured(oracle, new_ws, checks):
    """OpenClaw's ``[MISSING] Expected at: <path>`` markers name the workspace as configured (a
    symlink kept): their length, and so what is left of the budget for MEMORY.md, is OpenClaw's."""
    from openclaw_memory.files.scan import scan_workspace
    from openclaw_memory.settings import Overrides, resolve_settings

    real = new_ws()
    build(real, {"MEMORY.md": "m" * 1000})
    link = real.parent / ("a-much-longer-workspace-link-name-" + "x" * 40)
    os.symlink(real, link)
    state = real.parent / "state"
    state.mkdir()
    cases = [(str(link), link), (f"{link}/../{link.name}/", link), (str(real), real)]
    answers = oracle.more([boot(shown, totalMaxChars=900) for _given, shown in cases])
    for (as_given, _shown), answer in zip(cases, answers):
        resolved = resolve_settings(Overrides(workspace=as_given, state_dir=str(state)))
        section = build_prompt_section(scan_workspace(resolved), now=NOW, total_cap=900,
                                       workspace_spelled=resolved.workspace_spelled)
        compare_startup(checks, f"workspace {as_given}", section, answer)
    checks.done()


# Lines that JavaScript's /\b(?:...must...)\b/iu takes or leaves, with ſ (U+017F) and K (U+212A), the only
# letters beyond ASCII that it folds to ASCII ones and counts as word characters for \b.
UNICODE_RULE_LINES = ["this mu\u017ft be kept", "\u212amust not count", "must\u212a neither", "\u017fmust neither",
                      "\u00e9must counts", "must\u00e9 counts", "\u0130must counts", "pr\u0131 counts", "\u0131pr counts",
                      "MU\u017fT counts", "AGENT\u017f.md counts", "\u017fecret counts", "secret_ not", "\u00b5must counts",
                      "st\u00dfmust counts", "\u212a\u212a plain", "te\u017ft", "commit\u0301 accent after", "\u0441ommit cyrillic"]


def test_agents_digest_words_as_javascript_iu_takes_them(oracle, new_ws, checks):
    cases = []
    for lines in (UNICODE_RULE_LINES, UNICODE_RULE_LINES[::-1]):
        body = "".join(f"{line}\n" + "plain prose line\n" * 40 for line in lines)
        cases.append(({"AGENTS.md": "# Agents\n" + "plain prose line\n" * 300 + body + "plain prose line\n" * 300,
                       "MEMORY.md": "m\n"}, 3_000, 60_000))
        cases.append(({"AGENTS.md": "# Agents\n" + "plain prose line\n" * 300 + body, "MEMORY.md": "m\n"}, 1_200, 60_000))
    compare_cases(oracle, new_ws, checks, cases)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user (uid 65534), whom chmod 000 stops")
def test_unreadable_startup_file_of_a_symlinked_workspace(oracle, checks):
    """A startup file its user may not read, in a workspace configured through a symbolic link: OpenClaw's
    ``[UNREADABLE: EACCES: permission denied, open '<path>']`` names the real path it opened (the
    ``[MISSING]`` lines the link), and what is left of the budget for MEMORY.md is OpenClaw's. Both sides
    run as uid 65534, whom the file's mode stops (root reads it)."""
    from conftest import NOBODY, as_nobody  # tests/conftest.py
    from openclaw_memory.files.scan import scan_workspace
    from openclaw_memory.settings import Overrides, resolve_settings

    base = Path(tempfile.mkdtemp())
    try:
        real = base / "a-much-longer-real-folder-name" / "ws"
        real.mkdir(parents=True)
        build(real, {"USER.md": "u\n", "MEMORY.md": "m" * 3000 + "\n"})
        (base / "l").symlink_to(real.parent)
        (base / "state").mkdir()
        for folder, _dirs, names in os.walk(base):
            os.chmod(folder, 0o755)
            for name in names:
                os.chmod(os.path.join(folder, name), 0o644)
        os.chmod(real / "USER.md", 0)
        resolved = resolve_settings(Overrides(workspace=str(base / "l" / "ws"), state_dir=str(base / "state")))

        def mine() -> dict:
            section = build_prompt_section(scan_workspace(resolved), now=NOW, total_cap=1000,
                                           workspace_spelled=resolved.workspace_spelled)
            return {"injected": [[f.name, f.content] for f in section.startup], "text": section.text,
                    "notice": section.notice}

        mine()  # as root first: every module it needs imported before the child drops to nobody
        ours_ = as_nobody(mine)
        (answer,) = oracle.more([boot(base / "l" / "ws", totalMaxChars=1000)], user=NOBODY, home=base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    checks.same("injected as uid 65534", ours_["injected"], [[f["name"], f["content"]] for f in answer["injected"]])
    checks.same("notice as uid 65534", ours_["notice"], answer["notice"])
    checks.done()

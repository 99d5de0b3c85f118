"""``doctor`` against OpenClaw's split-root detection, warning, merge (``migrateLegacyRootMemoryFile``)
and its "memory system not found" check, on copies of the same workspaces."""

from __future__ import annotations

from openclaw_memory.doctor.check_openclaw import MEMORY_SYSTEM_PROMPT, memory_system_missing
from openclaw_memory.doctor.runner import run_doctor
from openclaw_memory.settings import Overrides, resolve_settings

from .workspaces import build

MIB8 = 8 * 1024 * 1024

SPLIT_CASES = {
    "plain": {"MEMORY.md": "# Durable\n- likes tea\n", "memory.md": "- old fact\n"},
    "no final newlines": {"MEMORY.md": "canonical", "memory.md": "legacy"},
    "blank lines and spaces around": {"MEMORY.md": "keep\n\n\n  \t\n", "memory.md": "\n\n  legacy body  \n\n\n"},
    "unicode white space": {"MEMORY.md": "a\u3000\ufeff\u00a0\n", "memory.md": "\u2028\ufeffb\u3000"},
    "CRLF": {"MEMORY.md": "one\r\ntwo\r\n", "memory.md": "three\r\nfour\r\n"},
    "white space only legacy": {"MEMORY.md": "m\n", "memory.md": " \n\t\n"},
    "empty canonical": {"MEMORY.md": "", "memory.md": "only legacy\n"},
    "identical": {"MEMORY.md": "same\n", "memory.md": "same\n"},
    "invalid UTF-8 legacy": {"MEMORY.md": "m\n", "memory.md": b"caf\xe9 \xff\xfe end\n"},
    "astral text": {"MEMORY.md": "😀 canonical 𐍈\n", "memory.md": "😀 legacy\n"},
    "at the 8 MiB limit": {"MEMORY.md": "m\n", "memory.md": "x" * MIB8},
    "over the 8 MiB limit": {"MEMORY.md": "m\n", "memory.md": "x" * (MIB8 + 1)},
    "symlinked legacy": {"MEMORY.md": "m\n", "real.md": "linked legacy\n", "memory.md": ("symlink", "real.md")},
    "symlinked canonical": {"real.md": "linked canonical\n", "MEMORY.md": ("symlink", "real.md"), "memory.md": "legacy\n"},
}


def _our_doctor(ws, state):
    s = resolve_settings(Overrides(workspace=str(ws), state_dir=str(state)))
    before = [f for f in run_doctor(s).findings if f.id == "split-root"]
    report = run_doctor(s, fix=True)
    return before, report


def _archive(ws):
    root = ws / ".openclaw-repair" / "root-memory"
    found = sorted(root.glob("*/memory.md")) if root.exists() else []
    return found[0] if found else None


def _normalized(text: bytes, archive_shown: str | None) -> bytes:
    return text.replace(archive_shown.encode(), b"<ARCHIVE>") if archive_shown else text


def test_split_root_warning_and_merge(oracle, new_ws, tmp_path, monkeypatch, home, checks):
    monkeypatch.setenv("HOME", str(home))  # both sides show the home folder as "~"
    monkeypatch.delenv("OPENCLAW_HOME", raising=False)
    cases = []
    for label, tree in SPLIT_CASES.items():
        ws_ours, ws_theirs = new_ws(), new_ws()
        build(ws_ours, tree)
        build(ws_theirs, tree)
        cases.append((label, ws_ours, ws_theirs))
    requests = []
    for _label, _o, theirs in cases:
        requests += [{"op": "detect", "ws": str(theirs)}, {"op": "doctor-fix", "ws": str(theirs)}]
    answers = oracle.batch(requests)
    for i, (label, ours_ws, theirs_ws) in enumerate(cases):
        detect, fix = answers[2 * i], answers[2 * i + 1]
        state = tmp_path / f"state-{i}"
        before, report = _our_doctor(ours_ws, state)
        # Two copies of one workspace: each side's own folder is shown as <WS>.
        ours_lines = before[0].message.replace(str(ours_ws).replace(str(home), "~", 1), "<WS>").split("\n")[:5] if before else None
        theirs_lines = (detect["warning"].replace(str(theirs_ws).replace(str(home), "~", 1), "<WS>").split("\n")[:5]
                        if detect["warning"] else None)
        checks.same(f"{label}: split-root warning (the fix hint names each tool's own command)", ours_lines, theirs_lines)
        if theirs_lines and "symlinked" not in label:
            ours_hint = before[0].message.split("\n")[5].replace("openclaw-memory", "openclaw")
            if fix.get("readLimitExceeded"):
                checks.deliberate("oversized-twin-manual-steps", "OpenClaw's hint sends the user to doctor --fix, which then "
                                  "refuses the file over its read limit; ours says how to merge by hand",
                                  ours_hint != detect["warning"].split("\n")[5] and "Merge by hand" in before[0].message,
                                  before[0].message)
            else:
                checks.same(f"{label}: fix hint", ours_hint, detect["warning"].split("\n")[5])
        if "symlinked" in label:
            # Neither merges through a link (OpenClaw's read refuses it: readError); ours says so up front.
            checks.same(f"{label}: nothing merged", any(r.status == "done" for r in report.repairs), bool(fix.get("changed")))
            checks.same(f"{label}: files untouched", (ours_ws / "MEMORY.md").read_bytes(), (theirs_ws / "MEMORY.md").read_bytes())
            continue
        archive = _archive(ours_ws)
        theirs_archive = fix.get("archivedLegacyPath")
        ours_shown = str(archive).replace(str(home), "~", 1) if archive else None
        theirs_shown = theirs_archive.replace(str(home), "~", 1) if theirs_archive else None
        checks.same(f"{label}: legacy file removed", (ours_ws / "memory.md").exists(), (theirs_ws / "memory.md").exists())
        checks.same(f"{label}: archive keeps the original bytes",
                    archive.read_bytes() if archive else None,
                    open(theirs_archive, "rb").read() if theirs_archive else None)
        checks.same(f"{label}: merged MEMORY.md",
                    _normalized((ours_ws / "MEMORY.md").read_bytes(), ours_shown),
                    _normalized((theirs_ws / "MEMORY.md").read_bytes(), theirs_shown))
        if fix.get("readLimitExceeded"):
            checks.same(f"{label}: nothing merged over the read limit", any(r.status == "done" for r in report.repairs), False)
    checks.done()


def test_deliberate_root_repairs(oracle, new_ws, tmp_path, monkeypatch, home, checks):
    monkeypatch.setenv("HOME", str(home))
    cases = {
        "lone-legacy-renamed": ({"memory.md": "only legacy\n"}, "a lone memory.md is never loaded; renaming it makes it memory"),
        "empty-legacy-archived-only": ({"MEMORY.md": "m\n", "memory.md": ""}, "merging an empty file only adds an empty heading"),
    }
    built = []
    for name, (tree, reason) in cases.items():
        ours_ws, theirs_ws = new_ws(), new_ws()
        build(ours_ws, tree)
        build(theirs_ws, tree)
        built.append((name, reason, ours_ws, theirs_ws))
    answers = oracle.batch([{"op": "doctor-fix", "ws": str(t)} for _n, _r, _o, t in built])
    for (name, reason, ours_ws, theirs_ws), answer in zip(built, answers):
        _our_doctor(ours_ws, tmp_path / f"state-{name}")
        differs = (ours_ws / "MEMORY.md").read_bytes() != (theirs_ws / "MEMORY.md").read_bytes() if (theirs_ws / "MEMORY.md").exists() \
            else (ours_ws / "MEMORY.md").exists()
        checks.deliberate(name, reason, differs, str(answer))
    checks.done()


def test_memory_md_folder_is_not_a_legacy_file(oracle, new_ws, tmp_path, checks):
    ws = new_ws()
    build(ws, {"MEMORY.md": "m\n", "memory.md/inner.md": "a folder"})
    (detect,) = oracle.batch([{"op": "detect", "ws": str(ws)}])
    s = resolve_settings(Overrides(workspace=str(ws), state_dir=str(tmp_path / "state")))
    ours = [f.id for f in run_doctor(s).findings if f.id in ("split-root", "legacy-root")]
    checks.same("no split-root warning for a memory.md folder", ours == [], detect["warning"] is None)
    checks.done()


SUGGEST_CASES = {
    "empty": {},
    "memory file": {"MEMORY.md": "m"},
    "memory folder named MEMORY.md": {"MEMORY.md/x": "x"},
    "symlinked memory file": {"real.md": "r", "MEMORY.md": ("symlink", "real.md")},
    "agents mentions it": {"AGENTS.md": "Read MEMORY.md at start.\n"},
    "agents mentions a longer word": {"AGENTS.md": "see MEMORY.mdx and XMEMORY.md\n"},
    "agents mentions it after non-ASCII": {"AGENTS.md": "éMEMORY.md\n"},
    "agents case differs": {"AGENTS.md": "memory.md\n"},
    "agents symlinked": {"docs/a.md": "MEMORY.md", "AGENTS.md": ("symlink", "docs/a.md")},
    "agents too big": {"AGENTS.md": "MEMORY.md " + "x" * (1024 * 1024)},
    "agents at the limit": {"AGENTS.md": "MEMORY.md " + "x" * (1024 * 1024 - 10)},
    "legacy only": {"memory.md": "legacy"},
}


def test_memory_system_not_found(oracle, new_ws, checks):
    built = []
    for label, tree in SUGGEST_CASES.items():
        ws = new_ws()
        build(ws, tree)
        built.append((label, ws))
    answers = oracle.more([{"op": "suggest", "ws": str(ws)} for _l, ws in built])
    for (label, ws), answer in zip(built, answers):
        checks.same(f"{label}: suggest the memory system", memory_system_missing(str(ws)), answer["suggest"])
    checks.same("OpenClaw's message", MEMORY_SYSTEM_PROMPT, answers[0]["text"])
    checks.done()

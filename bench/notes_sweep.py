"""Kill and race sweeps of the note-managing operations (figures, not a test).

A workspace of 30 notes, each linking to two others and to ``memory/n0.md`` (wiki, Markdown and
mention forms), indexed, with a history (every third note written twice by the agent), is copied
to one fixed path for each run (the history and the read records are kept by absolute path).

``--kill OP``: OP runs in a new process, SIGKILLed after a random delay within its measured run
time. Then: every note's bytes from before must be in the workspace or the history; ``files`` and
``doctor`` must say no traceback; ``doctor --fix`` must leave no interrupted operation, no leftover
of a killed write (``.tmp``, ``.swp``, ``.aside-``) and, for ``mv --update-links``, no link naming
nothing, not both the note and its moved copy, no empty folder made for the move, and not an
import half done.

``--race OP``: while OP runs, an editor process (starting after a random delay) edits notes OP
touches, each edit a vim-style save (temp file renamed over), an in-place truncate and write, or a
delete and re-create, each appending its own marker line. Then every marker must be in the
workspace or the history: an edit OP overwrote without keeping it is counted as lost.

OP is one of mv (``mv --update-links``), mvforce, rm, restore (``restore VERSION``), rollback
(``rollback --to TIME --force``, 15 notes changed and 3 removed after TIME), import (``import
--force`` of an export, 15 notes changed since), write (``write --expect --append``).

Usage: .venv/bin/python bench/notes_sweep.py --kill mv --runs 20
       .venv/bin/python bench/notes_sweep.py --race rollback --runs 10
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import xxhash
from _common import REPO, ROOT

N = 30
BASE = ROOT / "notes-sweep"
RUN = BASE / "run"  # every run at this one path
WS, STATE = RUN / "ws", RUN / "state"
ARCHIVE = BASE / "export.tar.gz"


def env(**extra: str) -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    out.update(OPENCLAW_WORKSPACE=str(WS), OPENCLAW_STATE_DIR=str(STATE), OPENCLAW_MEMORY_EMBEDDING_BACKEND="hash")
    out.update(extra)
    return out


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "openclaw_memory", *args], cwd=WS, capture_output=True, text=True,
                          env=env(), timeout=600)


def note(i: int, extra: str = "") -> str:
    return (f"# Note {i}\n\nFact {i}: the heron {i} flies north.{extra}\n\n"
            f"See [[n{(i + 1) % N}]] and [next](n{(i + 2) % N}.md) and memory/n0.md and [[n0]].\n")


def memory():
    from openclaw_memory.database import forget_connections
    from openclaw_memory.memory.local import LocalMemory
    from openclaw_memory.settings import Overrides, resolve_settings

    forget_connections()  # the state database was replaced by the copy of the template
    return LocalMemory(resolve_settings(Overrides(workspace=str(WS), state_dir=str(STATE)),
                                        environ={"OPENCLAW_MEMORY_EMBEDDING_BACKEND": "hash"}))


def build_template(template: Path) -> None:
    shutil.rmtree(RUN, ignore_errors=True)
    (WS / "memory").mkdir(parents=True)
    STATE.mkdir()
    (WS / "MEMORY.md").write_text("# Memory\n\nStart at [[n0]] and memory/n1.md.\n")
    for i in range(N):
        (WS / "memory" / f"n{i}.md").write_text(note(i))
    assert cli("index").returncode == 0
    mem = memory()
    for i in range(N):
        mem.read(f"memory/n{i}.md")
    for i in range(0, N, 3):
        mem.write(f"memory/n{i}.md", content=note(i, " Version two."))
    mem.read("MEMORY.md")
    shutil.copytree(RUN, template, symlinks=True)


def files() -> dict[str, bytes]:
    return {str(p.relative_to(WS)): p.read_bytes() for p in WS.rglob("*") if p.is_file() and not p.is_symlink()}


def history_bytes() -> list[bytes]:
    store = memory()
    from openclaw_memory.history.store import HistoryStore

    objects = HistoryStore.for_settings(store.settings).objects
    with contextlib.closing(sqlite3.connect(next(STATE.rglob("state.db")))) as con:
        versions = {row[0] for row in con.execute("SELECT version FROM versions")}
    return [b for v in versions if (b := objects.read_bytes(v, use=False)) is not None]


# -- the operations ------------------------------------------------------------------------------


def prepare(op: str) -> list[str]:
    """Ready the fresh copy for ``op``; its command line."""
    mem = memory()
    if op == "mv":
        return ["mv", "--update-links", "memory/n0.md", "memory/sub/moved.md"]
    if op == "mvforce":
        return ["mv", "--force", "memory/n3.md", "memory/n4.md"]
    if op == "rm":
        return ["rm", "memory/n3.md"]
    if op == "restore":
        return ["restore", "memory/n3.md", mem.history("memory/n3.md").versions[-1].version]
    if op == "write":
        return ["write", "memory/n4.md", "--expect", xxhash.xxh3_128_hexdigest((WS / "memory/n4.md").read_bytes()),
                "--append", "an agent line"]
    if op == "import":
        ARCHIVE.unlink(missing_ok=True)
        assert cli("export", str(ARCHIVE)).returncode == 0
    moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1))
    time.sleep(2.1)
    for i in range(1, N, 2):
        mem.write(f"memory/n{i}.md", content=note(i, " Changed since."))
    if op == "rollback":
        for i in (2, 4, 6):
            mem.read(f"memory/n{i}.md")
            mem.remove(f"memory/n{i}.md")
        return ["rollback", "--to", moment, "--force"]
    assert op == "import", op
    return ["import", "--force", str(ARCHIVE)]


EDITED = {"mv": [f"memory/n{i}" for i in (1, 2, 28, 29)] + ["MEMORY"], "mvforce": ["memory/n3", "memory/n4"],
          "rm": ["memory/n3"], "restore": ["memory/n3"], "write": ["memory/n4"]}


def edited(op: str) -> list[str]:
    return [f"{n}.md" for n in EDITED.get(op, [f"memory/n{i}" for i in range(8)])]


# -- kill ----------------------------------------------------------------------------------------


def after_kill(op: str, before: dict[str, bytes], template: Path) -> list[str]:
    problems = []
    for step in ("files", "doctor"):
        if "Traceback" in cli(step).stderr:
            problems.append(f"{step}: traceback")
    fixed = cli("doctor", "--fix")
    if "Traceback" in fixed.stderr or fixed.returncode not in (0, 1):
        problems.append(f"doctor --fix exit {fixed.returncode}")
    found = {f["id"] for f in json.loads(cli("doctor", "--json").stdout)["findings"]}
    problems += [f"after --fix: {f}" for f in sorted(found) if f.startswith("interrupted") or f == "write-leftovers"]
    now = files()
    problems += [f"left: {p}" for p in now if p.rsplit("/", 1)[-1].startswith(".") and p.endswith((".tmp", ".swp"))
                 or ".aside-" in p]
    kept = set(now.values()) | set(history_bytes())
    problems += [f"LOST {p}" for p, b in before.items() if b not in kept]
    if op == "import":  # all as the archive has them (as the template was when exported), or all as before
        notes = {p: b for p, b in now.items() if p.endswith(".md") and not p.rsplit("/", 1)[-1].startswith(".")}
        exported = {p: (template / "ws" / p).read_bytes() for p in notes if (template / "ws" / p).exists()}
        if notes != {p: b for p, b in before.items() if p in notes} and exported != {p: notes[p] for p in exported}:
            problems.append("half imported")
    if op == "mv":
        broken = json.loads(cli("links", "--broken", "--json").stdout)["outgoing"]
        problems += [f"{len(broken)} links name nothing"] if broken else []
        if (WS / "memory/n0.md").exists() and (WS / "memory/sub/moved.md").exists():
            problems.append("the note at both paths")
        if (WS / "memory/sub").is_dir() and not any((WS / "memory/sub").iterdir()):
            problems.append("the folder made for the move left empty")
    return problems


def kill_sweep(op: str, runs: int, template: Path) -> None:
    fresh(template)
    args = prepare(op)
    t0 = time.monotonic()
    assert (done := cli(*args)).returncode == 0, done.stderr
    duration = time.monotonic() - t0
    print(f"{op}: a whole run takes {duration:.2f} s")
    failed = 0
    for k in range(runs):
        fresh(template)
        args = prepare(op)
        before = files()
        delay = random.uniform(0.05, duration * 1.1)
        proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", *args], cwd=WS, env=env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        problems = after_kill(op, before, template)
        failed += bool(problems)
        print(f"  run {k}: killed after {delay:.3f} s (exit {proc.returncode}): {problems or 'ok'}", flush=True)
    print(f"{op}: {runs - failed} of {runs} runs clean")


# -- race ----------------------------------------------------------------------------------------


def editor(names: list[str], stop, out, seed: int, delay: float) -> None:
    rnd = random.Random(seed)
    time.sleep(delay)
    made = []
    while not stop.is_set():
        path = WS / rnd.choice(names)
        style = rnd.choice(["vim", "in-place", "recreate"])
        marker = f"edit-{seed}-{len(made)}-{style}\n".encode()
        try:
            new = path.read_bytes() + marker
            if style == "vim":
                tmp = path.with_name(f".{path.name}.swx")
                tmp.write_bytes(new)
                os.rename(tmp, path)
            elif style == "in-place":
                with open(path, "r+b") as f:
                    f.truncate(0)
                    f.write(new)
            else:
                path.unlink()
                path.write_bytes(new)
        except FileNotFoundError:
            continue  # moved or removed: a person edits what is there
        made.append(marker.decode().strip())
        time.sleep(rnd.uniform(0, 0.02))
    out.put(made)


def race_sweep(op: str, runs: int, template: Path) -> None:
    fresh(template)
    args = prepare(op)
    t0 = time.monotonic()
    cli(*args)
    duration = time.monotonic() - t0
    lost_runs = 0
    for seed in range(runs):
        fresh(template)
        args = prepare(op)
        stop, out = multiprocessing.Event(), multiprocessing.Queue()
        ed = multiprocessing.Process(target=editor, args=(edited(op), stop, out, seed,
                                                          random.Random(seed).uniform(0, duration)))
        ed.start()
        done = cli(*args)
        stop.set()
        markers = out.get()
        ed.join()
        kept = b"".join(b for p, b in files().items() if not p.rsplit("/", 1)[-1].startswith(".")) + b"\0".join(history_bytes())
        lost = [m for m in markers if m.encode() not in kept]
        lost_runs += bool(lost)
        said = done.stderr.strip().splitlines()[-1][:100] if done.returncode else ""
        traceback = " TRACEBACK" if "Traceback" in done.stderr else ""
        print(f"  run {seed}: exit {done.returncode} {said}{traceback}; {len(markers)} edits, {len(lost)} lost {lost[:3]}",
              flush=True)
    print(f"{op}: {runs - lost_runs} of {runs} runs lost no edit")


def fresh(template: Path) -> None:
    shutil.rmtree(RUN, ignore_errors=True)
    shutil.copytree(template, RUN, symlinks=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    ops = ("mv", "mvforce", "rm", "restore", "rollback", "import", "write")
    which.add_argument("--kill", choices=ops)
    which.add_argument("--race", choices=ops)
    parser.add_argument("--runs", type=int, default=10)
    a = parser.parse_args()
    template = BASE / "template"
    if not template.exists():
        build_template(template)
    os.chdir(REPO)
    (kill_sweep(a.kill, a.runs, template) if a.kill else race_sweep(a.race, a.runs, template))


if __name__ == "__main__":
    main()

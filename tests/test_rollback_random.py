"""Rollback against random histories: seeded sequences of writes, copies (a note's bytes written
under a second name), moves, forced moves, removals, restores, and imports of an earlier export
over the workspace and an extra folder, each moment's files recorded, then rolled back to moments
in a random order (a rollback of a rollback included): every file ends byte for byte as it was at
that moment."""

from __future__ import annotations

import datetime as dt
import os
import random
import time

import pytest

STEPS, ROLLBACKS = 14, 6


def _files(*roots) -> dict[str, bytes]:
    out = {}
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                with open(path, "rb") as fh:
                    out[path] = fh.read()
    return out


def _moment() -> str:
    time.sleep(0.002)  # (moments fall strictly between two log entries: the clock must move)
    now = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    time.sleep(0.002)
    return now


@pytest.mark.parametrize("seed", [*range(9), 13, 17, 19, 33, 35, 42])
def test_a_rollback_to_any_moment_of_a_random_history_gives_its_files_back(seed, cli, workspace, tmp_path):
    rng = random.Random(seed)
    extra = tmp_path / "extra"
    extra.mkdir()
    names = ["memory/a.md", "memory/b.md", "memory/p/c.md", "MEMORY.md", str(extra / "e.md"), "memory/p/q/d.md"]

    def om(*args: str, input: str | None = None):
        return cli(*args, "--extra", str(extra), *(("--no-index",) if args[0] in ("write", "mv", "rm", "restore", "rollback") else ()),
                   input=input)

    def present() -> list[str]:
        return [n for n in names if os.path.exists(n if n.startswith("/") else workspace / n)]

    moments, made, archive = [], 0, None
    for step in range(STEPS):
        op, have = rng.choice(["write", "write", "copy", "mv", "mv --force", "rm", "restore", "import"]), present()
        absent = [n for n in names if n not in have]
        if op == "copy" and have and absent:
            source, name = rng.choice(have), rng.choice(absent)
            with open(source if source.startswith("/") else workspace / source) as fh:
                done = om("write", name, "--stdin", input=fh.read())
            assert done.returncode == 0, done.stderr
        elif op == "import" and archive is not None:
            done = om("import", str(archive), "--force")
            assert done.returncode == 0, done.stderr
        elif op == "write" or not have or op in ("copy", "import"):
            op, name = "write", rng.choice(names)
            om("read", name)
            done = om("write", name, "--stdin", input=f"step {step} of seed {seed}: {name}\n")
            assert done.returncode == 0, done.stderr
        elif op.startswith("mv"):
            source = rng.choice(have)
            target = rng.choice(absent if op == "mv" and absent else [n for n in names if n != source])
            om("read", source)
            om("read", target)  # (a forced move replaces a note read)
            done = om("mv", source, target, *op.split()[1:])
        elif op == "rm":
            name = rng.choice(have)
            om("read", name)
            done = om("rm", name)
        else:
            done = om("restore", rng.choice(names), "--last")  # (none removed: refused, nothing changed)
        made += done.returncode == 0
        if archive is None and step >= 3:  # an export of an early moment, imported over a later one
            archive = tmp_path / "early.tar.gz"
            assert om("export", str(archive)).returncode == 0
        moments.append((_moment(), _files(workspace, extra), f"{step}: {op}"))
    assert made >= STEPS // 2  # (a history to go back through, not refusals)
    for t, files, what in rng.sample(moments, ROLLBACKS):
        done = om("rollback", "--to", t, "--force")
        assert done.returncode == 0, (what, done.stderr)
        now = _files(workspace, extra)
        assert now == files, (f"after {what}", sorted(set(now) ^ set(files)), [p for p in files if now.get(p) != files[p]])

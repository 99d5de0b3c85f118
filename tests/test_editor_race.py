"""A person saving in an editor while an agent appends never loses a save (docs/watch.md).

Real processes: an "editor" saves MEMORY.md atomically (a temp file renamed over it, 0-30 ms
apart), each save adding a line with its own marker, while an "agent" process reads the file and
appends to it through ``open_memory`` (the workspace's service when ``watch`` runs) in a loop. A save
is lost when its marker is in neither the final file nor any version the history kept.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_watch import Watch

from conftest import env_for, settings_for, wait_for, write

EDITOR = textwrap.dedent("""
    import os, random, sys, time
    path, saves = sys.argv[1], int(sys.argv[2])
    scratch = os.path.join(os.path.dirname(path), ".MEMORY.md.editor-swap")  # an editor's own temp name
    rng = random.Random(36)
    for i in range(saves):
        with open(path, "rb") as f:
            text = f.read()
        with open(scratch, "wb") as f:
            f.write(text + b"editor-save %d\\n" % i)
        os.rename(scratch, path)
        time.sleep(rng.uniform(0, 0.03))
""")

AGENT = textwrap.dedent("""
    import json, os, sys
    from openclaw_memory import WriteBlocked, open_memory, resolve_settings, Overrides
    stop = sys.argv[1]
    memory = open_memory(resolve_settings(Overrides()), notice=lambda line: None)
    written = blocked = 0
    while not os.path.exists(stop):
        memory.read("MEMORY.md")
        try:
            memory.write("MEMORY.md", append="agent-append %d" % (written + blocked), update_index=False)
            written += 1
        except WriteBlocked:
            blocked += 1
    print(json.dumps({"written": written, "blocked": blocked}))
""")


def lost_saves(workspace: Path, state_dir: Path, saves: int, with_watch: bool) -> tuple[list[int], dict]:
    """Run the editor against the agent; the saves whose marker survives nowhere, and the agent's counts."""
    from openclaw_memory.history.store import HistoryStore

    write(state_dir / "openclaw-memory.toml", "[history]\nkeep_per_path = 1000000\n")
    write(workspace / "MEMORY.md", "# Memory\n")
    watch = Watch(workspace, state_dir) if with_watch else None
    stop = workspace.parent / "stop-agent"
    try:
        if watch is not None:
            watch.wait_started()
        env = env_for(workspace, state_dir)
        agent = subprocess.Popen([sys.executable, "-c", AGENT, str(stop)], cwd=workspace, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: (workspace / "MEMORY.md").read_text().count("agent-append") or agent.poll() is not None)
        editor = subprocess.run([sys.executable, "-c", EDITOR, str(workspace / "MEMORY.md"), str(saves)],
                                capture_output=True, text=True, timeout=600)
        assert editor.returncode == 0, editor.stderr
        stop.touch()
        out, err = agent.communicate(timeout=300)
        assert agent.returncode == 0, err
    finally:
        if watch is not None:
            watch.stop()
    texts = [(workspace / "MEMORY.md").read_bytes()]
    settings = settings_for(workspace, state_dir)
    store = HistoryStore.for_settings(settings)
    texts += [store.objects.read_bytes(e.version) or b"" for e in store.entries(str(workspace / "MEMORY.md"))]
    seen = b"".join(texts)
    return [i for i in range(saves) if b"editor-save %d\n" % i not in seen], json.loads(out)


def test_an_editor_saving_while_the_agent_appends_loses_no_save(workspace, state_dir):
    lost, agent = lost_saves(workspace, state_dir, 120, with_watch=False)
    assert agent["written"] > 0
    assert lost == [], f"{len(lost)} of 120 saves lost; agent {agent}"


@pytest.mark.slow
@pytest.mark.parametrize("with_watch", [False, True], ids=["alone", "watch"])
def test_five_hundred_editor_saves_against_the_agent_lose_none(workspace, state_dir, with_watch):
    lost, agent = lost_saves(workspace, state_dir, 500, with_watch)
    print(f"\n500 saves, watch={with_watch}: {len(lost)} lost; agent {agent}")
    assert agent["written"] > 0
    assert lost == [], f"{len(lost)} of 500 saves lost; agent {agent}"

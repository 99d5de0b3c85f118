"""A config edited while the service runs: what only gives a request its default (openclaw.json's
maxResults) is sent by the caller and answered by the service; what it cannot answer (other extra
paths) is refused, and a command that then meets the index the service holds says why and what to do."""

from __future__ import annotations

import json
import signal

from test_serve_signals import Running

from conftest import settings_for, write

WORDS = ("sunbathe in the morning", "eat tamarind pods", "live in female-led troops", "mark trees with scent")
LEMURS = {f"memory/lemur{i}.md": f"# Lemur {i}\n\nRing-tailed lemurs {w}.\n" for i, w in enumerate(WORDS)}


def _max_results(state_dir, n: int) -> None:
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"memorySearch": {"query": {"maxResults": n}}}}}))


def test_a_caller_whose_max_results_changed_is_answered_not_refused(workspace, state_dir):
    from openclaw_memory.memory.protocol import request_line, settings_key
    from openclaw_memory.serve.core import ServiceCore

    core = ServiceCore(settings_for(workspace, state_dir), live_sync=False)
    try:
        _max_results(state_dir, 7)
        caller = settings_for(workspace, state_dir)
        assert caller.max_results == 7 and settings_key(caller) == settings_key(core.settings)
        request = core.read_request(request_line(1, "search", {"query": "lemur"}, caller))
        assert request.settings.agent == "main"
    finally:
        core.close()


def test_an_edit_of_the_startup_prompts_caps_leaves_the_settings_key_as_it_was(workspace, state_dir):
    """bootstrapMaxChars (the startup prompt's, built in-process) edited while `watch` ran made every
    search refused (other settings), then fail on the shards the live sync held."""
    from openclaw_memory.memory.protocol import settings_key

    (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"bootstrapMaxChars": 20000}}}))
    before = settings_for(workspace, state_dir)
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"bootstrapMaxChars": 30000,
                                                                                "bootstrapTotalMaxChars": 90000}}}))
    after = settings_for(workspace, state_dir)
    assert (before.prompt.file_chars, after.prompt.file_chars) == (20000, 30000)  # the control: the edit is read
    assert settings_key(before) == settings_key(after)


def test_an_edit_of_max_results_while_watch_runs_is_answered_by_it_with_the_new_default(workspace, state_dir, cli):
    """It refused every search (other settings), and the search in-process waited 5 s for the shards the
    live sync held open and failed: `is held by another openclaw-memory process ...; Try again when it
    has finished`, exit 2, as long as the person kept editing."""
    for path, text in LEMURS.items():
        write(workspace / path, text)
    watch = Running(workspace, state_dir, "watch", env={})
    try:
        watch.said("watching ")
        for n in (1, 3):
            _max_results(state_dir, n)
            found = cli("search", "lemurs", "--json", "--min-score", "0")
            assert found.returncode == 0 and found.stderr == "", found.stderr
            assert len(found.json()["results"]) == n
        given = cli("search", "lemurs", "--json", "--min-score", "0", "--limit", "2")
        assert given.returncode == 0 and given.stderr == "" and len(given.json()["results"]) == 2
        status = cli("status", "--json").json()["service"]
        assert status["running"] is True and status["requests"] >= 4, status
        watch.signal(signal.SIGTERM)
        assert watch.end() == 0
    finally:
        watch.kill()


def test_a_command_the_service_cannot_answer_meeting_the_index_it_holds_says_to_restart_it(workspace, state_dir, cli, tmp_path):
    """Other extra paths in openclaw.json since `watch` started: the service cannot answer them, and
    its live sync keeps the shards open; the search in-process said `Try again when it has finished`,
    which waiting never made true."""
    for path, text in LEMURS.items():
        write(workspace / path, text)
    # Shards kept open for the whole test; the lock waited for briefly.
    write(state_dir / "openclaw-memory.toml", "[service]\nshard_idle = 3600\n[index]\nlock_timeout = 0.2\n")
    watch = Running(workspace, state_dir, "watch", env={})
    try:
        watch.said("watching ")
        notes = write(tmp_path / "notes" / "trip.md", "# Trip\n\nlemurs of Madagascar\n").parent
        (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"memorySearch": {"extraPaths": [str(notes)]}}}}))
        failed = cli("search", "lemurs", "--json")
        assert failed.returncode == 2, failed.stdout + failed.stderr
        error = failed.json()["error"]
        pid = watch.proc.pid
        assert f"is held by the memory service (pid {pid}), which cannot answer this command: it runs with the settings it started with" in error
        assert "`openclaw-memory serve --stop`, then `openclaw-memory serve` (or `openclaw-memory watch`) again" in error
        assert "once it lets go of the index (3600 s after it last used it" in error
        assert "Try again when it has finished" not in error and "\n" not in error
        watch.signal(signal.SIGTERM)
        assert watch.end() == 0
    finally:
        watch.kill()

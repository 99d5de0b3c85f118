"""What an unknown command suggests: OpenClaw's `openclaw memory ...` typed here, and the words people
type for a command (its ``also`` names) or for a flag (`fix`, `version`)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize(("args", "meant"), [
    (("memory", "search", "foo"), "openclaw-memory search foo"),
    (("memory", "status"), "openclaw-memory status"),
    (("memory", "index", "--full"), "openclaw-memory index --full"),
    (("memory",), "openclaw-memory search QUERY"),
])
def test_openclaws_memory_word_is_said_to_be_one_too_many(cli, args, meant):
    # It was "no such command 'memory'" and no more.
    done = cli(*args)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.splitlines()[0] == (f"error: no such command 'memory': openclaw-memory's commands are openclaw's "
                                           f"memory subcommands: try '{meant}'"), done.stderr


@pytest.mark.parametrize(("word", "meant"), [
    ("find", "search"),  # it suggested 'index'
    ("sync", "index"),
    ("reindex", "index"),
    ("check", "doctor"),
    ("verify", "doctor"),
    ("fix", "openclaw-memory doctor --fix"),
    ("version", "openclaw-memory --version"),
])
def test_a_word_people_type_suggests_the_command(cli, word, meant):
    done = cli(word, "--json")
    assert done.returncode == 2, done
    assert json.loads(done.stdout)["error"] == f"no such command {word!r} (did you mean {meant!r}?)", done.stdout

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
    (("memory", "get", "MEMORY.md"), "openclaw-memory read MEMORY.md"),  # these three said 'search QUERY'
    (("memory", "sync"), "openclaw-memory index"),
    (("memory", "find", "backups"), "openclaw-memory search backups"),
    (("memory", "memory", "memory", "get"), "openclaw-memory read"),  # the lead said once per word
    (("memory",) * 1000, "openclaw-memory search QUERY"),  # a RecursionError traceback
])
def test_openclaws_memory_word_is_said_to_be_one_too_many(cli, args, meant):
    # It was "no such command 'memory'" and no more.
    done = cli(*args)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.splitlines()[0] == (f"error: no such command 'memory': openclaw-memory's commands are openclaw's "
                                           f"memory subcommands: try '{meant}'"), done.stderr


@pytest.mark.parametrize(("args", "then"), [
    (("memory", "reset", "--yes"), "no such command 'reset' (did you mean 'openclaw-memory index --full'?)"),
    (("memory", "forget", "--session", "x"), "no such command 'forget': `openclaw memory forget` is OpenClaw's own"),
    (("memory", "serch", "x"), "no such command 'serch' (did you mean 'search'?)"),
])
def test_openclaws_memory_word_then_a_word_that_is_no_command_gets_that_words_answer(cli, args, then):
    """`memory reset`, `memory forget`, `memory promote`: each was told to try 'search QUERY'."""
    done = cli(*args)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.splitlines()[0].startswith(
        "error: no such command 'memory': openclaw-memory's commands are openclaw's memory subcommands; " + then), done.stderr


@pytest.mark.parametrize(("word", "meant"), [
    ("find", "search"),  # it suggested 'index'
    ("sync", "index"),
    ("reindex", "index"),
    ("check", "doctor"),
    ("verify", "doctor"),
    ("fix", "openclaw-memory doctor --fix"),
    ("version", "openclaw-memory --version"),
    ("reset", "openclaw-memory index --full"),  # OpenClaw's `memory reset`: it suggested 'restore', which writes files
])
def test_a_word_people_type_suggests_the_command(cli, word, meant):
    done = cli(word, "--json")
    assert done.returncode == 2, done
    assert json.loads(done.stdout)["error"] == f"no such command {word!r} (did you mean {meant!r}?)", done.stdout


@pytest.mark.parametrize("word", ["promote", "forget", "rem-backfill", "session-backfill", "promote-explain", "rem-harness"])
def test_openclaws_own_memory_subcommands_are_said_to_be_openclaws(cli, word):
    """`promote` suggested 'prompt', `forget` nothing: OpenClaw's session and dreaming commands."""
    done = cli(word, "--json")
    assert done.returncode == 2, done
    assert json.loads(done.stdout)["error"] == (
        f"no such command {word!r}: `openclaw memory {word}` is OpenClaw's own (its sessions and dreaming); "
        "openclaw-memory manages the memory files (`openclaw-memory --help` lists its commands)")

"""Every command, argument and flag of the CLI, declared once.

The parser (:mod:`.parse`, argparse) is generated from these tables: it runs every command and
renders every ``--help``. A command's handler is a function of ``cli/commands``, called as
``handler(settings, **values)`` with one keyword per argument and flag (its ``dest``);
tests/test_cli_spec.py checks that each takes exactly those keywords.

Every command imports this module, and so every command module, whose top level must stay
light: what a command needs beyond the standard library and the memory door is imported inside
its functions (the eleven modules a command does not use add about 2 ms to its start;
tests/test_cli_spec.py checks that a light command loads nothing heavy). The tables are named
tuples, not dataclasses, for the same reason: a frozen dataclass costs several times as much to
define.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from .commands import (
    doctor_cmd,
    files_cmd,
    history_cmd,
    index_cmd,
    mcp_cmd,
    migrate_cmd,
    prompt_cmd,
    read_cmd,
    serve_cmd,
    watch_cmd,
    watchdog_cmd,
    write_cmd,
)

Kind = Literal["value", "switch", "toggle"]


class Opt(NamedTuple):
    """A flag. ``value`` takes one value (repeatable with ``repeat``); ``switch`` is on/off;
    ``toggle`` is ``--x/--no-x`` with ``None`` when neither is given."""

    dest: str
    flags: tuple[str, ...]
    help: str
    kind: Kind = "value"
    type: Callable[[str], Any] = str
    default: Any = None
    repeat: bool = False
    metavar: str | None = None
    required: bool = False
    default_from: Callable[[], Any] | None = None  # computes the default, when only this command should pay for it

    @property
    def negative(self) -> str:
        """The ``--no-x`` spelling of a toggle."""
        return "--no-" + self.flags[0][2:]

    def default_value(self) -> Any:
        if self.repeat:
            return []
        return self.default_from() if self.default_from is not None else self.default


class Arg(NamedTuple):
    dest: str
    help: str
    required: bool = True
    metavar: str | None = None
    flag: str | None = None  # a flag of the command that may give it instead (OpenClaw's ``--query``)


class Command(NamedTuple):
    name: str  # "files", or "watchdog snapshot" for a subcommand of a group
    help: str
    handler: Callable[..., int | None]  # handler(settings, **values); settings None when not ``needs_settings``
    args: tuple[Arg, ...] = ()
    opts: tuple[Opt, ...] = ()
    also: tuple[str, ...] = ()  # names people type for it (OpenClaw's tool, a shell habit): suggested, not accepted
    # OpenClaw's flags of the same command that have no use here: what to do instead.
    instead: tuple[tuple[str, str], ...] = ()
    needs_settings: bool = True  # False: runs without a workspace (completion)

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.name.split())


def _min_score() -> float:
    from ..index.results import DEFAULT_MIN_SCORE  # the search layer's (its import is for `search` alone)

    return DEFAULT_MIN_SCORE


def json_opt(help: str = "Print JSON.") -> Opt:
    return Opt("json_out", ("--json",), help, kind="switch", default=False)


def _no_index() -> Opt:
    return Opt("no_index", ("--no-index",), "Do not update the search index afterwards.", kind="switch", default=False)


# Accepted before the command, between a group and its subcommand, and after the command.
SETTINGS: tuple[Opt, ...] = (
    Opt("workspace", ("--workspace", "-w"), "Agent workspace (else $OPENCLAW_WORKSPACE, config, else OpenClaw's default <state dir>/workspace).", metavar="PATH"),
    Opt("agent", ("--agent",), "Agent id (default: main).", metavar="ID"),
    Opt("state_dir", ("--state-dir",), "OpenClaw's state folder (else $OPENCLAW_STATE_DIR, else ~/.openclaw); its openclaw.json is read unless $OPENCLAW_CONFIG_PATH names one.", metavar="PATH"),
    Opt("extra", ("--extra",), "Extra memory path (repeatable; adds to config and $OPENCLAW_MEMORY_EXTRA_PATHS).", repeat=True, metavar="PATH"),
    Opt("multimodal", ("--multimodal",), "List images and audio in extra paths.", kind="toggle"),
    Opt("qdrant_url", ("--qdrant-url",), "Use a Qdrant server for the index (else $OPENCLAW_MEMORY_QDRANT_URL, toml [index] url).", metavar="URL"),
    Opt("session", ("--session",), "Read records of this session (the write guard checks what it read); default: the agent's CLI records.", metavar="ID"),
)

MEMORY_PATH = "Memory file, relative to the workspace (or inside an extra path)."

COMMANDS: tuple[Command, ...] = (
    Command("files", "List the memory files: MEMORY.md, USER.md, the dream diary, memory/**/*.md, extra paths.", files_cmd.run_files,
            opts=(json_opt(),), also=("ls", "list")),
    Command("read", "Read a window of a memory file by lines and characters (OpenClaw's memory_get).", read_cmd.run_read,
            args=(Arg("path", MEMORY_PATH[:-1] + ", or a search citation (PATH#L10-L24)."),),
            opts=(
                Opt("from_line", ("--from",), "First line to return (1-based; default 1, or a citation's first line).", type=int, metavar="N"),
                Opt("lines", ("--lines",), "How many lines (default 120).", type=int, metavar="N"),
                Opt("max_chars", ("--max-chars",), "Character budget (default 12000).", type=int, metavar="N"),
                json_opt("Print JSON (OpenClaw's memory_get result)."),
                Opt("diff", ("--diff",), "Show what changed since this agent's last read (whole file, unified diff).", kind="switch", default=False),
            ), also=("get", "cat")),
    Command("prompt", "Build the startup memory section: MEMORY.md, recent daily notes, within OpenClaw's caps.", prompt_cmd.run_prompt,
            opts=(
                Opt("date", ("--date",), "Which day is 'today' (YYYY-MM-DD; default: the local date).", metavar="DATE"),
                Opt("peek", ("--peek",), "Show a pending workspace-change checkpoint without consuming it.", kind="switch", default=False),
                json_opt(),
            )),
    Command("doctor", "Check the memory files (split or legacy root, symlinks, extra paths, prompt caps, UTF-8, watchdog, index); --fix repairs.",
            doctor_cmd.run_doctor_command,
            opts=(
                Opt("fix", ("--fix", "--repair"), "Repair what can be repaired (asks first on a terminal).", kind="switch", default=False),
                Opt("yes", ("--yes",), "Do not ask before each repair.", kind="switch", default=False),
                Opt("non_interactive", ("--non-interactive",), "Never prompt (for scripts).", kind="switch", default=False),
                json_opt("Print the findings and repairs as JSON (never prompts)."),
            )),
    Command("index", "Index the memory files for search (incremental: only what changed is re-embedded).", index_cmd.run_index,
            opts=(
                Opt("full", ("--full", "--force"), "Drop the agent's index and rebuild it from scratch (--force: OpenClaw's spelling).",
                    kind="switch", default=False),
                json_opt("Print a JSON summary."),
            ), instead=(("--verbose", "progress is always on stderr, and `openclaw-memory status` shows the model, backend, "
                                      "collections and extra paths"),)),
    Command("search", "Search the memory: hybrid (meaning + keywords) by default, one result per file.", index_cmd.run_search,
            args=(Arg("query", "What to look for (put -- before a query that starts with -).", flag="--query"),),
            opts=(
                Opt("query_flag", ("--query",), "The query as a flag (OpenClaw's spelling; it wins over QUERY, as in OpenClaw).", metavar="TEXT"),
                Opt("limit", ("--limit", "--max-results"), "Most results to return (--max-results: OpenClaw's spelling).", type=int, default=6,
                    metavar="N"),
                Opt("min_score", ("--min-score",), "Drop results scoring below this (0-1: calibrated relevance, same scale in every mode).",
                    type=float, default_from=_min_score, metavar="SCORE"),
                Opt("mode", ("--mode",), "hybrid (default), vector or text (keywords only; never loads the model).", default="hybrid", metavar="MODE"),
                Opt("no_sync", ("--no-sync",), "Do not re-index changed files first; list them in `stale`.", kind="switch", default=False),
                Opt("collections", ("--collection",), "Only this collection (repeatable; names as `collections` lists them).", repeat=True, metavar="NAME"),
                Opt("paths", ("--path",), "Only files matching this glob (repeatable; memory/people/*.md).", repeat=True, metavar="GLOB"),
                Opt("since", ("--since",), "Only files dated (daily notes) or modified on or after this day.", metavar="YYYY-MM-DD"),
                Opt("until", ("--until",), "Only files dated or modified on or before this day.", metavar="YYYY-MM-DD"),
                json_opt(),
            )),
    Command("collections", "List the agent's collections: names, paths, patterns, point counts, backend.", index_cmd.run_collections,
            opts=(json_opt(),)),
    Command("status", "Show the index per collection: files, chunks, stale files, last index, model, size on disk.", index_cmd.run_status,
            opts=(json_opt(),), instead=(
                ("--deep", "status always reads the index itself (every shard opened and counted); `openclaw-memory doctor` "
                           "checks it for damage, interrupted runs and changed embedding settings"),
                ("--index", "`openclaw-memory index` updates the index"),
                ("--fix", "`openclaw-memory doctor --fix` repairs the index"),
                ("--verbose", "every field is in `openclaw-memory status --json`"))),
    Command("watchdog snapshot", "Record every workspace file (type, stat, content hash); the newest snapshot is the baseline.",
            watchdog_cmd.run_snapshot,
            args=(Arg("label", "Name for this snapshot (letters, digits, . _ -; default: a UTC timestamp).", required=False),),
            opts=(json_opt(),)),
    Command("watchdog verify", "Compare the workspace with the baseline. Exit 0: no break; 1: files changed or deleted; 2: no baseline.",
            watchdog_cmd.run_verify, opts=(json_opt(),)),
    Command("watchdog heartbeat", "Verify, then take a timestamped snapshot. Clean: prints HEARTBEAT_OK. Break: lists the changes, writes a checkpoint.",
            watchdog_cmd.run_heartbeat, opts=(json_opt(),)),
    Command("write", "Write a memory file atomically, blocked (exit 3) if it changed since this agent read it.", write_cmd.run_write,
            args=(Arg("path", MEMORY_PATH),),
            opts=(
                Opt("append", ("--append",), "Add TEXT on its own line at the end of the file.", metavar="TEXT"),
                Opt("replace_file", ("--replace-file",), "Replace the whole file with this file's bytes.", metavar="FILE"),
                Opt("stdin", ("--stdin",), "Replace the whole file with standard input.", kind="switch", default=False),
                Opt("expect", ("--expect",), "Write only if the file is at this version (prefix of 8+ hex characters).", metavar="VERSION"),
                Opt("idempotency_key", ("--idempotency-key",), "Retry-safe key: a second write with it within 24 h writes nothing and prints the first result (default: agent, path, mode and content).", metavar="KEY"),
                _no_index(),
                json_opt(),
            )),
    Command("history", "List the versions of a memory file kept in the history, newest first.", history_cmd.run_history,
            args=(Arg("path", MEMORY_PATH),), opts=(json_opt(),)),
    Command("restore", "Restore an earlier version atomically; the current one is kept, so this can be undone.", history_cmd.run_restore,
            args=(Arg("path", "Memory file to restore."), Arg("version", "The version to bring back (a unique prefix of 8+ hex characters).")),
            opts=(_no_index(), json_opt())),
    Command("state", "Show each memory file's state for this agent: read_fresh, read_stale, discovered_unread, written_unread.",
            history_cmd.run_state, opts=(json_opt(),)),
    Command("migrate", "Copy every collection of the workspace (vectors and payloads, no re-embedding), verify counts; resumable.",
            migrate_cmd.run_migrate,
            opts=(
                Opt("to", ("--to",), "Where to copy the index: a Qdrant URL (http://HOST:6333) or 'embedded'.", required=True, metavar="TARGET"),
                Opt("source", ("--from",), "Where to copy it from: 'embedded' (default when --to is a URL) or a Qdrant URL.", metavar="SOURCE"),
                json_opt("Print a JSON summary."),
            )),
    Command("watch", "Keep the search index up to date while memory files change, and serve the CLI and MCP from warm memory (the service with live sync; Ctrl-C or SIGTERM stops).",
            watch_cmd.run_watch,
            opts=(
                json_opt("One JSON object per line per applied change."),
                Opt("poll", ("--poll",), "Poll the folders instead of using inotify (network file systems).", kind="switch", default=False),
            )),
    Command("serve", "Run the workspace's memory service: model and index kept warm for the CLI and every MCP session, live sync on (Ctrl-C or SIGTERM stops).",
            serve_cmd.run_serve_command,
            opts=(
                Opt("no_watch", ("--no-watch",), "Answer requests only; do not follow file changes (no live sync).", kind="switch", default=False),
                Opt("poll", ("--poll",), "Poll the folders instead of using inotify (network file systems).", kind="switch", default=False),
                Opt("http", ("--http",), "Also serve MCP over streamable HTTP on this loopback HOST:PORT (port 0: any free one), with a bearer token.", metavar="ADDR"),
                Opt("stop", ("--stop",), "Stop the workspace's running service (SIGTERM; waits until it has finished its requests) and exit.", kind="switch", default=False),
                json_opt("One JSON object per line per applied change (with --stop: the outcome)."),
            )),
    Command("mcp", "Serve memory_search, memory_get, memory_write and memory_status over MCP on stdin/stdout (through the service when it runs).", mcp_cmd.run_mcp,
            opts=(
                Opt("serve", ("--serve",), "Start the workspace's service in the background first when none runs.", kind="switch", default=False),
                Opt("http", ("--http",), "Serve MCP over streamable HTTP on this loopback HOST:PORT instead of stdio (runs the service in the foreground).", metavar="ADDR"),
            )),
    Command("completion", "Print a shell completion script, generated from this command spec: eval \"$(openclaw-memory completion bash)\".",
            lambda settings, shell: _completion(shell), args=(Arg("shell", "bash, zsh or fish."),), needs_settings=False),
)

GROUPS = {"watchdog": "Snapshot the workspace and report what changed since (changed, deleted, new files)."}

# OpenClaw's flags no command here takes: what to do instead (a command's own ``instead`` comes first).
INSTEAD = {"--verbose": "progress and warnings always go to stderr, and --json gives every field"}

PROG = "openclaw-memory"
HELP_FLAGS = ("-h", "--help")
VERSION_FLAG = "--version"
HELP_WORD = "help"  # `openclaw-memory help [COMMAND ...]`: the help of the root or of that command


def _completion(shell: str) -> int:
    """``completion SHELL``: the script is made from these tables (given, so that the generator
    needs nothing from this module that imports it)."""
    from .completion import Tables, print_completion

    return print_completion(shell, Tables(COMMANDS, GROUPS, SETTINGS, PROG, HELP_FLAGS, VERSION_FLAG, HELP_WORD))
HELP = "Find, read, index and search an AI agent's Markdown memory (MEMORY.md, USER.md, memory/**/*.md, extra paths)."


def find_command(words: tuple[str, ...]) -> Command | None:
    for command in COMMANDS:
        if command.words == words:
            return command
    return None

"""Every command, argument and flag of the CLI.

A command that runs an operation of the memory takes its name, help, arguments and flags from the
operation's declaration (:mod:`openclaw_memory.memory.base`): a parameter's name is its flag's
``dest``, its type the flag's kind, its help the flag's help, and the declaration's :class:`Cli`
says how it is spelled. What is the CLI's alone is here: ``--json`` and the other flags that shape
the output, metavars, OpenClaw's flags that have no use here, and the handler that renders the
result (an operation without one prints its JSON). Commands that are not operations (``watch``,
``serve``, ``mcp``, ``completion``) are written out.

The parser (:mod:`.parse`, argparse) is generated from these tables: it runs every command and
renders every ``--help``. A command's handler is a function of ``cli/commands``, called as
``handler(settings, **values)`` with one keyword per argument and flag (its ``dest``);
tests/test_cli_spec.py checks that each takes exactly those keywords.

Every command imports this module, and so every command module, whose top level must stay
light: what a command needs beyond the standard library and the memory door is imported inside
its functions (the eleven modules a command does not use add about 2 ms to its start;
tests/test_cli_spec.py checks that a light command loads nothing heavy). The tables are named
tuples, not dataclasses, for the same reason: a frozen dataclass costs several times as much to
define; and an operation's command reads its declaration only when a command line reaches it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from ..memory import OPERATIONS
from ..memory.operations import plain_type
from ..types import typed_day as day
from .commands import (
    archive_cmd,
    doctor_cmd,
    files_cmd,
    history_cmd,
    index_cmd,
    links_cmd,
    log_cmd,
    manage_cmd,
    mcp_cmd,
    migrate_cmd,
    prompt_cmd,
    read_cmd,
    rollback_cmd,
    serve_cmd,
    watch_cmd,
    watchdog_cmd,
    write_cmd,
)

if TYPE_CHECKING:
    from ..memory.operations import Param

Kind = Literal["value", "switch", "toggle", "off"]
SHELLS = ("bash", "zsh", "fish")  # what `completion` writes a script for


class Opt(NamedTuple):
    """A flag. ``value`` takes one value (repeatable with ``repeat``); ``switch`` is on/off;
    ``off`` turns off what is on by default (``--no-sync``); ``toggle`` is ``--x/--no-x`` with
    ``None`` when neither is given."""

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
    choices: tuple[str, ...] = ()  # the words its value may be, for shell completion (the handler checks them)

    @property
    def negative(self) -> str:
        """The ``--no-x`` spelling of a toggle."""
        return "--no-" + self.flags[0][2:]

    def default_value(self) -> Any:
        if self.repeat:
            return []
        if self.kind == "off":
            return True
        return self.default_from() if self.default_from is not None else self.default


class Arg(NamedTuple):
    dest: str
    help: str
    required: bool = True
    metavar: str | None = None
    flag: str | None = None  # a flag of the command that may give it instead (OpenClaw's ``--query``)
    choices: tuple[str, ...] = ()  # the words it may be, for shell completion (the handler checks them)


class Command:
    """A command. An operation's arguments and flags are made from its declaration when first
    asked for: a command line builds the one command it runs, not every command's (reading the
    declarations' annotations is most of what a light command would spend on the spec)."""

    __slots__ = ("name", "help", "handler", "_built", "_build", "also", "instead", "needs_settings", "given_settings",
                 "spelled")

    def __init__(self, name: str, help: str, handler: Callable[..., int | None], args: tuple[Arg, ...] = (),
                 opts: tuple[Opt, ...] = (), also: tuple[str, ...] = (), instead: tuple[tuple[str, str], ...] = (),
                 needs_settings: bool = True, given_settings: tuple[str, ...] = (),
                 spelled: tuple[str, str] | None = None,
                 build: Callable[[], tuple[tuple[Arg, ...], tuple[Opt, ...]]] | None = None):
        self.name = name  # "files", or "watchdog snapshot" for a subcommand of a group
        self.help = help
        self.handler = handler  # handler(settings, **values); settings None when not ``needs_settings``
        self._built = (args, opts) if build is None else None
        self._build = build
        self.also = also  # names people type for it (OpenClaw's tool, a shell habit): suggested, not accepted
        # OpenClaw's flags of the same command that have no use here: what to do instead.
        self.instead = instead
        self.needs_settings = needs_settings  # False: runs without a workspace (completion)
        # Settings flags the handler also gets, as given on the command line (None when not given): `log`
        # filters on --agent and --session (a level has each flag once, so the command cannot have its own).
        self.given_settings = given_settings
        self.spelled = spelled  # another command's name and a switch that also run this one

    def __repr__(self) -> str:
        return f"Command({self.name!r})"

    def _parts(self) -> tuple[tuple[Arg, ...], tuple[Opt, ...]]:
        if self._built is None:
            assert self._build is not None
            self._built = self._build()
        return self._built

    @property
    def args(self) -> tuple[Arg, ...]:
        return self._parts()[0]

    @property
    def opts(self) -> tuple[Opt, ...]:
        return self._parts()[1]

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.name.split())


# What a number or a date flag takes: ASCII digits as typed (int(), float() and date.fromisoformat
# also took '1_000', full-width and Arabic-Indic digits, '20261130', the week date '2026-W48-1').
_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*", re.ASCII)
_NUMBER = re.compile(r"\s*[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?|nan|inf(?:inity)?)\s*",
                     re.ASCII | re.IGNORECASE)  # (nan and inf: the range check answers them)


def integer(raw: str) -> int:
    if not _INTEGER.fullmatch(raw):
        raise ValueError(raw)
    return int(raw)


def number(raw: str) -> float:
    if not _NUMBER.fullmatch(raw):
        raise ValueError(raw)
    return float(raw)


def _min_score() -> float:
    from ..index.results import DEFAULT_MIN_SCORE  # the search layer's (its import is for `search` alone)

    return DEFAULT_MIN_SCORE


def operation_command(name: str, handler: Callable[..., int | None] | None = None, *, opts: tuple[Opt, ...] = (),
                      metavars: Mapping[str, str] = {}, defaults: Mapping[str, Callable[[], Any]] = {},
                      types: Mapping[str, Callable[[str], Any]] = {}, query_flag: str | None = None,
                      instead: tuple[tuple[str, str], ...] = (), given_settings: tuple[str, ...] = (),
                      choices: Mapping[str, Callable[[], tuple[str, ...]]] = {}) -> Command:
    """The command of the declared operation ``name``: its arguments and flags from the declaration,
    then ``opts`` (the CLI's own); ``handler`` renders the result (default: its JSON). A flag's
    choices (for completion) are its type's words (``Literal``), else ``choices``' (read when the
    command is built)."""
    op = OPERATIONS[name]
    cli = op.cli
    assert cli is not None, f"the operation {name} has no command"

    def build() -> tuple[tuple[Arg, ...], tuple[Opt, ...]]:
        shown = [p for p in op.params if p.sent and p.name not in cli.hidden]
        positional = cli.args if cli.args is not None else tuple(p.name for p in shown if p.required)
        args = tuple(Arg(p.name, p.help, required=p.required, flag=query_flag if p.name == "query" else None)
                     for p in shown if p.name in positional)
        flags = tuple(_flag(p, cli.flags.get(p.name), metavars.get(p.name), defaults.get(p.name), types.get(p.name),
                            choices[p.name]() if p.name in choices else None)
                      for p in shown if p.name not in positional)
        return args, (*flags, *opts)

    return Command(cli.command, op.summary, handler or _printing(name), also=cli.also, instead=instead,
                   given_settings=given_settings, spelled=cli.spelled, build=build)


def _flag(p: Param, spelled: tuple[str, ...] | None, metavar: str | None, default_from: Callable[[], Any] | None,
          typed: Callable[[str], Any] | None, choices: tuple[str, ...] | None = None) -> Opt:
    kind = plain_type(p.hint)
    if kind is bool:
        on = p.default is True
        flags = spelled or (("--no-" if on else "--") + p.name.replace("_", "-"),)
        return Opt(p.name, flags, p.help, kind="off" if on else "switch", default=p.default)
    types: dict[Any, Callable[[str], Any]] = {int: integer, float: number, dt.date: day}
    value_type = typed or types.get(kind, str)
    flags = spelled or ("--" + p.name.replace("_", "-"),)
    default = None if p.required else p.default
    return Opt(p.name, flags, p.help, type=value_type, default=default if default != () else None, repeat=kind is tuple,
               metavar=metavar, required=p.required, default_from=default_from,
               choices=_words(p.hint) if choices is None else choices)


def _words(hint: Any) -> tuple[str, ...]:
    """The words of a ``Literal`` type (``X | None`` and ``tuple[X, ...]`` of one too): a flag's choices."""
    import typing

    while typing.get_origin(hint) is not Literal:
        inner = [a for a in typing.get_args(hint) if a is not type(None) and a is not Ellipsis]
        if len(inner) != 1:
            return ()
        hint = inner[0]
    return tuple(str(word) for word in typing.get_args(hint))


def _origins() -> tuple[str, ...]:
    import typing

    from ..types import Origin

    return typing.get_args(Origin)


def _printing(name: str) -> Callable[..., int]:
    """The handler of an operation whose result the CLI does not render itself: its JSON."""

    def run(settings: Any, json_out: bool = True, **values: Any) -> int:
        from ..memory import open_memory, to_json
        from .output import print_json, warn

        memory = open_memory(settings, notice=warn, shard_idle_s=0)
        try:
            print_json(to_json(memory.call(OPERATIONS[name], (), values)))
        finally:
            memory.close()
        return 0

    return run


def json_opt(help: str = "Print JSON.") -> Opt:
    return Opt("json_out", ("--json",), help, kind="switch", default=False)


# Accepted before the command, between a group and its subcommand, and after the command.
SETTINGS: tuple[Opt, ...] = (
    Opt("workspace", ("--workspace", "-w"), "Agent workspace (else $OPENCLAW_WORKSPACE, config, else OpenClaw's default <state dir>/workspace).", metavar="PATH"),
    Opt("agent", ("--agent",), "Agent id (default: OpenClaw's default agent in openclaw.json, else main).", metavar="ID"),
    Opt("state_dir", ("--state-dir",), "OpenClaw's state folder (else $OPENCLAW_STATE_DIR, else ~/.openclaw); its openclaw.json is read unless $OPENCLAW_CONFIG_PATH names one.", metavar="PATH"),
    Opt("extra", ("--extra",), "Extra memory path (repeatable; adds to config and $OPENCLAW_MEMORY_EXTRA_PATHS).", repeat=True, metavar="PATH"),
    Opt("multimodal", ("--multimodal",), "List images and audio in extra paths.", kind="toggle"),
    Opt("qdrant_url", ("--qdrant-url",), "Use a Qdrant server for the index (else $OPENCLAW_MEMORY_QDRANT_URL, toml [index] url).", metavar="URL"),
    Opt("session", ("--session",), "Read records of this session (the write guard checks what it read); default: the agent's CLI records.", metavar="ID"),
)

_WRITTEN: tuple[Command, ...] = (
    operation_command("files", files_cmd.run_files, opts=(json_opt(),)),
    operation_command("read", read_cmd.run_read, metavars={"from_line": "N", "lines": "N", "max_chars": "N"},
                      types={"from_line": integer, "lines": integer, "max_chars": integer}, opts=(
        json_opt("Print JSON (OpenClaw's memory_get result)."),
        Opt("diff", ("--diff",), "Show what changed since this agent's last read (whole file, unified diff).", kind="switch", default=False),
    )),
    operation_command("prompt", prompt_cmd.run_prompt, metavars={"today": "DATE"}, opts=(json_opt(),)),
    operation_command("doctor", doctor_cmd.run_doctor_command, opts=(
        Opt("yes", ("--yes",), "Do not ask before each repair.", kind="switch", default=False),
        Opt("non_interactive", ("--non-interactive",), "Never prompt (for scripts).", kind="switch", default=False),
        json_opt("Print the findings and repairs as JSON (never prompts)."),
    )),
    operation_command("index", index_cmd.run_index, opts=(json_opt("Print a JSON summary."),),
                      instead=(("--verbose", "progress is always on stderr, and `openclaw-memory status` shows the model, "
                                             "backend, collections and extra paths"),)),
    operation_command("search", index_cmd.run_search, query_flag="--query", defaults={"min_score": _min_score},
                      metavars={"limit": "N", "min_score": "SCORE", "mode": "MODE", "collections": "NAME", "paths": "GLOB",
                                "since": "YYYY-MM-DD", "until": "YYYY-MM-DD"}, opts=(
        Opt("query_flag", ("--query",), "The query as a flag (OpenClaw's spelling; it wins over QUERY, as in OpenClaw).", metavar="TEXT"),
        json_opt(),
    )),
    operation_command("collections", index_cmd.run_collections, opts=(json_opt(),)),
    operation_command("status", index_cmd.run_status, opts=(json_opt(),), instead=(
        ("--deep", "status always reads the index itself (every shard opened and counted); `openclaw-memory doctor` "
                   "checks it for damage, interrupted runs and changed embedding settings"),
        ("--index", "`openclaw-memory index` updates the index"),
        ("--fix", "`openclaw-memory doctor --fix` repairs the index"),
        ("--verbose", "every field is in `openclaw-memory status --json`"))),
    operation_command("snapshot", watchdog_cmd.run_snapshot, opts=(json_opt(),)),
    operation_command("verify", watchdog_cmd.run_verify, opts=(json_opt(),)),
    operation_command("heartbeat", watchdog_cmd.run_heartbeat, opts=(json_opt(),)),
    operation_command("write", write_cmd.run_write, metavars={"append": "TEXT", "expect": "VERSION", "idempotency_key": "KEY"}, opts=(
        Opt("replace_file", ("--replace-file",), "Replace the whole file with this file's bytes.", metavar="FILE"),
        Opt("stdin", ("--stdin",), "Replace the whole file with standard input.", kind="switch", default=False),
        json_opt(),
    )),
    operation_command("history", history_cmd.run_history, opts=(json_opt(),)),
    operation_command("activity", log_cmd.run_log, opts=(json_opt(),), metavars={
        "since": "YYYY-MM-DD", "until": "YYYY-MM-DD", "paths": "GLOB", "origins": "ORIGIN", "limit": "N"},
                      given_settings=("agent", "session"), choices={"origins": _origins}),
    operation_command("restore", history_cmd.run_restore, opts=(json_opt(),)),
    operation_command("restore_all", rollback_cmd.run_rollback, metavars={"to": "SNAPSHOT|TIME"}, opts=(json_opt(),)),
    operation_command("move", manage_cmd.run_move, metavars={"expect": "VERSION"}, opts=(json_opt(),)),
    operation_command("remove", manage_cmd.run_remove, metavars={"expect": "VERSION"}, opts=(json_opt(),)),
    operation_command("state", history_cmd.run_state, opts=(json_opt(),)),
    operation_command("export_archive", archive_cmd.run_export, opts=(json_opt(),)),
    operation_command("import_archive", archive_cmd.run_import, opts=(json_opt(),)),
    operation_command("links", links_cmd.run_links, opts=(json_opt(),)),
    operation_command("migrate", migrate_cmd.run_migrate, metavars={"to": "TARGET", "source": "SOURCE"},
                      opts=(json_opt("Print a JSON summary."),)),
    Command("watch", "Keep the search index up to date while memory files change, and serve the CLI and MCP from warm memory (the service with live sync; Ctrl-C, SIGTERM or a closed terminal stops).",
            watch_cmd.run_watch,
            opts=(
                json_opt("One JSON object per line per applied change."),
                Opt("poll", ("--poll",), "Poll the folders instead of using inotify (network file systems).", kind="switch", default=False),
            )),
    Command("serve", "Run the workspace's memory service: model and index kept warm for the CLI and every MCP session, live sync on (Ctrl-C, SIGTERM or a closed terminal stops).",
            serve_cmd.run_serve_command,
            opts=(
                Opt("no_watch", ("--no-watch",), "Answer requests only; do not follow file changes (no live sync).", kind="switch", default=False),
                Opt("poll", ("--poll",), "Poll the folders instead of using inotify (network file systems).", kind="switch", default=False),
                Opt("http", ("--http",), "Also serve MCP over streamable HTTP on this loopback HOST:PORT (port 0: any free one), with a bearer token.", metavar="ADDR"),
                Opt("stop", ("--stop",), "Stop the workspace's running service (SIGTERM; waits until it has finished its requests) and exit.", kind="switch", default=False),
                json_opt("One JSON object per line per applied change (with --stop: the outcome)."),
            )),
    Command("mcp", "Serve memory_search, memory_get, memory_write, memory_status, memory_files and memory_links over MCP on stdin/stdout (through the service when it runs).", mcp_cmd.run_mcp,
            opts=(
                Opt("serve", ("--serve",), "Start the workspace's service in the background first when none runs.", kind="switch", default=False),
                Opt("http", ("--http",), "Serve MCP over streamable HTTP on this loopback HOST:PORT instead of stdio (runs the service in the foreground).", metavar="ADDR"),
            ), instead=(("--json", "mcp speaks MCP's JSON-RPC on stdin/stdout: every answer is JSON already"),)),
    Command("completion", "Print a shell completion script, generated from this command spec: eval \"$(openclaw-memory completion bash)\".",
            lambda settings, shell: _completion(shell), args=(Arg("shell", "bash, zsh or fish.", choices=SHELLS),), needs_settings=False,
            instead=(("--json", "completion prints a shell script, not JSON"),)),
)

GROUPS = {"watchdog": "Snapshot the workspace and report what changed since (changed, deleted, new files)."}

# OpenClaw's flags no command here takes: what to do instead (a command's own ``instead`` comes first).
INSTEAD = {"--verbose": "progress and warnings always go to stderr, and --json gives every field",
           "--version": "the version is `openclaw-memory --version`, before any command"}

PROG = "openclaw-memory"
HELP_FLAGS = ("-h", "--help")
VERSION_FLAG = "--version"
HELP_WORD = "help"  # `openclaw-memory help [COMMAND ...]`: the help of the root or of that command


def _completion(shell: str) -> int:
    """``completion SHELL``: the script is made from these tables (given, so that the generator
    needs nothing from this module that imports it)."""
    from .completion import Tables, print_completion

    return print_completion(shell, Tables(commands(), GROUPS, SETTINGS, PROG, HELP_FLAGS, VERSION_FLAG, HELP_WORD))
HELP = "Find, read, index and search an AI agent's Markdown memory (MEMORY.md, USER.md, memory/**/*.md, extra paths)."


def commands() -> tuple[Command, ...]:
    """Every command: those above, then one per operation declared with a command and rendered by
    none of them (its result printed as JSON), one declared after this module loaded too."""
    global _ALL, _SEEN
    if _SEEN != len(OPERATIONS):
        written = {c.name for c in _WRITTEN}
        _ALL = _WRITTEN + tuple(operation_command(op.name, opts=(json_opt("Print JSON (the default)."),))
                                for op in OPERATIONS.values() if op.cli is not None and op.cli.command not in written)
        _SEEN = len(OPERATIONS)
    return _ALL


_ALL: tuple[Command, ...] = ()
_SEEN = -1
COMMANDS = commands()  # the commands of the operations declared in the package


def find_command(words: tuple[str, ...]) -> Command | None:
    for command in commands():
        if command.words == words:
            return command
    return None

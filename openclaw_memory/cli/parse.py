"""The command-line parser built from :mod:`.spec`, standard library only.

It parses every command line (typer's import alone costs 100-150 ms here, most of a light
command's start-up budget); typer is loaded only to render ``--help``. Settings flags are
accepted anywhere before a bare ``--``. An option that takes a value takes the next word even when
it starts with ``-`` (``--append "-wow"``), unless that word is itself one of the command's flags
(``--agent --mode text`` is a missing value, not an agent named ``--mode``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import UsageError
from .spec import COMMANDS, GROUPS, PROG, SETTINGS, Command, Opt, find_command

HELP_FLAGS = ("-h", "--help")
VERSION_FLAG = "--version"


class CommandLineError(UsageError):
    """A command line that does not match the spec; the message ends with where to get help."""

    def __init__(self, message: str, words: tuple[str, ...] = ()):
        where = " ".join((PROG, *words))
        super().__init__(f"{message}\nTry '{where} --help' for help.")


@dataclass(frozen=True)
class Parsed:
    action: Literal["run", "help", "version"]
    words: tuple[str, ...] = ()  # the command (or group) named
    command: Command | None = None
    values: dict[str, Any] = field(default_factory=dict)  # the command's arguments and flags, by dest
    settings: dict[str, Any] = field(default_factory=dict)  # the settings flags, by dest
    json: bool = False


def _defaults(opts) -> dict[str, Any]:
    return {o.dest: ([] if o.repeat else o.default) for o in opts}


def _table(opts) -> dict[str, tuple[Opt, Any]]:
    """Flag spelling -> (option, the value a bare flag means)."""
    table: dict[str, tuple[Opt, Any]] = {}
    for opt in opts:
        for flag in opt.flags:
            table[flag] = (opt, True)
        if opt.kind == "toggle":
            table[opt.negative] = (opt, False)
    return table


def _convert(opt: Opt, flag: str, raw: str, words) -> Any:
    if opt.type is str:
        return raw
    try:
        return opt.type(raw)
    except ValueError:
        kind = "an integer" if opt.type is int else "a number"
        raise CommandLineError(f"{flag} must be {kind}, not {raw!r}", words) from None


def parse(argv: list[str]) -> Parsed:
    settings = _defaults(SETTINGS)
    values: dict[str, Any] = {}
    words: list[str] = []
    command: Command | None = None
    table = _table(SETTINGS)
    positionals: list[str] = []
    wants_help = wants_version = as_json = False
    only_positionals = False
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if only_positionals or token == "-" or not token.startswith("-"):
            if command is None and not only_positionals:
                words.append(token)
                command = find_command(tuple(words))
                if command is None and not (len(words) == 1 and token in GROUPS):
                    raise CommandLineError(_unknown_command(words), tuple(words[:-1]))
                if command is not None:
                    values = _defaults(command.opts)
                    table = _table(SETTINGS + command.opts)
            else:
                positionals.append(token)
            continue
        if token == "--":
            only_positionals = True
            continue
        if token in HELP_FLAGS:
            wants_help = True
            continue
        if token == VERSION_FLAG and command is None:
            wants_version = True
            continue
        flag, inline = token, None
        if token.startswith("--") and "=" in token:
            flag, inline = token.split("=", 1)
        elif not token.startswith("--") and len(token) > 2 and token[:2] in table:
            flag, inline = token[:2], token[2:]  # -wPATH
        if flag not in table:
            raise CommandLineError(_unknown_option(flag, table), tuple(words))
        opt, meaning = table[flag]
        target = settings if opt in SETTINGS else values
        if opt.kind != "value":
            if inline is not None:
                raise CommandLineError(f"{flag} takes no value", tuple(words))
            target[opt.dest] = meaning
            if opt.dest == "json_out":
                as_json = True
            continue
        if inline is None:
            if i >= len(argv) or argv[i] in table or argv[i] in HELP_FLAGS:
                raise CommandLineError(f"{flag} needs a value (write {flag}=VALUE for a value that starts with -)", tuple(words))
            inline = argv[i]
            i += 1
        value = _convert(opt, flag, inline, tuple(words))
        if opt.repeat:
            target[opt.dest].append(value)
        else:
            target[opt.dest] = value
    if wants_version:
        return Parsed("version")
    if wants_help or command is None:
        return Parsed("help", tuple(words))
    _place_positionals(command, positionals, values)
    for opt in command.opts:
        if opt.required and values[opt.dest] is None:
            raise CommandLineError(f"missing option {opt.flags[0]}", command.words)
    return Parsed("run", command.words, command, values, settings, as_json)


def _place_positionals(command: Command, positionals: list[str], values: dict[str, Any]) -> None:
    if len(positionals) > len(command.args):
        extra = positionals[len(command.args)]
        raise CommandLineError(f"unexpected argument {extra!r}", command.words)
    for arg, given in zip(command.args, positionals + [None] * len(command.args)):
        if given is None and arg.required:
            raise CommandLineError(f"missing argument {(arg.metavar or arg.dest).upper()}", command.words)
        values[arg.dest] = given


def _unknown_command(words: list[str]) -> str:
    level = len(words)
    names = sorted({c.words[level - 1] for c in COMMANDS if len(c.words) >= level and c.words[: level - 1] == tuple(words[:-1])})
    close = difflib.get_close_matches(words[-1], names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"no such command {words[-1]!r}{hint}"


def _unknown_option(flag: str, table) -> str:
    close = difflib.get_close_matches(flag, [f for f in table if f.startswith("--")], n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"no such option: {flag}{hint}"

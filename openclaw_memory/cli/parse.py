"""The command-line parser: one argparse parser, generated from :mod:`.spec`, that runs every
command and renders every ``--help``.

Each level (the root, a group, a command) is an :class:`argparse.ArgumentParser` holding the
spec's flags of that level plus the settings flags, so settings are accepted before the command,
between a group and its subcommand, and after the command; a deeper level's scalar wins, and
``--extra`` adds up over the levels. A level is built only when the command line reaches it
(building all of them would cost a light command more than its whole parse).

Before argparse assigns the values, each level checks its own words against the spec
(:meth:`_Level.canonical`), for the rules argparse does not have:

- a flag that takes a value takes the next word even when it starts with ``-``
  (``--append "-wow"``), unless that word is itself one of the level's flags or ``-h``/``--help``
  (``--agent --mode text`` is a missing value, not an agent named ``--mode``);
- an unknown flag or command is an error with the closest spelling suggested; no abbreviations;
- usage errors are :class:`CommandLineError` (exit 2), never argparse's own exit.

A command level then hands argparse its words as ``--flag=VALUE ... -- ARG ...``, so argparse
never has to guess whether a word is a flag or an argument.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from ..errors import UsageError, shell_word, shown
from ..types import no_such_day
from .spec import (
    GROUPS,
    HELP,
    HELP_FLAGS,
    HELP_WORD,
    INSTEAD,
    PROG,
    SETTINGS,
    VERSION_FLAG,
    Arg,
    Command,
    Opt,
    commands,
    day,
    find_command,
    integer,
    number,
)

SETTINGS_TITLE = "settings (before or after the command)"
# A value or an argument that is `--` itself, as argparse is handed it: argparse drops every `--`
# it reads as a value (`--agent=--` was [], a traceback further on; `restore a -- --` lost its
# VERSION). No word of a command line holds a NUL, so this stands for `--` alone.
_DASHES = "\0--"
_LEVEL = " level"  # namespace keys no flag can have: the deepest level reached, words it left over
_EXTRAS = " extras"


class CommandLineError(UsageError):
    """A command line that does not match the spec; ``help_line`` says where to get help (on the
    terminal, below the message: a JSON error stays the one line)."""

    def __init__(self, message: str, words: tuple[str, ...] = ()):
        super().__init__(message)
        self.help_line = f"Try '{' '.join((PROG, *words))} --help' for help."


_NOTHING: Mapping[str, Any] = MappingProxyType({})


class Parsed(NamedTuple):
    action: Literal["run", "help", "version"]
    words: tuple[str, ...] = ()  # the command (or group) named
    command: Command | None = None
    values: Mapping[str, Any] = _NOTHING  # the command's arguments and flags, by dest
    settings: Mapping[str, Any] = _NOTHING  # the settings flags, by dest
    json: bool = False
    help: str = ""  # the rendered help, for "help"


class _HelpRequested(Exception):
    def __init__(self, level: _Level):
        self.level = level


class _VersionRequested(Exception):
    pass


class _Help(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        raise _HelpRequested(parser)


class _Version(_Help):
    def __call__(self, parser, namespace, values, option_string=None):
        raise _VersionRequested()


class _Commands(argparse.Action):
    """A root's or a group's command: its name and every word after it go to the command's level."""

    def __init__(self, option_strings, dest, names: dict[str, str], **kwargs):
        kwargs.pop("required", None)  # no command at all means help
        super().__init__(option_strings, argparse.SUPPRESS, nargs=argparse.PARSER, metavar="COMMAND", required=False, **kwargs)
        self.names = names

    def _get_subactions(self) -> list[argparse.Action]:
        """The commands, one line each under COMMAND: the hook argparse's help formatter asks every
        action for (its own subparsers action answers it the same way)."""
        return [argparse.Action([], name, metavar=name, help=_escape(text)) for name, text in self.names.items()]

    def __call__(self, parser, namespace, values, option_string=None):
        name, *rest = values
        level = _Level((*parser.words, name), parser.line)
        given, extras = level.parse_known_args(rest)
        for key, value in vars(given).items():  # settings given at both levels: the deeper one wins
            setattr(namespace, key, value)
        if extras:
            setattr(namespace, _EXTRAS, extras)


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout; the terminal's width read without importing shutil (which loads
    bz2 and lzma: a few milliseconds of every command's start, for the width of a help page)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None, **kwargs):
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width, **kwargs)


def _columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else the terminal's, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _escape(text: str) -> str:
    return text.replace("%", "%%")  # argparse %-formats help texts


def _metavar(item: Opt | Arg) -> str:
    return item.metavar or item.dest.upper()


def _repeat_dest(opt: Opt, depth: int) -> str:
    """A repeatable setting keeps one list per level (root, group, command), added up afterwards."""
    return f"{opt.dest} {depth}"


def _names(words: tuple[str, ...]) -> dict[str, str]:
    """The commands (and groups) directly under a root or a group, in the spec's order: name -> help."""
    names: dict[str, str] = {}
    for command in commands():
        if len(command.words) > len(words) and command.words[: len(words)] == words:
            name = command.words[len(words)]
            names.setdefault(name, command.help if len(command.words) == len(words) + 1 else GROUPS[name])
    return names


class _Level(argparse.ArgumentParser):
    """The root (no words), a group or a command: its flags (the settings included), then argparse."""

    def __init__(self, words: tuple[str, ...] = (), line: list[str] | None = None):
        self.words = words
        self.line = list(line or ())  # the whole command line (each level's words are its end)
        self.command = find_command(words) if words else None
        self.names = {} if self.command else _names(words)
        if words and not self.command and not self.names:
            raise ValueError(f"the spec has no command or group {' '.join(words)!r}")
        command_opts = self.command.opts if self.command else ()
        self.table = _table(command_opts + SETTINGS)
        text = HELP if not words else self.command.help if self.command else GROUPS[words[0]]
        super().__init__(prog=" ".join((PROG, *words)), usage=_usage(words, self.command), description=text,
                         formatter_class=_Formatter, add_help=False, allow_abbrev=False, exit_on_error=False)
        self.add_argument(*HELP_FLAGS, action=_Help, help="Show this help and exit.")
        if not words:
            self.add_argument(VERSION_FLAG, action=_Version, help="Show the version and exit.")
        if self.names:
            self.add_argument_group("commands").add_argument("command", action=_Commands, names=self.names)
        for arg in self.command.args if self.command else ():
            self.add_argument(arg.dest, metavar=_metavar(arg), help=_escape(arg.help), nargs=None if arg.required and not arg.flag else "?",
                              default=argparse.SUPPRESS, type=_literal)
        for opt in command_opts:
            self._add_opt(self, opt)
        settings = self.add_argument_group(SETTINGS_TITLE)
        for opt in SETTINGS:
            self._add_opt(settings, opt)
        self.set_defaults(**{_LEVEL: self})

    def _add_opt(self, target, opt: Opt) -> None:
        help_text = opt.help
        if opt.kind == "value" and opt.default_value() not in (None, []) and "default" not in help_text:
            help_text += f" (default: {opt.default_value()})"
        common: dict[str, Any] = {"help": _escape(help_text), "default": argparse.SUPPRESS}
        if opt.kind == "switch":
            target.add_argument(*opt.flags, dest=opt.dest, action="store_true", **common)
        elif opt.kind == "off":
            target.add_argument(*opt.flags, dest=opt.dest, action="store_false", **common)
        elif opt.kind == "toggle":
            target.add_argument(*opt.flags, dest=opt.dest, action=argparse.BooleanOptionalAction, **common)
        else:
            dest = _repeat_dest(opt, len(self.words)) if opt.repeat and opt in SETTINGS else opt.dest
            target.add_argument(*opt.flags, dest=dest, action="append" if opt.repeat else "store", metavar=_metavar(opt),
                                type=_literal if opt.type is str else _converter(opt, self.words), **common)

    def parse_known_args(self, args=None, namespace=None):
        return super().parse_known_args(self.canonical(list(args or ())), namespace)

    def format_help(self) -> str:
        """argparse's help, with the flags of each command this one's name spells with a switch
        (``restore --all``: ``rollback``) before the settings: ``restore --help`` listed neither
        ``--all`` nor ``--to``, which ``restore --all --to X --dry-run`` takes."""
        text = super().format_help()
        spelled = "".join(self._spelled_help(other) for other in commands()
                          if self.command is not None and other.spelled is not None and other.spelled[0] == self.command.name)
        head, title, rest = text.rpartition(f"\n{SETTINGS_TITLE}:")
        return f"{head}\n{spelled}{title[1:]}{rest}" if spelled and title else text + spelled

    def _spelled_help(self, other: Command) -> str:
        """The section of ``other`` (a command this one's name and ``other.spelled[1]`` run): its
        switch, then each of its flags this command has not (help only: ``_respelled`` hands the
        line to ``other`` before any level parses it)."""
        assert other.spelled is not None and self.command is not None
        switch = other.spelled[1]
        page = argparse.ArgumentParser(prog=self.prog, usage=argparse.SUPPRESS, formatter_class=_Formatter, add_help=False)
        without = " ".join(_metavar(a) for a in self.command.args if a.required)
        group = page.add_argument_group(f"{self.command.name} {switch}{f' (no {without})' if without else ''}: the same as "
                                        f"`{other.name}`, whose flags it takes")
        group.add_argument(switch, action="store_true", help=_escape(f"{other.help} See `{PROG} {other.name} --help`."))
        for opt in other.opts:
            if not set(opt.flags) & set(self.table):
                self._add_opt(group, opt)
        return page.format_help() + "\n"

    def error(self, message: str):
        """What argparse itself finds wrong (the checks in canonical() come first)."""
        raise CommandLineError(message, self.words)

    def canonical(self, argv: list[str]) -> list[str]:
        """Check this level's words against the spec; give argparse every value as ``--flag=VALUE``.

        A root or a group stops at its command's name (the rest is the command's); a command
        puts its arguments last, after ``--``.
        """
        flags: list[str] = []
        positionals: list[str] = []
        wants_help = False
        i = 0
        while i < len(argv):
            token = argv[i]
            i += 1
            if token == "--" and self.command is None:  # the next word names the command, whatever it looks like
                if i < len(argv):
                    return self._named(argv[i], flags, argv[i + 1:])
                break
            if token == "--":
                positionals += [_DASHES if word == "--" else word for word in argv[i:]]
                break
            if token == "-" or not token.startswith("-"):
                if self.command is None:
                    return self._named(token, flags, argv[i:])
                positionals.append(token)
                continue
            if token in HELP_FLAGS or (token == VERSION_FLAG and not self.words):
                wants_help = wants_help or token in HELP_FLAGS
                flags.append(token)
                continue
            flag, inline = token, None
            if token.startswith("--") and "=" in token:
                flag, inline = token.split("=", 1)
            elif not token.startswith("--") and len(token) > 2 and token[:2] in self.table:
                if any(c.isspace() for c in token):
                    # Text that starts with a dash (`search "-with space"`), not -w "ith space": it
                    # searched, and wrote in, a workspace named by the rest of the word, exit 0.
                    raise CommandLineError(f"no such option: {shown(token, 60)} (an argument that starts with - goes "
                                           f"after --; a value holding white space goes apart from its flag: "
                                           f"{token[:2]} 'VALUE')", self.words)
                # -wPATH, and -w=PATH as argparse reads it (commander and getopt give "=PATH": a path
                # nobody means); a value that starts with = is `-w =x` or `--workspace==x`
                flag, inline = token[:2], token[3:] if token[2] == "=" else token[2:]
            if flag not in self.table:
                below = [c for c in commands() if c.words[: len(self.words)] == self.words and flag in _table(c.opts)]
                if self.names and below:
                    # (a level's words from this flag on are the command line's last ones, as typed)
                    raise self._misplaced(flag, len(self.line) - len(argv) + i - 1, below)
                raise CommandLineError(_unknown_option(flag, self.table, self.command), self.words)
            opt = self.table[flag]
            if opt.kind != "value":
                if inline is not None:
                    raise CommandLineError(f"{flag} takes no value", self.words)
                flags.append(token)
                continue
            if inline is None:
                # `--flag --`: the end of the flags, no value (its value was `--`, and a `--help` after
                # it was help); `--flag=--` is the value `--`
                if i >= len(argv) or argv[i] in self.table or argv[i] in HELP_FLAGS or argv[i] == "--":
                    # the long spelling: --flag=VALUE is read the same by every parser
                    raise CommandLineError(f"{flag} needs a value (write {opt.flags[0]}=VALUE for a value that starts with -)",
                                           self.words)
                inline = argv[i]
                i += 1
            flags.append(f"{opt.flags[0]}={_DASHES if inline == '--' else inline}")
        if self.command is not None and not wants_help:
            _check_arguments(self.command, positionals, flags)
        return flags + (["--", *positionals] if positionals else [])

    def _misplaced(self, flag: str, at: int, below: list[Command]) -> CommandLineError:
        """A command's flag before the command's name (``--json search q``, ``watchdog --json
        verify``), at ``at`` in the command line: the line to run instead, the whole of it with each
        such flag (and its value) moved after the command's words. Its settings flags and arguments
        are kept (docs/cli.md: a command an error names repeats the settings flags), and so is the
        group's subcommand named: the line said the group's first (`watchdog snapshot --json` for
        `--json watchdog verify`, which run, moved the baseline past what the verify was to report).
        Where no command is named, COMMAND stands in the line, followed by those that take the flag."""
        line = self.line
        takes_value = {f for c in below for f, o in _table(c.opts).items() if o.kind == "value"}
        takes_value |= {f for f, o in self.table.items() if o.kind == "value"}
        kept, moved = line[:at], list[str]()
        words, j = self.words, at  # the command's words as read so far; where the reading is in the line
        while j < len(line) and find_command(words) is None:
            word = line[j]
            j += 1
            if word == "--" and j < len(line):  # the next word names the command, whatever it looks like
                kept.append(word)
                word = line[j]
                j += 1
            elif word.startswith("-") and word != "-":
                taken = line[j - 1 : j + (word in takes_value)]  # a flag, and its value
                j += len(taken) - 1
                spelled = word.split("=", 1)[0] if word.startswith("--") else word[:2]  # (-wPATH is -w)
                (kept if spelled in self.table or spelled in (*HELP_FLAGS, VERSION_FLAG) else moved).extend(taken)
                continue
            names = _names(words)
            if word not in names and word != HELP_WORD:  # not a command: what the level reading it would say
                return CommandLineError(_unknown_command(word, names, words, line[j:]), words)
            kept.append(word)
            if word in names:  # (`--json help search`: search's help)
                words = (*words, word)
        command = find_command(words)
        which = ""
        if command is None:  # no command (or no group's subcommand) named: a placeholder, and those that take it
            # (never one of them as if meant: `watchdog --json` said `watchdog snapshot --json`, which, run,
            # moves the baseline a verify reports against)
            takers = list(dict.fromkeys(c.words[len(words)] for c in below
                                        if c.words[: len(words)] == words and flag in _table(c.opts)))
            kept.append("COMMAND")
            which = f" (COMMAND: {', '.join(takers[:8])}{', …' if len(takers) > 8 else ''})"
        elif flag not in _table(command.opts):  # `--limit 3 files`: what files says of --limit
            return CommandLineError(_unknown_option(flag, _table(command.opts + SETTINGS), command), command.words)
        example = " ".join(shell_word(word) for word in (PROG, *kept, *moved, *line[j:]))
        return CommandLineError(f"{flag} is an option of a command, so it goes after the command's name: {example}{which}",
                                self.words)

    def _named(self, name: str, flags: list[str], rest: list[str]) -> list[str]:
        """A root's or a group's words: its own flags, its command's name, the command's words."""
        if name == HELP_WORD and name not in self.names:  # `help [COMMAND]`: that command's --help
            if rest and rest[0] in self.names:
                return [f for f in flags if f not in HELP_FLAGS] + [rest[0], HELP_FLAGS[1], *rest[1:]]
            if rest and rest[0] != HELP_WORD and not rest[0].startswith("-"):  # a command that does not exist: not the root's help, exit 0
                raise CommandLineError(_unknown_command(rest[0], self.names, self.words), self.words)
            return [*flags, HELP_FLAGS[1]]
        if name not in self.names:
            raise CommandLineError(_unknown_command(name, self.names, self.words, rest), self.words)
        helps = [f for f in flags if f in HELP_FLAGS]  # -h before a command asks for the command's help
        return [f for f in flags if f not in HELP_FLAGS] + [name] + helps + rest


def _usage(words: tuple[str, ...], command: Command | None) -> str:
    if command is None:
        return _escape(" ".join((PROG, *words, "[OPTIONS] COMMAND [ARGS]...")))
    args = [_metavar(a) if a.required else f"[{_metavar(a)}]" for a in command.args]
    return _escape(" ".join((PROG, *words, "[OPTIONS]", *args)))


def _table(opts: tuple[Opt, ...]) -> dict[str, Opt]:
    """Every spelling of every flag -> its option (``--no-x`` included)."""
    table: dict[str, Opt] = {}
    for opt in opts:
        for flag in opt.flags:
            table[flag] = opt
        if opt.kind == "toggle":
            table[opt.negative] = opt
    return table


_KINDS: dict[Any, str] = {integer: "an integer", number: "a number", day: "a date like 2026-11-30"}


def _literal(raw: str) -> str:
    """A value or an argument as it was given (``_DASHES`` is ``--``)."""
    return "--" if raw == _DASHES else raw


def _converter(opt: Opt, words: tuple[str, ...]):
    kind = _KINDS.get(opt.type, "a value")

    def convert(raw: str):
        raw = _literal(raw)
        try:
            return opt.type(raw)
        except ValueError:
            why = no_such_day(raw) if opt.type is day else ""
            raise CommandLineError(f"{opt.flags[0]} must be {kind}, not {shown(raw)}{f': {why}' if why else ''}", words) from None

    return convert


def _check_arguments(command: Command, positionals: list[str], flags: list[str]) -> None:
    if len(positionals) > len(command.args):
        raise CommandLineError(f"unexpected argument {shown(_literal(positionals[len(command.args)]))}{_takes(command)}",
                               command.words)
    for arg in command.args[len(positionals):]:
        given = arg.flag is not None and any(f.startswith(f"{arg.flag}=") for f in flags)
        if arg.required and not given:
            instead = f" (or {arg.flag} {_metavar(_table(command.opts)[arg.flag])})" if arg.flag else ""
            raise CommandLineError(f"missing argument {(arg.metavar or arg.dest).upper()}{instead}", command.words)


def _takes(command: Command) -> str:
    """What the command takes instead, for a word too many: most often a query of several words not
    quoted (``search likes tea``), or a write's text given as an argument (``write MEMORY.md "- tea"``)."""
    if not command.args:
        return f": {' '.join(command.words)} takes no arguments"
    takes = " ".join(_metavar(a).upper() if a.required else f"[{_metavar(a).upper()}]" for a in command.args)
    said = f": {' '.join(command.words)} takes {takes}"
    text = [opt.flags[0] + (f" {_metavar(opt)}" if opt.kind == "value" else "") for opt in command.opts
            if opt.metavar in ("TEXT", "FILE") or opt.flags[0] == "--stdin"]
    if text and not any(a.flag for a in command.args):  # the text goes in a flag: not in an argument
        return f"{said}; the text is given with " + (f"{', '.join(text[:-1])} or " if len(text) > 1 else "") + text[-1]
    return f"{said} (quote a value of several words)"


# Words people type for what a flag does here (not a command of its own): suggested, not accepted.
SPELLED_AS = {"fix": "doctor --fix", "repair": "doctor --fix", "version": "--version",
              "reset": "index --full"}  # (OpenClaw's `memory reset` clears the index; this rebuilds it from the files)
# OpenClaw's memory subcommands about sessions and dreaming, not the memory files: difflib offered
# `restore` for `reset` and `prompt` for `promote`, commands that do something else entirely.
OPENCLAW_ONLY = ("forget", "promote", "promote-explain", "rem-harness", "rem-backfill", "session-backfill")


def _unknown_command(name: str, names: dict[str, str], words: tuple[str, ...] = (), rest: list[str] | None = None) -> str:
    import difflib
    import shlex

    if name == "memory" and not words:  # OpenClaw's `openclaw memory search foo`, one word too many here
        after = list(rest or ())
        while after and after[0] == "memory":  # said once, however often it was typed
            del after[0]
        lead = f"no such command {name!r}: {PROG}'s commands are openclaw's memory subcommands"
        if not after or after[0].startswith("-"):
            return f"{lead}: try {PROG + ' search QUERY'!r}"
        # The word after it is answered as it would be on its own (OpenClaw's `memory get` is `read`
        # here, its `memory reset` `index --full`): "search QUERY" for any of them misled.
        same = [c.words[0] for c in commands() if after[0].lower() in c.also]
        if after[0] in names or same:
            return f"{lead}: try {shlex.join([PROG, *(same[:1] or after[:1]), *after[1:]])!r}"
        return f"{lead}; {_unknown_command(after[0], names, (), after[1:])}"
    if not words and name.lower() in OPENCLAW_ONLY:
        return (f"no such command {name!r}: `openclaw memory {name.lower()}` is OpenClaw's own (its sessions and "
                f"dreaming); {PROG} manages the memory files (`{PROG} --help` lists its commands)")
    if not words and name.lower() in SPELLED_AS:
        return f"no such command {name!r} (did you mean {PROG + ' ' + SPELLED_AS[name.lower()]!r}?)"
    known = [c.words[len(words)] for c in commands() if c.words[: len(words)] == words and name.lower() in c.also]
    close = known or difflib.get_close_matches(name, sorted(names), n=1) or difflib.get_close_matches(name.lower(), sorted(names), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"no such command {name!r}{hint}"


def _unknown_option(flag: str, table: dict[str, Opt], command: Command | None = None) -> str:
    import difflib

    if len(flag) > 40 or any(c.isspace() for c in flag):
        # No flag anyone meant: text that starts with a dash (a note pasted as a query, front matter
        # first). Quoted cut short on one line: it was echoed whole, over as many lines as it had.
        return f"no such option: {shown(flag, 60)} (an argument that starts with - goes after --)"
    instead = dict(command.instead if command else ())
    if flag in instead or flag in INSTEAD:  # OpenClaw's flag, with no use here: what does the same
        return f"no such option: {flag}: {instead.get(flag) or INSTEAD[flag]}"
    # A flag of a command this one's name spells with a switch (`restore --to X`: `restore --all`'s,
    # which its --help lists; it was "did you mean --last?", another thing entirely).
    spelling = [(other.name, other.spelled) for other in commands() if command is not None and other.spelled is not None
                and other.spelled[0] == command.name and flag in _table(other.opts)]
    if command is not None and spelling:
        name, spelled = spelling[0]
        without = " ".join(_metavar(a) for a in command.args if a.required)
        usage = " ".join((command.name, *(_metavar(a) if a.required else f"[{_metavar(a)}]" for a in command.args)))
        return (f"no such option: {flag}: a flag of `{' '.join(spelled)}`{f' (no {without})' if without else ''}, "
                f"the same as `{name}`, not of `{usage}`")
    close = difflib.get_close_matches(flag, [f for f in table if f.startswith("--")], n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"no such option: {flag}{hint}"


def _respelled(argv: list[str]) -> list[str]:
    """``restore --all --to X`` as ``rollback --to X``: a command another command's name and one of
    its switches spell too (``Command.spelled``), read before the levels see the words."""
    takes_value = {flag for opt in SETTINGS if opt.kind == "value" for flag in opt.flags}
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        i += 2 if argv[i] in takes_value else 1  # a settings flag before the command, and its value
    if i >= len(argv):
        return argv
    end = argv.index("--") if "--" in argv[i:] else len(argv)
    for command in commands():
        if command.spelled is not None and command.spelled[0] == argv[i] and command.spelled[1] in argv[i + 1 : end]:
            rest = argv[i + 1 :]
            rest.remove(command.spelled[1])
            return [*argv[:i], *command.words, *rest]
    return argv


def parse(argv: list[str]) -> Parsed:
    argv = _respelled(argv)
    try:
        namespace, extras = _Level(line=argv).parse_known_args(argv)
    except _VersionRequested:
        return Parsed("version")
    except _HelpRequested as wanted:
        return Parsed("help", wanted.level.words, help=wanted.level.format_help())
    except argparse.ArgumentError as exc:  # argparse's own findings (canonical() checks first)
        raise CommandLineError(str(exc)) from None
    given = vars(namespace)
    level: _Level = given[_LEVEL]
    extras += given.get(_EXTRAS, [])
    if extras:  # canonical() lets none through; kept so that argparse never drops a word unsaid
        raise CommandLineError(f"unexpected argument {shown(extras[0])}", level.words)
    command = level.command
    if command is None:
        return Parsed("help", level.words, help=level.format_help())
    values = {o.dest: given[o.dest] if o.dest in given else o.default_value() for o in command.opts}
    values.update({a.dest: given.get(a.dest) for a in command.args})
    values.update({dest: given.get(dest) for dest in command.given_settings})
    for opt in command.opts:
        if opt.required and values[opt.dest] is None:
            raise CommandLineError(f"missing option {opt.flags[0]}", command.words)
    settings: dict[str, Any] = {}
    for opt in SETTINGS:
        if opt.repeat:
            settings[opt.dest] = [v for depth in range(len(command.words) + 1) for v in given.get(_repeat_dest(opt, depth), [])]
        else:
            settings[opt.dest] = given.get(opt.dest, opt.default_value())
    return Parsed("run", command.words, command, values, settings, bool(values.get("json_out")))

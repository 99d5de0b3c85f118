"""``openclaw-memory completion bash|zsh|fish``: a shell completion script, generated from the spec.

Every name and flag comes from the spec's tables (the commands, the watchdog group, each
command's flags and the settings flags), handed over by :mod:`.spec` itself, so the script
completes exactly what the parser accepts. A flag that takes a path (``PATH``, ``FILE``) completes
file names; other values complete nothing. ``eval "$(openclaw-memory completion bash)"`` (or
``openclaw-memory completion fish | source``) installs it for the shell it runs in.
"""

from __future__ import annotations

import shlex
import sys
from typing import TYPE_CHECKING, NamedTuple

from ..errors import UsageError, shown

if TYPE_CHECKING:
    from .spec import Command, Opt

SHELLS = ("bash", "zsh", "fish")
_PATH_VALUES = ("PATH", "FILE")
_FUNCTION = "_openclaw_memory"


class Tables(NamedTuple):
    """What the script is made from: the spec's tables and the parser's fixed words."""

    commands: tuple[Command, ...]
    groups: dict[str, str]
    settings: tuple[Opt, ...]
    prog: str
    help_flags: tuple[str, ...]
    version_flag: str
    help_word: str


def print_completion(shell: str, spec: Tables) -> int:
    if shell not in SHELLS:
        raise UsageError(f"no completion for {shown(shell)}: the shells are {', '.join(SHELLS)}")
    sys.stdout.write(completion_script(shell, spec))
    return 0


def completion_script(shell: str, spec: Tables) -> str:
    if shell == "bash":
        return _bash(spec)
    if shell == "zsh":
        return _zsh(spec)
    return _fish(spec)


def _flags(opts: tuple[Opt, ...]) -> list[str]:
    """Every spelling of the flags, ``--no-x`` of a toggle included."""
    out: list[str] = []
    for opt in opts:
        out += opt.flags
        if opt.kind == "toggle":
            out.append(opt.negative)
    return out


def _valued(opts: tuple[Opt, ...], paths: bool) -> list[str]:
    """The spellings of the flags that take a value: those whose value is a path, or the others."""
    return [f for o in opts if o.kind == "value" and ((o.metavar or "") in _PATH_VALUES) == paths for f in o.flags]


def _top(spec: Tables) -> list[str]:
    return list(dict.fromkeys(c.words[0] for c in spec.commands)) + [spec.help_word]


def _takes_path(command: Command) -> bool:
    return any(a.dest == "path" for a in command.args)


def _bash(spec: Tables) -> str:
    settings_flags = " ".join(_flags(spec.settings))
    cases = []
    for command in spec.commands:
        flags = " ".join([*_flags(command.opts), *spec.help_flags])
        files = "1" if _takes_path(command) else "0"
        cases.append(f"        {shlex.quote(command.name)}) flags={shlex.quote(flags)}; files={files} ;;")
    groups = "\n".join(f"        {g}) subs={shlex.quote(' '.join(c.words[1] for c in spec.commands if c.words[0] == g))} ;;"
                       for g in spec.groups)
    all_opts = spec.settings + tuple(o for c in spec.commands for o in c.opts)
    prog = spec.prog
    path_values = " ".join(sorted(set(_valued(all_opts, True))))
    other_values = " ".join(sorted(set(_valued(all_opts, False))))
    return f"""# {prog} completion for bash, generated from its command spec: eval "$({prog} completion bash)"
# The file names that start with the word being completed, one reply each (a name with a space was
# two replies: COMPREPLY=($(compgen -f)) split it), the word taken as the shell reads it first
# (memory/my\\ n, "memory/my n and 'memory/my n are all memory/my n).
{_FUNCTION}_files() {{
    local rest=$1 word="" c quote="" name
    while [[ -n $rest ]]; do
        c=${{rest:0:1}}; rest=${{rest:1}}
        if [[ -z $quote && ( $c == "'" || $c == '"' ) ]]; then quote=$c
        elif [[ -n $quote && $c == "$quote" ]]; then quote=""
        elif [[ $c == '\\' && $quote != "'" && -n $rest && ( -z $quote || '\\$`"' == *"${{rest:0:1}}"* ) ]]; then
            word+=${{rest:0:1}}; rest=${{rest:1}}
        else word+=$c
        fi
    done
    COMPREPLY=()
    while IFS= read -r name; do COMPREPLY+=("$name"); done < <(compgen -f -- "$word")
}}
{_FUNCTION}() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
    local path_values={shlex.quote(path_values)} other_values={shlex.quote(other_values)}
    local settings={shlex.quote(settings_flags)} words=() i word skip=0
    if [[ " $path_values " == *" $prev "* ]]; then
        {_FUNCTION}_files "$cur"; return
    fi
    [[ " $other_values " == *" $prev "* ]] && {{ COMPREPLY=(); return; }}
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${{COMP_WORDS[i]}}
        if ((skip)); then skip=0; continue; fi
        if [[ " $path_values $other_values " == *" $word "* ]]; then skip=1; continue; fi
        [[ $word == -* ]] || words+=("$word")
    done
    local command="${{words[*]:0:2}}" flags={shlex.quote(" ".join((*spec.help_flags, spec.version_flag)))} files=0 subs=""
    case "${{words[0]}}" in
{groups}
    esac
    [[ -z $subs ]] && command="${{words[0]}}"
    case "$command" in
{chr(10).join(cases)}
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags $settings" -- "$cur"))
    elif ((${{#words[@]}} == 0)); then
        COMPREPLY=($(compgen -W {shlex.quote(' '.join(_top(spec)))} -- "$cur"))
    elif [[ -n $subs && ${{#words[@]}} == 1 ]]; then
        COMPREPLY=($(compgen -W "$subs" -- "$cur"))
    elif ((files)); then
        {_FUNCTION}_files "$cur"
    fi
}}
complete -o filenames -F {_FUNCTION} {prog}
"""


def _zsh(spec: Tables) -> str:
    return f"""#compdef {spec.prog}
# {spec.prog} completion for zsh, generated from its command spec: eval "$({spec.prog} completion zsh)"
autoload -U +X bashcompinit && bashcompinit
{_bash(spec)}"""


def _fish(spec: Tables) -> str:
    prog = spec.prog
    lines = [f"# {prog} completion for fish, generated from its command spec: {prog} completion fish | source",
             f"complete -c {prog} -f"]
    top = [c for c in spec.commands if len(c.words) == 1]
    names = " ".join(_top(spec))
    for command in top:
        lines.append(f"complete -c {prog} -n 'not __fish_seen_subcommand_from {names}' -a {command.name} -d {_quoted(command.help)}")
    for group, text in spec.groups.items():
        lines.append(f"complete -c {prog} -n 'not __fish_seen_subcommand_from {names}' -a {group} -d {_quoted(text)}")
        subs = [c for c in spec.commands if c.words[0] == group]
        seen = " ".join(c.words[1] for c in subs)
        for sub in subs:
            lines.append(f"complete -c {prog} -n '__fish_seen_subcommand_from {group}; and not __fish_seen_subcommand_from {seen}' "
                         f"-a {sub.words[1]} -d {_quoted(sub.help)}")
    lines.append(f"complete -c {prog} -n 'not __fish_seen_subcommand_from {names}' -a {spec.help_word} -d 'Show the help of a command.'")
    for opt in spec.settings:
        lines.append(_fish_opt(prog, opt, ""))
    for command in spec.commands:
        condition = f"__fish_seen_subcommand_from {command.words[-1]}"
        if len(command.words) > 1:
            condition = f"__fish_seen_subcommand_from {command.words[0]}; and {condition}"
        for opt in command.opts:
            lines.append(_fish_opt(prog, opt, condition))
        if _takes_path(command):
            lines.append(f"complete -c {prog} -n '{condition}' -F")
    return "\n".join(lines) + "\n"


def _fish_opt(prog: str, opt: Opt, condition: str) -> str:
    spellings = []
    for flag in (*opt.flags, *((opt.negative,) if opt.kind == "toggle" else ())):
        spellings.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
    value = ""
    if opt.kind == "value":
        value = " -r -F" if (opt.metavar or "") in _PATH_VALUES else " -r"
    where = f" -n '{condition}'" if condition else ""
    return f"complete -c {prog}{where} {' '.join(spellings)}{value} -d {_quoted(opt.help)}"


def _quoted(text: str) -> str:
    return shlex.quote(text)

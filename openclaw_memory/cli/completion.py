"""``openclaw-memory completion bash|zsh|fish``: a shell completion script, generated from the spec.

Every name and flag comes from the spec's tables (the commands, the watchdog group, each
command's flags and the settings flags), handed over by :mod:`.spec` itself, so the script
completes exactly what the parser accepts. A flag that takes a path (``PATH``, ``FILE``) completes
file names, one with choices (``search --mode``) its words, other values nothing. An argument that
is a memory file (``read PATH``, ``mv SOURCE DESTINATION``) completes the workspace's paths as
``openclaw-memory files`` lists them (run with the settings flags given on the line: ``-w``,
``--state-dir``, ``--agent``, ``--extra``), wherever the shell is; an archive (``export ARCHIVE``,
``import ARCHIVE``) a file name; an argument with choices (``completion SHELL``) its words; ``help``
the commands. ``eval "$(openclaw-memory completion bash)"`` (or
``openclaw-memory completion fish | source``) installs it for the shell it runs in.
"""

from __future__ import annotations

import shlex
import sys
from typing import TYPE_CHECKING, NamedTuple

from ..errors import UsageError, shown

if TYPE_CHECKING:
    from .spec import Arg, Command, Opt

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
    shells = _shells(spec)
    if shell not in shells:
        raise UsageError(f"no completion for {shown(shell)}: the shells are {', '.join(shells)}")
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


def _offered(spec: Tables, command: Command) -> tuple[list[str], tuple[Opt, ...]]:
    """The switches and flags a command's line takes: its own, and for each command its name and a
    switch also run (``Command.spelled``: ``restore --all`` is ``rollback``), that switch and the
    flags of that command it has not, as its ``--help`` lists them."""
    switches: list[str] = []
    opts = command.opts
    for other in spec.commands:
        if other.spelled is not None and other.spelled[0] == command.name:
            switches.append(other.spelled[1])
            have = {f for o in opts for f in o.flags}
            opts += tuple(o for o in other.opts if not set(o.flags) & have)
    return switches, opts


def _valued(opts: tuple[Opt, ...], paths: bool) -> list[str]:
    """The spellings of the flags that take a value: those whose value is a path, or the others."""
    return [f for o in opts if o.kind == "value" and ((o.metavar or "") in _PATH_VALUES) == paths for f in o.flags]


def _top(spec: Tables) -> list[str]:
    return list(dict.fromkeys(c.words[0] for c in spec.commands)) + [spec.help_word]


# Arguments that are a memory file's workspace-relative path (completed from `files`, the names the
# workspace has, wherever the shell is), and those that are a path of this machine (from the folder).
_NOTE_ARGS = ("path", "source", "destination")
_FILE_ARGS = ("archive",)


def _arg_kind(arg: Arg) -> str:
    """What an argument completes: ``@notes``, ``@files``, its words, or nothing ("")."""
    if arg.choices:
        return " ".join(arg.choices)
    return "@notes" if arg.dest in _NOTE_ARGS else "@files" if arg.dest in _FILE_ARGS else ""


def _shells(spec: Tables) -> tuple[str, ...]:
    """The shells a script is written for: the choices of the completion command's argument."""
    return next(a.choices for c in spec.commands if c.name == "completion" for a in c.args)


def _bash(spec: Tables) -> str:
    settings_flags = " ".join(_flags(spec.settings))
    settings_valued = " ".join(f for o in spec.settings if o.kind == "value" for f in o.flags)
    cases = []
    for command in spec.commands:
        switches, opts = _offered(spec, command)
        flags = " ".join([*_flags(opts), *switches, *spec.help_flags])
        args = " ".join(shlex.quote(_arg_kind(a)) for a in command.args)
        values = "\n".join(f"{flag} {' '.join(o.choices)}" for o in opts if o.choices for flag in o.flags)
        cases.append(f"        {shlex.quote(command.name)}) flags={shlex.quote(flags)}; args=({args}); values=$'{values}' ;;")
    groups = "\n".join(f"        {g}) subs={shlex.quote(' '.join(c.words[1] for c in spec.commands if c.words[0] == g))} ;;"
                       for g in spec.groups)
    all_opts = spec.settings + tuple(o for c in spec.commands for o in c.opts)
    prog = spec.prog
    path_values = " ".join(sorted(set(_valued(all_opts, True))))
    other_values = " ".join(sorted(set(_valued(all_opts, False))))
    return f"""# {prog} completion for bash, generated from its command spec: eval "$({prog} completion bash)"
# The word being completed as the shell reads it first (memory/my\\ n, "memory/my n and 'memory/my n
# are all memory/my n), in REPLY.
{_FUNCTION}_unquote() {{
    local rest=$1 c quote=""
    REPLY=""
    while [[ -n $rest ]]; do
        c=${{rest:0:1}}; rest=${{rest:1}}
        if [[ -z $quote && ( $c == "'" || $c == '"' ) ]]; then quote=$c
        elif [[ -n $quote && $c == "$quote" ]]; then quote=""
        elif [[ $c == '\\' && $quote != "'" && -n $rest && ( -z $quote || '\\$`"' == *"${{rest:0:1}}"* ) ]]; then
            REPLY+=${{rest:0:1}}; rest=${{rest:1}}
        else REPLY+=$c
        fi
    done
}}
# The file names that start with the word, one reply each (a name with a space was two replies:
# COMPREPLY=($(compgen -f)) split it).
{_FUNCTION}_files() {{
    local name
    {_FUNCTION}_unquote "$1"
    COMPREPLY=()
    while IFS= read -r name; do COMPREPLY+=("$name"); done < <(compgen -f -- "$REPLY")
}}
# The memory files' paths (workspace-relative, as `{prog} files` lists them with the settings given on
# the line) that start with the word, up to the next folder: memory/ first, then memory/a.md.
{_FUNCTION}_notes() {{
    local word name rest prog=$2
    {_FUNCTION}_unquote "$1"; word=$REPLY
    shift 2
    COMPREPLY=()
    while IFS=$'\t' read -r name rest; do
        [[ $name == "$word"* ]] || continue
        [[ $name == *\\\\* ]] && continue  # a name `files` shows escaped (a tab as \\x09): no read takes it back
        rest=${{name:${{#word}}}}
        [[ $rest == */* ]] && name=$word${{rest%%/*}}/
        [[ " ${{COMPREPLY[*]}} " == *" $name "* ]] || COMPREPLY+=("$name")
    done < <("$prog" "$@" files 2>/dev/null)
    if ((${{#COMPREPLY[@]}} == 1)) && [[ ${{COMPREPLY[0]}} == */ ]] && type compopt >/dev/null 2>&1; then
        compopt -o nospace 2>/dev/null  # (bash's alone: zsh's bashcompinit has no compopt)
    fi
}}
{_FUNCTION}() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} before=${{COMP_WORDS[COMP_CWORD-2]}}
    local path_values={shlex.quote(path_values)} other_values={shlex.quote(other_values)}
    local settings={shlex.quote(settings_flags)} settings_valued={shlex.quote(settings_valued)}
    local words=() given=() i word rest skip=0 dashes=0 helping=0
    # `--flag=VALUE`: the shell splits the word at =
    [[ $cur == "=" ]] && {{ before=$prev; prev=$cur; cur=""; }}
    [[ $prev == "=" && $before == --* ]] && prev=$before
    if [[ " $path_values " == *" $prev "* ]]; then
        {_FUNCTION}_files "$cur"; return
    fi
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${{COMP_WORDS[i]}}
        if ((skip)); then
            [[ $word == "=" ]] && continue
            ((skip == 2)) && {{ {_FUNCTION}_unquote "$word"; given+=("$REPLY"); }}
            skip=0
            continue
        fi
        if ((dashes)); then words+=("$word"); continue; fi
        [[ $word == -- ]] && {{ dashes=1; continue; }}
        if [[ " $settings_valued " == *" $word "* ]]; then given+=("$word"); skip=2; continue; fi
        if [[ " $path_values $other_values " == *" $word "* ]]; then skip=1; continue; fi
        [[ $word == -* ]] || words+=("$word")
    done
    if [[ ${{words[0]}} == {spec.help_word} ]]; then words=("${{words[@]:1}}"); helping=1; fi
    local command="${{words[*]:0:2}}" flags={shlex.quote(" ".join((*spec.help_flags, spec.version_flag)))} args=() values="" subs="" n=1
    case "${{words[0]}}" in
{groups}
    esac
    [[ -z $subs ]] && command="${{words[0]}}"
    [[ -n $subs ]] && n=2
    case "$command" in
{chr(10).join(cases)}
    esac
    if ((helping)); then
        if ((${{#words[@]}} == 0)); then
            COMPREPLY=($(compgen -W {shlex.quote(' '.join(_top(spec)))} -- "$cur"))
        elif [[ -n $subs && ${{#words[@]}} == 1 ]]; then
            COMPREPLY=($(compgen -W "$subs" -- "$cur"))
        fi
        return
    fi
    if [[ " $other_values " == *" $prev "* ]]; then
        COMPREPLY=()
        while read -r word rest; do
            [[ $word == "$prev" ]] && COMPREPLY=($(compgen -W "$rest" -- "$cur"))
        done <<< "$values"
        return
    fi
    local kind=""
    ((${{#words[@]}} >= n)) && kind=${{args[${{#words[@]}} - n]}}
    if [[ $cur == -* ]] && ((!dashes)); then
        COMPREPLY=($(compgen -W "$flags $settings" -- "$cur"))
    elif ((${{#words[@]}} == 0)); then
        COMPREPLY=($(compgen -W {shlex.quote(' '.join(_top(spec)))} -- "$cur"))
    elif [[ -n $subs && ${{#words[@]}} == 1 ]]; then
        COMPREPLY=($(compgen -W "$subs" -- "$cur"))
    elif ((${{#words[@]}} < n)); then
        COMPREPLY=()
    elif [[ $kind == @files ]]; then
        {_FUNCTION}_files "$cur"
    elif [[ $kind == @notes ]]; then
        {_FUNCTION}_unquote "${{COMP_WORDS[0]}}"
        [[ $REPLY == "~/"* ]] && REPLY=$HOME/${{REPLY:2}}
        {_FUNCTION}_notes "$cur" "$REPLY" "${{given[@]}}"
    elif [[ -n $kind ]]; then
        COMPREPLY=($(compgen -W "$kind" -- "$cur"))
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
             _fish_notes(spec), f"complete -c {prog} -f"]
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
    commands_only = " ".join(n for n in _top(spec) if n != spec.help_word)
    lines.append(f"complete -c {prog} -n '__fish_seen_subcommand_from {spec.help_word}; and not __fish_seen_subcommand_from "
                 f"{commands_only}' -a {shlex.quote(names)}")
    for opt in spec.settings:
        lines.append(_fish_opt(prog, opt, ""))
    for command in spec.commands:
        condition = f"__fish_seen_subcommand_from {command.words[-1]}"
        if len(command.words) > 1:
            condition = f"__fish_seen_subcommand_from {command.words[0]}; and {condition}"
        switches, opts = _offered(spec, command)
        for opt in opts:
            lines.append(_fish_opt(prog, opt, condition))
        for switch in switches:
            lines.append(f"complete -c {prog} -n '{condition}' -l {switch.removeprefix('--')}")
        for kind in dict.fromkeys(_arg_kind(a) for a in command.args):
            if kind == "@notes":
                lines.append(f"complete -c {prog} -n '{condition}' -a '({_FUNCTION}_notes)'")
            elif kind == "@files":
                lines.append(f"complete -c {prog} -n '{condition}' -F")
            elif kind:
                lines.append(f"complete -c {prog} -n '{condition}' -a {shlex.quote(kind)}")
    return "\n".join(lines) + "\n"


def _fish_notes(spec: Tables) -> str:
    """A fish function: the memory files' paths, as `files` lists them with the settings on the line."""
    valued = [f for o in spec.settings if o.kind == "value" for f in o.flags]
    joined = " ".join(f"'{f}=*'" if f.startswith("--") else f"'{f}*'" for f in valued)  # (-w*, not -w?*: fish 4 reads ? as itself)
    return f"""function {_FUNCTION}_notes
    set -l tokens (commandline -opc)
    set -l given
    set -l i 2
    while test $i -le (count $tokens)
        switch $tokens[$i]
            case {' '.join(valued)}
                if test $i -lt (count $tokens)
                    set -a given $tokens[$i] $tokens[(math $i + 1)]
                end
                set i (math $i + 1)
            case {joined}
                set -a given $tokens[$i]
            case --
                break
        end
        set i (math $i + 1)
    end
    command $tokens[1] $given files 2>/dev/null | string replace -r '\\t.*' ''
end"""


def _fish_opt(prog: str, opt: Opt, condition: str) -> str:
    spellings = []
    for flag in (*opt.flags, *((opt.negative,) if opt.kind == "toggle" else ())):
        spellings.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
    value = ""
    if opt.kind == "value":
        value = (" -r -F" if (opt.metavar or "") in _PATH_VALUES else
                 f" -r -f -a {shlex.quote(' '.join(opt.choices))}" if opt.choices else " -r")
    where = f" -n '{condition}'" if condition else ""
    return f"complete -c {prog}{where} {' '.join(spellings)}{value} -d {_quoted(opt.help)}"


def _quoted(text: str) -> str:
    return shlex.quote(text)

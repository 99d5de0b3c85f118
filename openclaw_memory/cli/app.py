"""The typer application, built from :mod:`.spec`: it renders ``--help``.

Every command also runs through it with the same handlers (tests/test_cli_spec.py compares the
two), but the entry point parses with :mod:`.parse`, so typer is imported only for help.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import GenericAlias
from typing import Any, Optional

import typer
from rich.markup import escape  # help texts are plain; typer reads them as rich markup

from .spec import COMMANDS, GROUPS, HELP, SETTINGS, Command, Opt

SETTINGS_PANEL = "Settings (before or after the command)"
CONTEXT = {"help_option_names": ["-h", "--help"]}


def _annotation(opt: Opt):
    if opt.kind == "switch":
        return bool
    if opt.kind == "toggle":
        return Optional[bool]  # noqa: UP045 - a value typer inspects, spelled as typer documents it
    if opt.repeat:
        return GenericAlias(list, opt.type)  # list[opt.type], spelled so a checker reads it as a value
    return opt.type if opt.required or opt.default is not None else Optional[opt.type]  # noqa: UP045


def _option(opt: Opt, panel: str | None = None):
    flags = opt.flags if opt.kind != "toggle" else (f"{opt.flags[0]}/{opt.negative}",)
    default: Any = [] if opt.repeat else (... if opt.required else opt.default)
    return typer.Option(default, *flags, help=escape(opt.help), metavar=opt.metavar, rich_help_panel=panel, show_default=opt.kind == "value" and opt.default is not None)


def _signature(command: Command | None, with_settings: bool = True) -> inspect.Signature:
    params = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)]
    for arg in command.args if command else ():
        default = typer.Argument(... if arg.required else None, help=escape(arg.help), metavar=arg.metavar or arg.dest.upper())
        params.append(inspect.Parameter(arg.dest, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=str if arg.required else Optional[str]))  # noqa: UP045
    for opt in command.opts if command else ():
        params.append(inspect.Parameter(opt.dest, inspect.Parameter.KEYWORD_ONLY, default=_option(opt), annotation=_annotation(opt)))
    if with_settings:
        for opt in SETTINGS:
            params.append(inspect.Parameter("setting_" + opt.dest, inspect.Parameter.KEYWORD_ONLY, default=_option(opt, SETTINGS_PANEL), annotation=_annotation(opt)))
    return inspect.Signature(params)


def _with_signature(function: Callable, signature: inspect.Signature) -> Callable:
    function.__signature__ = signature  # type: ignore[attr-defined]
    function.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    return function


def _split_settings(kwargs: dict) -> dict:
    return {k[len("setting_"):]: kwargs.pop(k) for k in list(kwargs) if k.startswith("setting_")}


def _merged_settings(ctx: typer.Context, own: dict) -> dict:
    """Root, then group, then command: for scalars the last level that gave one wins; extras add up."""
    levels = [own]
    parent = ctx.parent
    while parent is not None:
        levels.append(parent.obj)
        parent = parent.parent
    merged: dict = {"extra": []}
    for level in reversed([lv for lv in levels if lv]):
        for dest, value in level.items():
            if dest == "extra":
                merged["extra"] += list(value)
            elif value is not None:
                merged[dest] = value
    return merged


def _settings_callback(*extra: inspect.Parameter) -> Callable:
    """The callback of the root or a group: it keeps the settings flags given at its level."""

    def callback(ctx: typer.Context, **kwargs) -> None:
        kwargs.pop("version", None)  # handled by the parser before typer is ever loaded
        ctx.obj = _split_settings(kwargs)

    ctx_param, *settings = _signature(None).parameters.values()
    return _with_signature(callback, inspect.Signature([ctx_param, *extra, *settings]))


def _command_function(command: Command) -> Callable:
    def run(ctx: typer.Context, **kwargs):
        from .parse import Parsed
        from .run import run_parsed

        own = _split_settings(kwargs)
        return run_parsed(Parsed("run", command.words, command, kwargs, _merged_settings(ctx, own), kwargs.get("json_out", False)))

    run.__doc__ = command.help
    return _with_signature(run, _signature(command))


def build_app() -> typer.Typer:
    app = typer.Typer(help=escape(HELP), no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, context_settings=CONTEXT)
    version = inspect.Parameter("version", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                                default=typer.Option(False, "--version", help="Show the version and exit."))
    app.callback()(_settings_callback(version))
    groups = {}
    for name, help_text in GROUPS.items():
        groups[name] = typer.Typer(help=escape(help_text), no_args_is_help=True, context_settings=CONTEXT)
        groups[name].callback()(_settings_callback())
        app.add_typer(groups[name], name=name)
    for command in COMMANDS:
        target = groups[command.words[0]] if len(command.words) == 2 else app
        target.command(command.words[-1], help=escape(command.help))(_command_function(command))
    return app


app = build_app()

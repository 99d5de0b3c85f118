"""Resolve settings for a command from the flags collected by the app callback."""

from __future__ import annotations

import typer


def settings_from(ctx: typer.Context):
    from ..settings import Overrides, resolve_settings

    overrides = ctx.find_root().obj or Overrides()
    return resolve_settings(overrides)

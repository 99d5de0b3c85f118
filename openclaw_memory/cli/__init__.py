"""The command-line interface (typer), a thin layer over :mod:`openclaw_memory.api`."""

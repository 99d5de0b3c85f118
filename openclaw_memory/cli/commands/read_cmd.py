"""``openclaw-memory read``: a paged read of one memory file (``memory_get``)."""


import sys

from ...serve.client import IN_PROCESS, try_service
from ..output import print_json, warn


def run_read(settings, path: str, from_line: int | None, lines: int | None, max_chars: int | None, json_out: bool,
             diff: bool = False) -> int:
    from ...files.citation import parse_citation

    citation = parse_citation(path)
    if citation is not None:  # a search result's citation: its lines, unless --from/--lines say otherwise
        path = citation.path
        from_line = citation.from_line if from_line is None else from_line
        lines = citation.lines if lines is None else lines
    from_line = 1 if from_line is None else from_line
    if diff:
        return _run_diff(settings, path, from_line, lines, max_chars, json_out)
    result = try_service(settings, "read", path=path, from_line=from_line, lines=lines, max_chars=max_chars)
    if result is IN_PROCESS:
        from ... import api  # only here: answered by the service, a read loads none of it

        result = api.read_memory(settings, path, from_line=from_line, lines=lines, max_chars=max_chars)
    for message in result.warnings:
        warn(message)
    if json_out:
        print_json(result.to_json())
    elif result.text:
        sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
    elif result.missing:
        warn(f"{result.path} does not exist")
    return 1 if result.missing else 0  # the JSON keeps OpenClaw's not_found shape; the status says it too


def _run_diff(settings, path: str, from_line: int, lines: int | None, max_chars: int | None, json_out: bool) -> int:
    result = try_service(settings, "read_diff", path=path, from_line=from_line, lines=lines, max_chars=max_chars)
    if result is IN_PROCESS:
        from ... import api

        result = api.read_memory_diff(settings, path, from_line=from_line, lines=lines, max_chars=max_chars)
    for message in result.warnings:
        warn(message)
    if json_out:
        print_json(result.to_json())
    elif result.mode == "diff":
        sys.stdout.write(result.diff)
    elif result.mode == "unchanged":
        sys.stderr.write(f"{result.path}: unchanged since your last read (version {result.version[:12]})\n")
    elif result.mode == "full":
        sys.stderr.write(f"{result.path}: no earlier version to compare with ({result.reason}); the file follows\n")
        text = result.read.text
        if text:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        warn(f"{result.path} does not exist")
    return 0

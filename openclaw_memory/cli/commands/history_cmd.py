"""``history``, ``restore`` and ``state``: versions of memory files and what this agent has seen."""


from ... import api
from ..output import print_json, warn


def run_history(settings, path: str, json_out: bool) -> int:
    result = api.file_history(settings, path)
    for message in result.warnings:
        warn(message)
    if json_out:
        print_json(result.to_json())
        return 0
    data = result.to_json()
    if not data["versions"]:
        print(f"{result.path} does not exist and has no history.")
    for v in data["versions"]:
        marks = [m for m, on in (("current", v["current"]), ("evicted", not v["available"])) if on]
        who = f" by {v['agent']}" if v["agent"] else ""
        tail = f"  [{', '.join(marks)}]" if marks else ""
        print(f"{v['version'][:12]}  {v['time']}  {v['size']:>9} B  {v['origin']}{who}{tail}")
    return 0


def run_restore(settings, path: str, version: str, no_index: bool, json_out: bool) -> int:
    from ...serve.client import IN_PROCESS, try_service

    result = try_service(settings, "restore", path=path, version=version, update_index=not no_index)
    if result is IN_PROCESS:
        result = api.restore(settings, path, version, update_index=not no_index)
    if result.index is not None and result.index.failed:
        warn(result.index.reason)
    if json_out:
        print_json(result.to_json())
    elif not result.changed:
        print(f"{result.path} is already at version {result.version[:12]}; nothing to restore.")
    else:
        head = f"restored {result.path} to version {result.version[:12]} ({result.size} bytes)"
        if result.previous:
            print(f"{head}; it was at {result.previous[:12]}, which `openclaw-memory restore` can bring back.")
        else:
            print(f"{head}; the file did not exist, so it was recreated.")
    return 0


def run_state(settings, json_out: bool) -> int:
    from ...serve.client import IN_PROCESS, try_service

    report = try_service(settings, "state")
    if report is IN_PROCESS:
        report = api.file_states(settings)
    for message in report.warnings:
        warn(message)
    if json_out:
        print_json(report.to_json())
        return 0
    if not report.files:
        print(f"No memory files in {report.workspace} (agent {report.agent}).")
    for f in report.files:
        gone = "  (deleted)" if f.version is None else ""
        print(f"{f.state:<18} {f.path}{gone}")
    return 0

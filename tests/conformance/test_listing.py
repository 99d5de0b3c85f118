"""``files`` against OpenClaw's ``listMemoryFiles`` and ``isMemoryPath``: which files, in which order."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from openclaw_memory.files.paths import is_memory_path

from .workspaces import DREAM_NAMES, DREAMS_REASON, SKIPPED_REASON, build, our_scan, their_list

# Each case: a tree, the extra paths (every form OpenClaw accepts), multimodal.
HAND_CASES = {
    "root files and memory order": ({
        "MEMORY.md": "m", "USER.md": "u", "memory/a.md": "a", "memory/a-b.md": "ab", "memory/a/z.md": "z",
        "memory/b.txt": "not md", "memory/B.md": "B", "memory/_x.md": "_", "memory/.hidden.md": "h",
    }, [], False),
    "legacy root and repair archive never listed": ({
        "memory.md": "legacy", "MEMORY.md": "m", ".openclaw-repair/root-memory/2026/memory.md": "old",
        "memory/.openclaw-repair/x.md": "no", "memory/keep.md": "k",
    }, [], False),
    "code point vs UTF-16 order": ({
        "memory/\ufb01le.md": "fi ligature (U+FB01)", "memory/\U0001f600.md": "astral", "memory/\uffee.md": "halfwidth",
        "memory/z.md": "z", "memory/é.md": "e acute", "memory/\u00e9/a.md": "in folder", "memory/é-x.md": "x",
    }, [], False),
    "symlinked root files and memory folder": ({
        "real.md": "r", "MEMORY.md": ("symlink", "real.md"), "USER.md": ("symlink", "real.md"),
    }, [], False),
    "symlinked memory folder": ({"elsewhere/n.md": "n", "memory": ("symlink", "elsewhere")}, [], False),
    "symlinks and fifo inside memory": ({
        "memory/a.md": "a", "memory/link.md": ("symlink", "a.md"), "memory/dirlink": ("symlink", "."),
        "memory/pipe.md": ("fifo",),
    }, [], False),
    "folder named like a note": ({"memory/x.md/y.md": "y", "memory/x.md/z.txt": "z"}, [], False),
    "extra folder outside, file, missing, symlink": ({
        "MEMORY.md": "m", "../outside/one.md": "1", "../outside/sub/two.md": "2", "../outside/skip.txt": "t",
        "../single.md": "s", "../linked": ("symlink", "outside"),
    }, ["../outside", "../single.md", "../missing", "../linked"], False),
    "extra inside the workspace, the workspace itself, and memory again": ({
        "MEMORY.md": "m", "AGENTS.md": "a", "notes/n.md": "n", "memory/d.md": "d", "memory.md": "legacy",
    }, ["notes", ".", "memory", " notes "], False),
    "extra path objects with patterns": ({
        "../ex/a.md": "a", "../ex/b.md": "b", "../ex/sub/c.md": "c", "../ex/sub/deep/d.md": "d",
        "../ex/.dot/e.md": "e", "../ex/ab.md": "ab", "../ex/notes.txt": "t",
    }, [{"path": "../ex", "pattern": "*.md"}, {"path": "../ex", "pattern": "sub/**"}], False),
    "pattern forms": ({
        "../p/a1.md": "", "../p/b2.md": "", "../p/c3.md": "", "../p/x/a1.md": "", "../p/x/y/b2.md": "",
        "../p/.h/a.md": "", "../p/.h.md": "",
    }, [{"path": "../p", "pattern": "**/*.md"}, {"path": "../p", "pattern": "{a,b}*.md"},
        {"path": "../p", "pattern": "[ab]?.md"}, {"path": "../p", "pattern": "x/*/b2.md"},
        {"path": "../p", "pattern": ".h/*.md"}, {"path": "../p", "pattern": "[!a]*.md"},
        {"path": "../p", "pattern": "*.txt"}, {"path": "../p", "pattern": "  "}], False),
    "minimatch corners": ({
        "../m/a.md": "", "../m/b.md": "", "../m/aa.md": "", "../m/x.md/y.md": "", "../m/x/a.md": "", "../m/é.md": "",
        "../m/1.md": "", "../m/٣.md": "", "../m/.a.md": "", "../m/sub/c.md": "",
    }, [{"path": "../m", "pattern": p} for p in ["!(a)", "!(a).md", "a[ab]!(a)", "*.md/**", "sub/**", "[[:alpha:]]*",
                                                  "[[:digit:]].md", "x//a.md", "x/./a.md", "x/../a.md", "**/./a.md",
                                                  "**(x)[^a]", "*(x)*.md", "?(a|b)*", "!(x)*"]], False),
    "pattern on a single file is ignored": ({"../f/one.md": "1"}, [{"path": "../f/one.md", "pattern": "nothing"}], False),
    "multimodal extra": ({
        "../media/p.PNG": "png", "../media/v.mp3": "id3", "../media/v.m2a": "m2a", "../media/n.md": "n",
        "../media/doc.pdf": "pdf", "memory/img.png": "not in memory/",
        "../media/big.wav": b"\0" * (10 * 1024 * 1024 + 1),  # over maxFileBytes: listed (its limit is for embedding)
    }, ["../media"], True),
    "multimodal off": ({"../media/p.png": "png", "../media/n.md": "n"}, ["../media"], False),
    "multimodal names typed by how they end": ({
        "../media/..jpg": "j", "../media/...wav": "w", "../media/.a.png": "p", "../media/.jpg": "no ext",
        "../media/x.": "x", "../media/.#y.mp3": "m", "../media/b..OGG": "o", "../media/t.png ": "trailing space",
        "../media/n.flac\n": "trailing newline", "../media/m.md ": "not markdown",
    }, ["../media"], True),
    "dream diary twins": ({"DREAMS.md": "d", "dreams.md": "d2", "MEMORY.md": "m"}, [], False),
    "a folder named memory.md through the workspace as an extra path": ({
        "memory.md/inner.md": "i", "memory.md/sub/x.md": "x", "notes/n.md": "n", "MEMORY.md": "m",
    }, [".", "memory.md", "./memory.md/"], False),
    "a folder below memory.md as an extra path": ({"memory.md/sub/x.md": "x"}, ["memory.md/sub"], False),
    "the workspace reached from an extra path above it": ({
        "notes/n.md": "n", "user.md": "u", "MEMORY.md": "m", "../beside/b.md": "b",
    }, ["..", "notes"], False),
}


def _compare(checks, label, ws, extra, multimodal, answer):
    scan = our_scan(ws, extra, multimodal)
    ours = [f.path for f in scan.files]
    theirs = their_list(ws, answer)
    if scan.skipped:
        # OpenClaw's answer has no such list at all (only symlinked extra roots, through a callback).
        skipped = {s.path for s in scan.skipped}
        checks.deliberate("skipped-reported", SKIPPED_REASON, theirs == "ERROR" or not skipped & set(theirs), label)
    dreams = [p for p in ours if p in DREAM_NAMES]
    if dreams:
        checks.deliberate("dream-diary-listed", DREAMS_REASON, theirs == "ERROR" or not set(dreams) & set(theirs), label)
        ours = [p for p in ours if p not in DREAM_NAMES]
    checks.same(f"{label}: files", ours, theirs)


def test_hand_written_listings(oracle, new_ws, checks):
    cases = []
    for label, (tree, extra, multimodal) in HAND_CASES.items():
        ws = new_ws()
        build(ws, tree)
        cases.append((label, ws, extra, multimodal))
    answers = oracle.batch([{"op": "list", "ws": str(ws), "extra": extra, "multimodal": mm} for _l, ws, extra, mm in cases])
    for (label, ws, extra, multimodal), answer in zip(cases, answers):
        _compare(checks, label, ws, extra, multimodal, answer)
    checks.done()


# Names that sort differently by code point, by folder and by UTF-16 unit.
NAME_CHARS = st.sampled_from(["a", "b", "A", "Z", "-", ".", "_", " ", "0", "é", "\u00df", "\ufb01", "\uffee", "\U0001f600", "\U00010348"])
NAMES = st.text(NAME_CHARS, min_size=1, max_size=4).filter(lambda n: n not in (".", "..") and "/" not in n)
FILES = st.tuples(st.lists(NAMES, min_size=0, max_size=2), NAMES, st.sampled_from([".md", ".md", ".md", ".txt", ".MD"]))
PATTERNS = st.sampled_from(["*.md", "**/*.md", "*/*.md", "a*", "*a*.md", "{a,b}*.md", "[ab]*", "[!a]*.md", "?.md",
                            "**/a*.md", "a/**", "**", "*-*.md", "*.{md,txt}", "[[:alpha:]]*.md", "@(a|b).md"])


def _tree_from(files, under):
    tree = {}
    for folders, name, ext in files:
        rel = "/".join([under, *folders, name + ext])
        tree[rel] = "x"
    return tree


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
          phases=[Phase.explicit, Phase.generate])  # every example costs an OpenClaw run: no shrinking
@given(
    batches=st.lists(
        st.tuples(
            st.lists(FILES, min_size=1, max_size=12),  # memory/
            st.lists(FILES, min_size=0, max_size=8),  # an extra folder
            st.lists(st.one_of(st.none(), PATTERNS), min_size=1, max_size=2),
        ),
        min_size=8, max_size=8,
    )
)
def test_generated_trees_and_patterns(oracle, new_ws, batches):
    from .conftest import Checks

    checks = Checks()
    cases = []
    for memory_files, extra_files, patterns in batches:
        ws = new_ws()
        tree = _tree_from(memory_files, "memory")
        tree.update(_tree_from(extra_files, "../extra"))
        tree["MEMORY.md"] = "m"
        try:
            build(ws, tree)
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            continue  # a file and a folder of the same name: not a tree
        extra = [("../extra" if p is None else {"path": "../extra", "pattern": p}) for p in patterns]
        cases.append((ws, extra))
    answers = oracle.batch([{"op": "list", "ws": str(ws), "extra": extra} for ws, extra in cases])
    for (ws, extra), answer in zip(cases, answers):
        _compare(checks, f"generated {ws} extra={extra}", ws, extra, False, answer)
    checks.done()


def test_a_name_that_is_not_utf8_is_listed_by_its_bytes(oracle, new_ws, checks):
    import os

    ws = new_ws()
    build(ws, {"memory/ok.md": "ok"})
    for name in (b"\xff.md", b"\xfe/x.md"):
        path = os.path.join(os.fsencode(ws / "memory"), name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"note")
    (answer,) = oracle.batch([{"op": "list", "ws": str(ws), "extra": []}])
    ours = [f.path for f in our_scan(ws, []).files]
    checks.same("the UTF-8 names", [p for p in ours if p.isascii()], [p for p in their_list(ws, answer) if p.isascii()])
    checks.deliberate("non-utf8-name-listed", "the exact name back; OpenClaw shows U+FFFD, a name it cannot open, and drops what a folder so named holds",
                      ours == ["memory/ok.md", "memory/\udcfe/x.md", "memory/\udcff.md"]
                      and their_list(ws, answer) == ["memory/ok.md", "memory/\ufffd.md"], f"{ours} {answer}")
    checks.done()


IS_MEMORY = [
    "MEMORY.md", "USER.md", "DREAMS.md", "dreams.md", "Dreams.md", "memory.md", "user.md", "memory/", "memory/a.md",
    "./memory/a.md", "../memory/a.md", ".//MEMORY.md", " MEMORY.md ", "memory\\a.md", "notes/a.md", "memoryx/a.md",
    "Memory/a.md", "MEMORY.MD", "", "   ", "memory", "/MEMORY.md", "...memory/a.md", "\tUSER.md\n", "memory/../x.md",
]


def test_is_memory_path(oracle, home, checks):
    (answer,) = oracle.batch([{"op": "ismemorypath", "ws": str(home), "paths": IS_MEMORY}])
    for path in IS_MEMORY:
        checks.same(f"isMemoryPath({path!r})", is_memory_path(path), answer["isMemoryPath"][path])
    checks.done()


def test_normalized_extra_paths(oracle, new_ws, checks):
    ws = new_ws()
    extra = ["notes", " ./notes ", "../out", "/abs/x", "", "  ", "a/../b", {"path": "p", "pattern": " *.md "},
             {"path": "p", "pattern": "*.md"}, {"path": "p", "pattern": ""}]
    (answer,) = oracle.batch([{"op": "ismemorypath", "ws": str(ws), "paths": [], "extra": extra}])
    from .workspaces import our_extras

    ours = list(dict.fromkeys(str(e) for e in our_extras(ws, extra)))
    checks.same("normalizeExtraMemoryPaths", ours, answer["normalizedExtra"])
    checks.done()


def test_normalized_extra_paths_with_a_tilde(oracle, home, new_ws, checks, monkeypatch):
    # OpenClaw expands a leading "~" of an extra path to the system's home (HOME), never to
    # OPENCLAW_HOME, and reads "~user" as a name relative to the workspace, not that user's home.
    ws = new_ws()
    extra = ["~", "~/notes", " ~/x ", "~root/notes", "~nobody", "a/~/b"]
    (answer,) = oracle.batch([{"op": "ismemorypath", "ws": str(ws), "paths": [], "extra": extra}])
    from .workspaces import our_extras

    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENCLAW_HOME", str(ws))
    ours = list(dict.fromkeys(str(e) for e in our_extras(ws, extra)))
    checks.same("normalizeExtraMemoryPaths with ~", ours, answer["normalizedExtra"])
    checks.done()


PATTERN_TOKENS = st.sampled_from(["*", "**", "?", "a", "b", ".", "-", "[ab]", "[!a]", "{a,b}", "{a,.b}", "/", "md",
                                  "*.md", "@(a|b)", "+(a)", "[[:digit:]]", "1", "x"])
GLOB_TREE = {f"../g/{p}": "x" for p in [
    "a.md", "b.md", "ab.md", "a-b.md", "a1.md", ".a.md", "x/a.md", "x/b/a.md", "a/b.md", "a/.b/c.md", "b/a1.md",
    "x/y/z/ab.md", "aa.md", "-.md", "1.md",
]}


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
          phases=[Phase.explicit, Phase.generate])  # every example costs an OpenClaw run: no shrinking
@given(patterns=st.lists(st.lists(PATTERN_TOKENS, min_size=1, max_size=6).map("".join), min_size=25, max_size=25))
def test_generated_patterns(oracle, new_ws, patterns):
    from .conftest import Checks

    checks = Checks()
    ws = new_ws()
    build(ws, dict(GLOB_TREE, **{"MEMORY.md": "m"}))
    extras = [[{"path": "../g", "pattern": p}] for p in patterns]
    answers = oracle.batch([{"op": "list", "ws": str(ws), "extra": extra} for extra in extras])
    for extra, answer in zip(extras, answers):
        _compare(checks, f"pattern {extra[0]['pattern']!r}", ws, extra, False, answer)
    checks.done()

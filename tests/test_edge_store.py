"""The embedded store's shards on the real Qdrant Edge engine: what a large write leaves behind.

An index run that writes more than ``SETTLE_POINTS`` points into one shard has its appendable
segment turned into memory-mapped segments and the shard reopened on the way, so that the run's
memory does not grow with the corpus (``bench/index_memory.py`` measures that); these tests check
that nothing is lost or changed by it, and that shards built by an earlier version get the same
settings when opened.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from conftest import tmpfs
from openclaw_memory.errors import DiskFull
from openclaw_memory.index.store.base import DENSE, PATH_FIELD, TERMS_FIELD, PointData
from openclaw_memory.index.store.edge import EdgeStore
from openclaw_memory.index.store.edge_shard import OPTIMIZE_ROOM, SETTLE_POINTS

DIM = 384
NAME = "memory-dir-main"


def unit_vectors(n: int, seed: int = 7) -> list[list[float]]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        v = [rnd.gauss(0, 1) for _ in range(DIM)]
        norm = sum(x * x for x in v) ** 0.5
        out.append([x / norm for x in v])
    return out


def points(vectors: list[list[float]]) -> list[PointData]:
    return [
        PointData(f"00000000-0000-0000-0000-{i:012d}", v, {PATH_FIELD: f"memory/n{i // 10}.md", TERMS_FIELD: f"common word{i}"})
        for i, v in enumerate(vectors)
    ]


def segments(store: EdgeStore) -> list[str]:
    return sorted(p.name for p in (store.shard_path(NAME) / "segments").iterdir() if p.is_dir())


def check_every_point(store: EdgeStore, vectors: list[list[float]], sample: range) -> None:
    with store.open(NAME) as shard:
        assert shard.count() == len(vectors)
        assert sum(shard.path_counts().values()) == len(vectors)
        for i in sample:
            pid = f"00000000-0000-0000-0000-{i:012d}"
            assert shard.dense_query(vectors[i], 1)[0].id == pid
            assert [h.id for h in shard.text_query(TERMS_FIELD, f"word{i}", 3)] == [pid]


def test_a_write_larger_than_the_settle_size_keeps_every_point(tmp_path: Path):
    store = EdgeStore(tmp_path / "index")
    vectors = unit_vectors(SETTLE_POINTS + 1000)
    with store.open(NAME, dim=DIM) as shard:
        shard.upsert(points(vectors))
        # Settled on the way: the first SETTLE_POINTS points no longer sit in the appendable segment.
        assert len(segments(store)) >= 2
        shard.optimize()
        shard.upsert(points(vectors)[:5])  # rewritten in place after the settle: still one point each
    check_every_point(store, vectors, range(0, len(vectors), 397))
    config = json.loads((store.shard_path(NAME) / "edge_config.json").read_text())
    assert config["optimizers"]["indexing_threshold"] and config["optimizers"]["max_segment_size"]
    assert EdgeStore(tmp_path / "index").damage(NAME, len(vectors)) is None  # a fresh process's probe agrees


def test_a_shard_built_by_an_earlier_version_gets_the_settings_when_opened(tmp_path: Path):
    import qdrant_edge as qe

    store = EdgeStore(tmp_path / "index")
    path = store.shard_path(NAME)
    path.parent.mkdir(parents=True)
    # The layout earlier versions created: the engine's default optimizers.
    engine = qe.EdgeShard.create(str(path), qe.EdgeConfig(vectors={DENSE: qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)}))
    engine.update(qe.UpdateOperation.create_field_index(TERMS_FIELD, qe.TextIndexParams(tokenizer=qe.TokenizerType.Whitespace, lowercase=False, scoring=True, on_disk=True)))
    engine.update(qe.UpdateOperation.create_field_index(PATH_FIELD, qe.KeywordIndexParams(on_disk=True)))
    vectors = unit_vectors(300, seed=3)
    engine.update(qe.UpdateOperation.upsert_points([qe.Point(p.id, {DENSE: p.vector}, p.payload) for p in points(vectors)]))
    engine.close()
    assert "optimizers" not in json.loads((path / "edge_config.json").read_text())

    check_every_point(store, vectors, range(0, 300, 37))
    config = json.loads((path / "edge_config.json").read_text())
    assert config["optimizers"]["indexing_threshold"] and config["optimizers"]["max_segment_size"]
    check_every_point(EdgeStore(tmp_path / "index"), vectors, range(5, 300, 41))


def test_no_optimize_starts_without_room_for_the_segments_it_writes(tmp_path: Path):
    with tmpfs(tmp_path / "small", "400m") as mount:
        store = EdgeStore(mount / "index")
        vectors = unit_vectors(1000, seed=5)
        with store.open(NAME, dim=DIM) as shard:
            shard.upsert(points(vectors))
            st = os.statvfs(mount)
            with open(mount / "filler", "wb") as fh:  # leave room to open the shard, not to optimize it
                fh.write(b"\1" * (st.f_bavail * st.f_frsize - (OPTIMIZE_ROOM - (16 << 20))))
            with pytest.raises(DiskFull, match="optimize the index"):
                shard.optimize()
            assert shard.count() == 1000  # still open and whole
        os.unlink(mount / "filler")
        check_every_point(store, vectors, range(0, 1000, 111))


def test_a_shard_probed_after_another_program_opened_it_is_not_probed_again(tmp_path: Path, monkeypatch):
    """A probe loads the shard in a child process, which changes its files' stat: what is recorded
    is the stat the probe left, so the next command trusts the shard without a probe of its own
    (recording the stat seen before it, every later command that opens no shard probed again)."""
    import qdrant_edge as qe

    store = EdgeStore(tmp_path / "index")
    vectors = unit_vectors(50, seed=11)
    with store.open(NAME, dim=DIM) as shard:
        shard.upsert(points(vectors))
    qe.EdgeShard.load(str(store.shard_path(NAME))).close()  # another program: its files' stat moved
    probed: list[str] = []
    real_probe = EdgeStore._probe
    monkeypatch.setattr(EdgeStore, "_probe", lambda self, name, expected: probed.append(name) or real_probe(self, name, expected))
    for _ in range(3):  # three commands, each a new process's store
        assert EdgeStore(tmp_path / "index").check(NAME, len(vectors)) is None
    assert probed == [NAME]


def test_the_engines_own_refusal_to_optimize_for_want_of_room_is_a_full_disk(tmp_path: Path):
    """The engine wants twice the size of the segments it merges free (more than OPTIMIZE_ROOM where a
    killed run left large ones), and its refusal came out as a traceback."""
    from openclaw_memory.index.store.edge_shard import EdgeShard

    class Refusing:
        def optimize(self):
            raise Exception("Service runtime error: Not enough space available for optimization, needed: 241.87 MiB, "
                            "available: 229.31 MiB")

    shard = EdgeShard(NAME, tmp_path / NAME, Refusing(), DIM)
    with pytest.raises(DiskFull, match=r"\(229\.3 MiB free\): the engine needs about 241 MiB to optimize the index"):
        shard.optimize()


ENOMEM = ("Service runtime error: failed to open mutable full text index on gridstore: Cannot allocate memory "
          "(os error 12)")


@pytest.mark.parametrize("limit", [1_000_000_000, None])
def test_the_engine_out_of_memory_opening_a_shard_is_said_never_a_damaged_index(tmp_path: Path, monkeypatch, limit):
    """`prlimit --as=1000000000 index` on a new state dir said "cannot be opened (... Cannot allocate
    memory (os error 12)); rebuild it with `openclaw-memory index --full`": nothing to rebuild."""
    import resource

    from openclaw_memory import errors
    from openclaw_memory.errors import MemoryToolError
    from openclaw_memory.index.store import edge

    def engine_open(_path):
        raise Exception(ENOMEM)

    real_getrlimit = resource.getrlimit
    soft = resource.RLIM_INFINITY if limit is None else limit
    monkeypatch.setattr(errors.resource, "getrlimit",
                        lambda which: (soft, resource.RLIM_INFINITY) if which == resource.RLIMIT_AS else real_getrlimit(which))
    monkeypatch.setattr(edge, "load_engine", engine_open)
    store = EdgeStore(tmp_path / "index")
    with pytest.raises(MemoryToolError) as raised:
        with store.open(NAME, dim=DIM):
            pass
    said = str(raised.value)
    assert "--full" not in said and "damaged" not in said and "\n" not in said, said
    if limit is None:
        assert said == f"index collection {NAME} cannot be opened: out of memory: free some memory and try again"
    else:
        assert said == (f"index collection {NAME} cannot be opened: out of memory (the address space is limited to "
                        "954 MiB: raise it with `ulimit -v`)")


def test_a_probe_out_of_memory_is_said_never_a_damaged_shard(tmp_path: Path):
    """The probe's child has the command's limits: out of memory there the engine says "memory
    allocation of N bytes failed" and hangs, which was taken for damage after 300 s (the shard dropped)."""
    import subprocess
    import sys

    from openclaw_memory.errors import MemoryToolError

    store = EdgeStore(tmp_path / "index")
    with store.open(NAME, dim=DIM) as shard:
        shard.upsert(points(unit_vectors(10)))
    os.utime(store.shard_path(NAME) / "edge_config.json", ns=(0, 0))  # not as we left it: probed
    script = ("import resource, sys\n"
              "resource.setrlimit(resource.RLIMIT_AS, (300_000_000, resource.RLIM_INFINITY))\n"
              "from openclaw_memory.index.store.edge import EdgeStore\n"
              "try:\n"
              f"    print(EdgeStore(sys.argv[1]).damage({NAME!r}))\n"
              "except Exception as exc:\n"
              "    print(type(exc).__name__, exc)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "index")], capture_output=True, text=True, timeout=120)
    said = done.stdout.strip()
    assert said.startswith(f"{MemoryToolError.__name__} index collection {NAME} cannot be checked: out of memory "
                           "(the address space is limited to 286 MiB"), (said, done.stderr[-2000:])

"""The two ONNX exporters side by side: from the weights (no torch) and traced with torch.

Run: .venv/bin/python bench/onnx_export.py [--sample 500] [--rounds 2]
Each export runs in a fresh process (time, and which heavy libraries it imported); then each
int8 model embeds the same corpus chunks in fresh processes (``bench/embed.py``'s worker),
alternating, best of ``--rounds``; sentence-transformers (fp32, the reference) embeds them once.
Cosines compare every pair, and the export shipped with the package is compared with the one
written here from the same weights. The exports are of the model's folder (a model the package
does not ship, so the export path runs). A query's cold start is import + load + one query, fresh
process. Figures, not tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from embed import CORPUS, HEAVY, MODEL, chunk_corpus  # noqa: E402

EMBED = Path(__file__).resolve().parent / "embed.py"
EXPORTERS = ("graph", "torch")
QUERY = "how do I rotate the gateway auth token"


def export_worker(exporter: str, cache_dir: str) -> None:
    """Runs in a fresh process: one export, timed from the first import."""
    started, cpu = time.perf_counter(), time.process_time()
    from openclaw_memory.index.models import resolve_model
    from openclaw_memory.index.onnx_embedding import MODEL_FILE, export_folder, export_model

    path = resolve_model(MODEL)
    folder = export_folder(path, cache_dir, path)
    used = export_model(path, folder, exporter=exporter)
    print(json.dumps({
        "exporter": used,
        "export_s": time.perf_counter() - started,
        "export_cpu_s": time.process_time() - cpu,
        "size_mb": (folder / MODEL_FILE).stat().st_size / 1e6,
        "imported": sorted(m for m in HEAVY if m in sys.modules),
    }))


def fresh(cmd: list[str]) -> dict:
    proc = subprocess.run([sys.executable, *cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def embed(backend: str, cache_dir: str, texts_file: Path, out: Path, batch_size: int, model: str | None = None) -> dict:
    """``model``: the default model's folder (exported into ``cache_dir``) unless named (MODEL: shipped)."""
    from openclaw_memory.index.models import resolve_model

    return fresh([str(EMBED), "--worker", backend, "--cache-dir", cache_dir, "--texts", str(texts_file), "--alone", "0",
                  "--model", model or resolve_model(MODEL), "--out", str(out), "--batch-size", str(batch_size)])


def cosines(a: np.ndarray, b: np.ndarray) -> str:
    c = (a * b).sum(axis=1)
    return f"mean {c.mean():.4f}  min {c.min():.4f}  p1 {np.percentile(c, 1):.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=500, help="corpus chunks to embed")
    parser.add_argument("--rounds", type=int, default=2, help="encodings per export (best is shown)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--export-worker", choices=EXPORTERS)
    parser.add_argument("--cache-dir")
    args = parser.parse_args()
    if args.export_worker:
        export_worker(args.export_worker, args.cache_dir)
        return
    if not CORPUS.is_dir():
        sys.exit(f"corpus not found at {CORPUS}")

    chunks = chunk_corpus(sorted(CORPUS.rglob("*.md")))[0]
    step = max(1, len(chunks) // args.sample)
    sample = [c.embed_text for c in chunks[::step]][: args.sample]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (figures scale with it); "
          f"{len(sample)} of {len(chunks)} corpus chunks, batch {args.batch_size}")

    with tempfile.TemporaryDirectory(prefix="ocm-bench-onnx-") as tmp:
        root = Path(tmp)
        caches = {e: str(root / e) for e in EXPORTERS}
        exports = {e: fresh([__file__, "--export-worker", e, "--cache-dir", caches[e]]) for e in EXPORTERS}
        texts_file, query_file = root / "texts.json", root / "query.json"
        texts_file.write_text(json.dumps(sample))
        query_file.write_text(json.dumps([QUERY]))

        encodes: dict[str, list[dict]] = {e: [] for e in EXPORTERS}
        vectors: dict[str, np.ndarray] = {}
        for _ in range(args.rounds):
            for e in EXPORTERS:  # alternating, so a burst of load on the machine hits both
                encodes[e].append(embed("onnx", caches[e], texts_file, root / f"{e}.npy", args.batch_size))
                vectors[e] = np.load(root / f"{e}.npy")
        reference = embed("torch", str(root / "ref"), texts_file, root / "ref.npy", args.batch_size)
        vectors["fp32"] = np.load(root / "ref.npy")
        embed("onnx", str(root / "none"), texts_file, root / "shipped.npy", args.batch_size, model=MODEL)
        vectors["shipped"] = np.load(root / "shipped.npy")
        colds = {e: embed("onnx", caches[e], query_file, root / f"q-{e}.npy", 1) for e in EXPORTERS}
        colds["fp32"] = embed("torch", str(root / "ref"), query_file, root / "q-ref.npy", 1)

    print(f"\n{'export':<7} {'used':<6} {'export s':>9} {'(cpu s)':>8} {'int8 MB':>8}  imported during export")
    for e, r in exports.items():
        print(f"{e:<7} {r['exporter']:<6} {r['export_s']:>9.1f} {r['export_cpu_s']:>8.1f} {r['size_mb']:>8.1f}  "
              f"{', '.join(r['imported'])}")

    print(f"\n{'encode':<7} {'chunks/s':>9} {'encode s':>9} {'(cpu s)':>8}  runs (chunks/s)")
    best = {}
    for e, runs in [*encodes.items(), ("fp32", [reference])]:
        top = min(runs, key=lambda r: r["encode_s"])
        best[e] = len(sample) / top["encode_s"]
        each = ", ".join(f"{len(sample) / r['encode_s']:.1f}" for r in runs)
        print(f"{e:<7} {best[e]:>9.1f} {top['encode_s']:>9.2f} {top['encode_cpu_s']:>8.2f}  {each}")
    print(f"graph / torch export encode speed: x{best['graph'] / best['torch']:.3f}")

    print("\ncosine per chunk:")
    print(f"  graph int8 vs sentence-transformers fp32: {cosines(vectors['graph'], vectors['fp32'])}")
    print(f"  torch int8 vs sentence-transformers fp32: {cosines(vectors['torch'], vectors['fp32'])}")
    print(f"  graph int8 vs torch int8:                 {cosines(vectors['graph'], vectors['torch'])}")
    print(f"  shipped int8 vs graph int8: max |difference| {np.abs(vectors['shipped'] - vectors['graph']).max():.2e}")

    print("\ncold query embedding (fresh process: import + load + 1 query):")
    print(f"{'path':<7} {'import+load s':>14} {'(cpu s)':>8} {'query ms':>9}  imported")
    for e, r in colds.items():
        print(f"{e:<7} {r['load_s']:>14.2f} {r['load_cpu_s']:>8.2f} {r['encode_s'] * 1000:>9.1f}  {', '.join(r['imported'])}")


if __name__ == "__main__":
    main()

"""Chunking speed, and the torch and ONNX embedding paths side by side, on the corpus.

Run: .venv/bin/python bench/embed.py [--sample 2000] [--cache-dir DIR] [--model NAME] [--alone 64]
Each embedding path is timed in a fresh process (import + model load, then encoding the same
sample of corpus chunks); then the two sets of vectors are compared by cosine, and each path's
vectors of the first ``--alone`` chunks embedded one at a time with those of the batched run (a
text's vector should not depend on its batch). The default model's ONNX export ships with the
package; ``--model`` names another (a folder), exported once into ``--cache-dir``. Figures, not tests.
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

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "openclaw-docs"
MODEL = "all-MiniLM-L6-v2"
HEAVY = ("torch", "transformers", "sentence_transformers", "onnx", "onnxruntime", "safetensors", "tokenizers")


def worker(backend: str, cache_dir: str, texts_file: str, out_file: str, batch_size: int, model: str = MODEL, alone: int = 0) -> None:
    """Runs in a fresh process: time the import + load, then the encoding."""
    started, cpu_started = time.perf_counter(), time.process_time()
    from openclaw_memory.index.embedding import load_embedder

    embedder = load_embedder(model, backend=backend, cache_dir=cache_dir)
    loaded, cpu_loaded = time.perf_counter(), time.process_time()
    texts = json.loads(Path(texts_file).read_text())
    vectors = embedder.encode(texts, batch_size=batch_size)
    done, cpu_done = time.perf_counter(), time.process_time()
    import numpy as np

    np.save(out_file, vectors)
    if alone:  # untimed: each text in a batch of its own
        np.save(f"{out_file}.alone.npy", np.stack([embedder.encode([t], batch_size=1)[0] for t in texts[:alone]]))
    print(json.dumps({
        "imported": sorted(m for m in HEAVY if m in sys.modules),
        "backend": embedder.backend,
        "load_s": loaded - started,
        "encode_s": done - loaded,
        # CPU seconds (all threads): a fairer comparison when other work shares the machine.
        "load_cpu_s": cpu_loaded - cpu_started,
        "encode_cpu_s": cpu_done - cpu_loaded,
    }))


def chunk_corpus(files: list[Path]):
    from openclaw_memory.index.chunking import chunk_markdown
    from openclaw_memory.index.tokens import load_token_counter

    texts = [f.read_text(encoding="utf-8", errors="replace") for f in files]
    started = time.perf_counter()
    counter = load_token_counter(MODEL)
    loaded, cpu = time.perf_counter(), time.process_time()
    chunks = [c for text in texts for c in chunk_markdown(text, counter)]
    done, cpu_done = time.perf_counter(), time.process_time()
    return chunks, loaded - started, done - loaded, cpu_done - cpu, sum(len(t.encode()) for t in texts)


def run_worker(backend: str, args, texts_file: Path, out_file: Path) -> dict:
    cmd = [sys.executable, __file__, "--worker", backend, "--cache-dir", args.cache_dir, "--model", args.model,
           "--alone", str(args.alone), "--texts", str(texts_file), "--out", str(out_file), "--batch-size", str(args.batch_size)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=2000, help="chunks to embed (0: all)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--cache-dir", default=str(Path(tempfile.gettempdir()) / "openclaw-memory-bench-state"))
    parser.add_argument("--model", default=MODEL, help="the model (default: the shipped one); another is exported into --cache-dir")
    parser.add_argument("--alone", type=int, default=64, metavar="N", help="also embed the first N chunks one at a time (0: not)")
    parser.add_argument("--worker")
    parser.add_argument("--texts")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.cache_dir, args.texts, args.out, args.batch_size, args.model, args.alone)
        return
    if not CORPUS.is_dir():
        sys.exit(f"corpus not found at {CORPUS}")

    files = sorted(CORPUS.rglob("*.md"))
    chunks, counter_s, chunk_s, chunk_cpu_s, size = chunk_corpus(files)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (figures scale with it)")
    print(f"chunking: {len(files)} files, {size / 1e6:.2f} MB -> {len(chunks)} chunks; "
          f"tokenizer load {counter_s:.2f} s, chunking {chunk_s:.2f} s wall, {chunk_cpu_s:.2f} s cpu "
          f"({size / 1e6 / chunk_s:.2f} MB/s)")

    step = max(1, len(chunks) // args.sample) if args.sample else 1
    sample = [c.embed_text for c in chunks[::step]][: args.sample or None]

    from openclaw_memory.index.embedding import load_embedder
    from openclaw_memory.index.onnx_embedding import export_folder, is_exported, shipped_export

    shipped = shipped_export(args.model)
    if shipped is not None:
        print(f"onnx: the shipped export ({shipped}, {(shipped / 'model.int8.onnx').stat().st_size / 1e6:.1f} MB)")
    elif not is_exported(args.model, args.cache_dir):
        started = time.perf_counter()
        load_embedder(args.model, backend="onnx", cache_dir=args.cache_dir)
        print(f"onnx export (once, cached in {export_folder(args.model, args.cache_dir)}): "
              f"{time.perf_counter() - started:.1f} s")

    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(sample))
        results, vectors = {}, {}
        for backend in ("torch", "onnx"):
            out = Path(tmp) / f"{backend}.npy"
            results[backend] = run_worker(backend, args, texts_file, out)
            vectors[backend] = np.load(out)
            if args.alone:
                vectors[f"{backend} alone"] = np.load(f"{out}.alone.npy")

    print(f"\nembedding {len(sample)} corpus chunks (batch {args.batch_size}), each path in a fresh process:")
    print(f"{'backend':<8} {'import+load s':>14} {'(cpu s)':>8} {'encode s':>10} {'(cpu s)':>8} {'chunks/s':>10}")
    for backend, r in results.items():
        print(f"{backend:<8} {r['load_s']:>14.2f} {r['load_cpu_s']:>8.2f} {r['encode_s']:>10.2f} "
              f"{r['encode_cpu_s']:>8.2f} {len(sample) / r['encode_s']:>10.1f}")
    cosines = (vectors["torch"] * vectors["onnx"]).sum(axis=1)
    speedup = results["torch"]["encode_s"] / results["onnx"]["encode_s"]
    print(f"onnx vs torch: encode speed x{speedup:.2f}; cosine mean {cosines.mean():.4f}, "
          f"min {cosines.min():.4f}, p1 {np.percentile(cosines, 1):.4f}")
    if args.alone:
        for backend in results:
            alone = vectors[f"{backend} alone"]
            batched = vectors[backend][: len(alone)]
            print(f"{backend}: {len(alone)} chunks embedded alone vs in batches of {args.batch_size}: "
                  f"max |difference| {np.abs(alone - batched).max():.2e}, min cosine {(alone * batched).sum(axis=1).min():.7f}")


if __name__ == "__main__":
    main()

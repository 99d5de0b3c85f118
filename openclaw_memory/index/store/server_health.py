"""The Qdrant server as ``status`` and ``doctor`` see it: backend, version, collections missing or mismatched.

``server_report(settings)`` describes the backend (``None`` for the embedded
engine); ``server_findings(settings)`` turns the same facts into doctor-style
findings (:class:`~openclaw_memory.findings.Finding`). Neither raises for
a server that is down or refuses the key: that is a finding too.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, TypedDict

from ...errors import MemoryToolError
from ...findings import Finding
from ...types import Severity
from ..collections import resolve_collections
from ..manifest import load_manifest
from .server_config import ServerConfig, server_config

if TYPE_CHECKING:
    from ...settings import Settings

MIN_VERSION = (1, 20)  # BM25 ranking over a text index (`TextQuery`) arrived in Qdrant 1.20


class CollectionReport(TypedDict):
    """One of the agent's collections, as the server holds it and as this index recorded it."""

    name: str
    qdrantCollection: str
    present: bool
    dim: int | None
    indexedDim: int | None
    settingsKey: str | None
    fingerprint: str | None
    indexedFingerprint: str | None
    indexedSettingsKey: str | None
    owner: str | None  # the index recorded on it as its creator (None: none recorded, or missing)


class ServerReport(TypedDict):
    """What ``server_report`` returns (a JSON object in ``status --json``)."""

    backend: str
    url: str
    namespace: str
    indexId: str | None  # this index's identity on the server (server_config.index_identity)
    tenancy: str
    apiKey: str
    version: str | None
    reachable: bool
    error: str | None
    collections: list[CollectionReport]


def _finding(fid: str, severity: Severity, message: str, fixable: bool = False, paths: list[str] | None = None) -> Finding:
    return Finding(fid, severity, message, fixable, tuple(paths or ()))


def _version_tuple(version: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(p) for p in version.split("-")[0].split(".")[:2])
    except ValueError:
        return None


def _config_findings(config: ServerConfig) -> list[Finding]:
    found: list[Finding] = []
    if config.api_key and config.url.startswith("http://"):
        host = config.display_url.split("//", 1)[1].split(":")[0].split("/")[0]
        if host not in ("localhost", "127.0.0.1", "::1", "[::1]"):
            found.append(
                _finding("qdrant-key-plaintext", "warning", f"the API key is sent unencrypted to {config.display_url}: use https://")
            )
    if config.api_key_source.startswith("file "):
        path = config.api_key_source[5:]
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = 0
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            found.append(
                _finding(
                    "qdrant-key-file-mode",
                    "warning",
                    f"the API key file {path} can be read by other users (mode {stat.S_IMODE(mode):o}); `chmod 600` it",
                    paths=[path],
                )
            )
    return found


def server_report(settings: Settings) -> ServerReport | None:
    """Backend, URL, namespace, tenancy, server version and each of the agent's collections on the server."""
    config = server_config(settings)
    if config is None:
        return None
    return _server_report(settings, config)


def _server_report(settings: Settings, config: ServerConfig) -> ServerReport:
    from .server import ServerStore

    report: ServerReport = {
        "backend": "qdrant-local" if config.local_path else "qdrant",
        "url": config.display_url,
        "namespace": config.namespace,
        "indexId": config.owner,
        "tenancy": config.tenancy,
        "apiKey": config.api_key_source,
        "version": None,
        "reachable": False,
        "error": None,
        "collections": [],
    }
    try:
        store = ServerStore(config)
    except MemoryToolError as exc:
        report["error"] = exc.message
        return report
    try:
        report["version"] = store.server_version()
        report["reachable"] = True
        for c in resolve_collections(settings):
            manifest = load_manifest(settings.data_dir, c.name)
            meta = store.collection_meta(c.name)
            report["collections"].append(
                {
                    "name": c.name,
                    "qdrantCollection": store.physical(c.name),
                    "present": meta is not None,
                    "dim": meta.get("dim") if meta else None,
                    "indexedDim": manifest.dim if manifest else None,
                    "settingsKey": meta.get("settingsKey") if meta else None,
                    "fingerprint": meta.get("fingerprint") if meta else None,
                    "indexedFingerprint": manifest.fingerprint if manifest else None,
                    "indexedSettingsKey": manifest.settings_key if manifest else None,
                    "owner": meta.get("owner") if meta else None,
                }
            )
    except MemoryToolError as exc:
        report["error"] = exc.message
    finally:
        store.close()
    return report


def server_findings(settings: Settings) -> list[Finding]:
    """Doctor findings about the Qdrant backend; empty for the embedded engine."""
    config = server_config(settings)
    if config is None:
        return []
    found = _config_findings(config)
    report = _server_report(settings, config)
    error = report["error"]
    if error is not None:
        fid = "qdrant-auth" if "API key" in error else "qdrant-unreachable"
        return found + [_finding(fid, "error", error)]
    # Without an error the server answered, so the version is set.
    served = report["version"]
    version = _version_tuple(served) if served is not None and served != "local" else None
    if version is not None and version < MIN_VERSION:
        found.append(
            _finding(
                "qdrant-version",
                "error",
                f"the Qdrant server at {report['url']} runs {report['version']}; keyword and hybrid search need "
                f"BM25 over text indexes, in Qdrant {'.'.join(map(str, MIN_VERSION))} or later: upgrade the server",
            )
        )
    missing: list[str] = []
    dims: list[str] = []
    prints: list[str] = []
    foreign: list[str] = []
    for c in report["collections"]:
        if c["present"] and report["indexId"] is not None and c["owner"] != report["indexId"]:
            foreign.append(c["name"])  # never read or written by this index, indexed here or not
            continue
        if c["indexedFingerprint"] is None:
            continue  # never indexed here: nothing to compare with
        if not c["present"]:
            missing.append(c["name"])
        elif c["dim"] != c["indexedDim"]:
            dims.append(f"{c['name']} ({c['dim']} on the server, {c['indexedDim']} indexed)")
        elif (c["fingerprint"] and c["fingerprint"] != c["indexedFingerprint"]) or (
            not c["fingerprint"] and c["settingsKey"] and c["settingsKey"] != c["indexedSettingsKey"]
        ):
            prints.append(c["name"])
    if foreign:
        found.append(
            _finding(
                "qdrant-collection-foreign",
                "error",
                f"{len(foreign)} collection(s) at this index's names on {report['url']} (namespace {report['namespace']}) are "
                f"recorded as another index's, or as no one's, not this one's ({report['indexId']}): `index` and `search` "
                "refuse them; delete them on the server, or set another `[index.server] namespace`",
                paths=foreign,
            )
        )
    if missing:
        found.append(
            _finding(
                "qdrant-collection-missing",
                "warning",
                f"{len(missing)} indexed collection(s) are missing on {report['url']} (namespace {report['namespace']}); "
                "`openclaw-memory index` rebuilds them, `openclaw-memory migrate --to URL` copies them from the embedded engine",
                fixable=True,
                paths=missing,
            )
        )
    if dims:
        found.append(
            _finding(
                "qdrant-collection-dimension",
                "error",
                "vector dimensions differ between the server and this index: " + ", ".join(dims) + "; `openclaw-memory index --full` rebuilds them",
                fixable=True,
                paths=[d.split(" ")[0] for d in dims],
            )
        )
    if prints:
        found.append(
            _finding(
                "qdrant-collection-fingerprint",
                "warning",
                "collections on the server were written with other embedding settings than this index (another machine "
                "sharing the namespace?); `openclaw-memory index --full` re-embeds them",
                fixable=True,
                paths=prints,
            )
        )
    return found

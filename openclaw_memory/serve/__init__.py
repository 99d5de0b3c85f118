"""``serve``: one warm memory service per (state dir, workspace), shared by the CLI and every MCP session.

- :mod:`.core`: the JSON-RPC requests, read into their declared types and answered by the
  service's own :class:`~openclaw_memory.memory.local.LocalMemory` (warm pooled indexes);
- :mod:`.service`: the process (lock, socket, heartbeats, live sync, MCP over HTTP, clean stop).

The caller's side (socket protocol, client, service folder, background start) is in
:mod:`openclaw_memory.memory`; the HTTP transport in :mod:`openclaw_memory.mcp.http`.
"""

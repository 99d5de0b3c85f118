"""``serve``: one warm memory service per (state dir, workspace), shared by the CLI and every MCP session.

- :mod:`.paths`: the service folder (lock, socket, info, token) in the state dir;
- :mod:`.protocol`: JSON lines over the Unix socket, heartbeats, the settings key;
- :mod:`openclaw_memory.wire`: the API's result objects over the socket, rebuilt exactly;
- :mod:`.client`: the caller's side (standard library only), with timeouts and the one-line fallback;
- :mod:`.core`: the requests, answered by the same API the CLI calls, on warm indexes;
- :mod:`.service`: the process (lock, socket, live sync, clean stop);
- :mod:`.http`: MCP over streamable HTTP on loopback, behind a bearer token;
- :mod:`.launch`: start one in the background (``mcp --serve``).
"""

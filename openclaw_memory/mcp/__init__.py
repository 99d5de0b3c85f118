"""``openclaw-memory mcp``: the agent's memory served over the Model Context Protocol (stdio, or
streamable HTTP inside the service)."""

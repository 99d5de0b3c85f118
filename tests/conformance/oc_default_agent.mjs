#!/usr/bin/env node
// oc_default_agent.mjs — OpenClaw's default agent for an openclaw.json (the agent its `memory search`
// acts for without --agent: resolveMemoryAgent's resolveDefaultAgentId), the config first migrated as its
// startup and `doctor --fix` migrate it (migrateLegacyConfig: the older agents.list moved to agents.entries).
// Answers {agent} or {refused: OpenClaw's message}.
// Usage: node oc_default_agent.mjs --batch < requests.jsonl   (one JSON request {config} a line)
import fs from "node:fs";

import { pick } from "./oc_dist.mjs";

const migrate = await pick("src/commands/doctor/shared/legacy-config-migrate.ts", "migrateLegacyConfig");
const resolveDefault = await pick("src/agents/agent-scope-config.ts", "resolveDefaultAgentId");
for (const line of fs.readFileSync(0, "utf8").split("\n")) {
  if (!line.trim()) continue;
  let out;
  try {
    const { config } = JSON.parse(line);
    const cfg = migrate(structuredClone(config), {}).config ?? config;
    try { out = { agent: resolveDefault(cfg) }; } catch (e) { out = { refused: String(e.message) }; }
  } catch (e) {
    out = { error: String(e && e.stack ? e.stack : e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
process.exit(0);

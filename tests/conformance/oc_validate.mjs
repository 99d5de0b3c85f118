#!/usr/bin/env node
// oc_validate.mjs — a tool call's arguments as OpenClaw's agent loop reads them before any tool runs
// (validateToolArguments of "packages/llm-core/src/validation.ts"), against a schema given: this
// product's own tools' inputSchema (memory_links, memory_search's collection and paths), which
// OpenClaw reads by the schema's type as it reads its own tools'.
// Request: {schema, args}. Answer: {args: the arguments as coerced} or {refused: its message}.
// Usage: node oc_validate.mjs --batch < requests.jsonl   (one JSON answer per line)
import fs from "node:fs";

import { pick } from "./oc_dist.mjs";

const validate = await pick("packages/llm-core/src/validation.ts", "validateToolArguments");
const out = [];
for (const line of fs.readFileSync(0, "utf8").split("\n")) {
  if (!line.trim()) continue;
  const req = JSON.parse(line);
  let answer;
  try {
    answer = { args: validate({ name: "t", parameters: req.schema }, { name: "t", arguments: req.args }) };
  } catch (e) {
    answer = { refused: String(e.message).split("\n\nReceived arguments:")[0] };
  }
  out.push(JSON.stringify(answer) + "\n");
}
fs.writeSync(1, out.join(""));
process.exit(0);

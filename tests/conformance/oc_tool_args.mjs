#!/usr/bin/env node
// oc_tool_args.mjs — a model's tool call to OpenClaw's own memory_get / memory_search, as its agent loop
// runs one: the arguments checked and coerced against the tool's schema first (validateToolArguments,
// the llm-core "packages/llm-core/src/validation.ts" its agent-core calls before any tool runs; a
// refusal there is the tool result `Validation failed for tool "...": ...`), then the tool itself
// (memory-core's createMemoryGetTool / createMemorySearchTool, whose readPositiveIntegerParam and
// friends throw a ToolInputError). Functions are found as oc_more.mjs finds them (their
// "//#region <source file>" marker and the chunk's final export list) in the install at $OC_ROOT.
// Request: {tool, args, ws, state}. Answer: {refused: "schema"|"tool", message} or
// {args: the arguments the tool got, answer: memory_get's {text, from, lines, nextFrom, status} /
// memory_search's {accepted: true}}.
// Usage: node oc_tool_args.mjs --batch < requests.jsonl   (one JSON answer per line)
import fs from "node:fs";

import { pick } from "./oc_dist.mjs";

const validate = await pick("packages/llm-core/src/validation.ts", "validateToolArguments");
const creators = {
  memory_get: await pick("extensions/memory-core/src/tools.ts", "createMemoryGetTool"),
  memory_search: await pick("extensions/memory-core/src/tools.ts", "createMemorySearchTool"),
};
const configure = await pick("extensions/memory-core/src/dreaming-state.ts", "configureMemoryCoreDreamingState");
const keyedStore = await pick("src/plugin-state/plugin-state-store.ts", "createPluginStateKeyedStore");
configure((options) => keyedStore("memory-core", options));

const out = [];
for (const line of fs.readFileSync(0, "utf8").split("\n")) {
  if (!line.trim()) continue;
  const req = JSON.parse(line);
  process.env.OPENCLAW_STATE_DIR = req.state;
  const cfg = { agents: { defaults: { workspace: req.ws } }, memory: { search: { provider: "none" } } };
  const tool = creators[req.tool]({ config: cfg, agentSessionKey: "agent:main:main" });
  let answer;
  let args;
  try {
    args = validate(tool, { name: req.tool, arguments: req.args });
  } catch (e) {
    answer = { refused: "schema", message: String(e.message).split("\n\nReceived arguments:")[0] };
  }
  if (!answer) {
    try {
      const d = (await tool.execute("conformance", args)).details;
      answer = { args, answer: req.tool === "memory_get"
        ? { text: d.text, from: d.from, lines: d.lines, nextFrom: d.nextFrom, status: d.status }
        : { accepted: true } };
    } catch (e) {
      answer = e && e.name === "ToolInputError" ? { refused: "tool", message: String(e.message) }
        : { error: String((e && e.message) || e) };
    }
  }
  out.push(JSON.stringify(answer) + "\n");
}
fs.writeSync(1, out.join(""));
process.exit(0);

#!/usr/bin/env node
// oc_more.mjs — OpenClaw functions the shared oracle driver (../shared/oracle/oc_driver.mjs) does not
// expose in the form these tests need, found the same way (by their "//#region <source file>" marker
// and the chunk's final export list) in the OpenClaw install at $OC_ROOT:
//   bootstrap  : loadWorkspaceBootstrapFiles(ws, names) + buildBootstrapContextFiles: every startup file
//                (AGENTS.md, SOUL.md, IDENTITY.md, USER.md, BOOTSTRAP.md, MEMORY.md) unless `names` picks some;
//                `setupCompleted` leaves BOOTSTRAP.md out as filterCompletedWorkspaceBootstrapFile does once
//                OpenClaw's state records the workspace's setup complete (that state lives in its database);
//                `rendered`: each injected text as the system prompt renders it; `budget`: analyzeBootstrapBudget
//                (buildBootstrapInjectionStats), the numbers of doctor's bootstrap file size note
//                (sanitizeContextFileContentForPrompt, extracted from its chunk: it is not exported);
//                `notice`: the system prompt's "## Bootstrap Context Notice" section when a file was cut, else null
//   prelude    : buildSessionStartupContextPrelude with a configured userTimezone and an exact nowMs
//   suggest    : shouldSuggestMemorySystem (doctor's "Memory system not found")
//   search     : an openclaw.json as OpenClaw reads it (migrateLegacyConfig: what its startup and
//                `doctor --fix` do to older keys), then resolveMemorySearchConfig for an agent:
//                extraPaths, query.maxResults and multimodal (provider "none": no embedding adapter)
//   dotenv     : loadGlobalRuntimeDotEnvFiles into a given environment: the variables OpenClaw's own
//                .env files (the state dir's, ~/.config/openclaw/gateway.env) add to it
//   agent      : an openclaw.json (its ${VAR}s from `env`, an unset one left as written, as its config read leaves it; migrated as in search) for one agent: the workspace, extra paths and
//                read budget memory_get uses (readAgentMemoryFile: the memory host SDK's own
//                resolveMemoryHost* functions), and the workspace the rest of OpenClaw uses
//                (resolveAgentWorkspaceDir: memory-core's index, the bootstrap files), in env `env`
//   memorysearch: memory-core's own memory_search tool (createMemorySearchTool, its dreaming state store
//                configured as its bundled runtime configures it) for `query` on workspace `ws`, state dir
//                `state`, provider "none" (keyword search: no embedding provider offline): the tool's JSON
//   agentid    : each of `ids` as normalizeAgentIdStrict (an explicit id: null where it refuses one) and
//                normalizeAgentId (a config key's: main where nothing is left) normalize it
// Usage: node oc_more.mjs --batch < requests.jsonl   (one JSON answer per line)
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { OC_ROOT, chunks, pick } from "./oc_dist.mjs";

// The prelude is not exported: the shared driver extracts it to $OC_ROOT/extract (run it once first).
async function prelude() {
  const p = path.join(OC_ROOT, "extract", "startup-context.mjs");
  return (await import(pathToFileURL(p).href)).buildSessionStartupContextPrelude;
}

// The system prompt's context-file rendering (src/agents/system-prompt-context-files.ts), not exported:
// its region is written, with the imports it uses, to a temporary module.
let sanitizer;
async function sanitize() {
  if (sanitizer) return sanitizer;
  const region = "src/agents/system-prompt-context-files.ts";
  const [{ file, text }] = chunks(region);
  const start = text.indexOf(`//#region ${region}\n`);
  const body = text.slice(start, text.indexOf("//#endregion", start));
  const imports = text.split("\n").filter((l) => l.startsWith("import ") && /normalizeLowercaseStringOrEmpty/.test(l))
    .map((l) => l.replace(/from "\.\/([^"]+)"/, (_, f) => `from "${pathToFileURL(path.join(path.dirname(file), f)).href}"`));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "oc-more-"));
  const out = path.join(dir, "context-files.mjs");
  fs.writeFileSync(out, imports.join("\n") + "\n" + body + "\nexport { sanitizeContextFileContentForPrompt };\n");
  sanitizer = (await import(pathToFileURL(out).href)).sanitizeContextFileContentForPrompt;
  fs.rmSync(dir, { recursive: true, force: true });
  return sanitizer;
}

// The system prompt's bootstrap sections (src/agents/system-prompt.ts: buildAgentBootstrapSystemPromptSections,
// where "## Bootstrap Context Notice" is added), not exported: its two functions written to a temporary module,
// given the bootstrap-pending lines they call (bootstrapMode "none" here, where none is called: this product
// assumes the workspace's setup complete).
let sectionsFn;
async function bootstrapSections() {
  if (sectionsFn) return sectionsFn;
  const [{ text }] = chunks("src/agents/system-prompt.ts");
  const start = text.indexOf("function buildAgentBootstrapSystemContext(");
  const body = text.slice(start, text.indexOf("function buildUserIdentitySection(", start));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "oc-more-"));
  const out = path.join(dir, "bootstrap-sections.mjs");
  fs.writeFileSync(out, "export function make({ buildFullBootstrapPromptLines, buildLimitedBootstrapPromptLines, isBootstrapContextFile }) {\n"
    + body + "\nreturn buildAgentBootstrapSystemPromptSections;\n}\n");
  const { make } = await import(pathToFileURL(out).href);
  fs.rmSync(dir, { recursive: true, force: true });
  sectionsFn = make({
    buildFullBootstrapPromptLines: await pick("src/agents/bootstrap-prompt.ts", "buildFullBootstrapPromptLines"),
    buildLimitedBootstrapPromptLines: await pick("src/agents/bootstrap-prompt.ts", "buildLimitedBootstrapPromptLines"),
    isBootstrapContextFile: () => { throw new Error("asked for bootstrapMode none only"); },
  });
  return sectionsFn;
}

const ops = {
  async bootstrap(req) {
    const load = await pick("src/agents/workspace.ts", "loadWorkspaceBootstrapFiles");
    const build = await pick("src/agents/embedded-agent-helpers/bootstrap.ts", "buildBootstrapContextFiles");
    const render = await sanitize();
    const warnings = [];
    let loaded = await load(req.ws, req.names ?? undefined);
    if (req.setupCompleted) loaded = loaded.filter((f) => f.name !== "BOOTSTRAP.md");
    const out = build(loaded, { maxChars: req.maxChars ?? 20000, totalMaxChars: req.totalMaxChars ?? 60000, warn: (m) => warnings.push(m) });
    const stats = await pick("src/agents/bootstrap-budget.ts", "buildBootstrapInjectionStats");
    const analyze = await pick("src/agents/bootstrap-budget.ts", "analyzeBootstrapBudget");
    const analysis = analyze({ files: stats({ bootstrapFiles: loaded, injectedFiles: out }),
                               bootstrapMaxChars: req.maxChars ?? 20000, bootstrapTotalMaxChars: req.totalMaxChars ?? 60000 });
    // The system prompt's truncation notice: buildBootstrapBudgetState (its warning mode, "always") for the
    // limits as configured, buildBootstrapPromptWarningNotice, then the section that holds it.
    const budgetState = await pick("src/agents/bootstrap-budget.ts", "buildBootstrapBudgetState");
    const noticeOf = await pick("src/agents/bootstrap-budget.ts", "buildBootstrapPromptWarningNotice");
    const config = { agents: { defaults: { bootstrapMaxChars: req.maxChars ?? 20000, bootstrapTotalMaxChars: req.totalMaxChars ?? 60000 } } };
    const state = budgetState({ config, agentId: "main", files: stats({ bootstrapFiles: loaded, injectedFiles: out }) });
    const sections = (await bootstrapSections())({ bootstrapMode: "none", bootstrapTruncationNotice: noticeOf(state.bootstrapPromptWarning.lines), contextFiles: out });
    return {
      notice: sections.length ? sections.join("\n") : null,
      injected: out.map((f) => ({ name: path.basename(f.path), content: f.content })),
      rendered: out.map((f) => render(f.content)),
      // doctor's bootstrap budget (noteBootstrapFileSize's numbers): each file there, and the totals
      budget: { files: analysis.files.filter((f) => !f.missing).map((f) => [f.name, f.rawChars, f.injectedChars, f.effectiveFileLimit, f.causes]),
                totals: [analysis.totals.rawChars, analysis.totals.injectedChars], nearLimit: analysis.nearLimitFiles.map((f) => f.name),
                totalNearLimit: analysis.totalNearLimit },
      loaded: loaded.map((f) => ({ name: f.name, missing: !!f.missing })),
      warnings,
    };
  },
  async prelude(req) {
    const fn = await prelude();
    const cfg = { agents: { defaults: { ...(req.userTimezone ? { userTimezone: req.userTimezone } : {}), ...(req.startupContext ? { startupContext: req.startupContext } : {}) } } };
    return { prelude: await fn({ workspaceDir: req.ws, cfg, nowMs: req.nowMs }) };
  },
  async search(req) {
    const migrate = await pick("src/commands/doctor/shared/legacy-config-migrate.ts", "migrateLegacyConfig");
    const resolve = await pick("src/agents/memory-search.ts", "resolveMemorySearchConfig");
    const migrated = migrate(structuredClone(req.config), {});
    const cfg = migrated.config ?? structuredClone(req.config);
    ((cfg.memory ??= {}).search ??= {}).provider = "none";
    const r = resolve(cfg, req.agent ?? "main");
    return { changes: migrated.changes, extraPaths: r?.extraPaths ?? null, maxResults: r?.query?.maxResults ?? null,
             multimodal: r?.multimodal ?? null };
  },
  async agent(req) {
    const migrate = await pick("src/commands/doctor/shared/legacy-config-migrate.ts", "migrateLegacyConfig");
    const region = "packages/memory-host-sdk/src/host/config-utils.ts";
    const hostWs = await pick(region, "resolveMemoryHostAgentWorkspaceDir");
    const hostLimits = await pick(region, "resolveMemoryHostAgentContextLimits");
    const hostSearch = await pick(region, "resolveMemoryHostSearchPathConfig");
    const coreWs = await pick("src/agents/agent-scope-config.ts", "resolveAgentWorkspaceDir");
    const env = { ...req.env };
    const subst = await pick("src/config/env-substitution.ts", "resolveConfigEnvVars");
    let config;
    try { config = subst(structuredClone(req.config), env, { onMissing: () => {} }); } catch (e) { return { error: String(e) }; }
    const migrated = migrate(structuredClone(config), {});
    const cfg = migrated.config ?? config;
    const settle = (fn) => { try { return fn(); } catch (e) { return { error: String(e) }; } };
    const search = settle(() => hostSearch(cfg, req.agent));
    const validate = await pick("src/config/validation-core.ts", "validateConfigObjectRaw");
    const issues = (c) => { const v = validate(c); return v.ok ? [] : v.issues.map((i) => `${i.path}: ${i.message}`); };
    return {
      // OpenClaw refuses to start on a config with issues: as written, and after `doctor --fix`.
      issues: issues(config), migratedIssues: issues(cfg), changes: migrated.changes,
      getWorkspace: settle(() => hostWs(cfg, req.agent, env)),
      workspace: settle(() => coreWs(cfg, req.agent, env)),
      getMaxChars: settle(() => hostLimits(cfg, req.agent)?.memoryGetMaxChars ?? null),
      getExtraPaths: search && !search.error ? search.extraPaths : search,
    };
  },
  async agentid(req) {
    const region = "packages/normalization-core/src/agent-id.ts";
    const strict = await pick(region, "normalizeAgentIdStrict");
    const lenient = await pick(region, "normalizeAgentId");
    return { ids: req.ids.map((id) => { const r = strict(id); return [r.ok ? r.value : null, lenient(id)]; }) };
  },
  async memorysearch(req) {
    process.env.OPENCLAW_STATE_DIR = req.state;  // read when the agent's index database is located
    const create = await pick("extensions/memory-core/src/tools.ts", "createMemorySearchTool");
    const configure = await pick("extensions/memory-core/src/dreaming-state.ts", "configureMemoryCoreDreamingState");
    const keyedStore = await pick("src/plugin-state/plugin-state-store.ts", "createPluginStateKeyedStore");
    configure((options) => keyedStore("memory-core", options));
    const cfg = { agents: { defaults: { workspace: req.ws } }, memory: { search: { provider: "none" } } };
    const tool = create({ config: cfg, agentSessionKey: "agent:main:main" });
    return (await tool.execute("conformance", { query: req.query })).details;
  },
  async dotenv(req) {
    const load = await pick("src/infra/dotenv-global.ts", "loadGlobalRuntimeDotEnvFiles");
    const env = { ...req.env };
    load({ env, stateEnvPath: req.stateEnvPath, quiet: true, onWarning: () => {} });
    return { env };
  },
  async suggest(req) {
    const fn = await pick("src/commands/doctor-workspace.ts", "shouldSuggestMemorySystem");
    const text = await pick("src/commands/doctor-workspace.ts", "MEMORY_SYSTEM_PROMPT");
    return { suggest: await fn(req.ws), text };
  },
};

const input = fs.readFileSync(0, "utf8");
for (const line of input.split("\n")) {
  if (!line.trim()) continue;
  let out;
  try {
    const req = JSON.parse(line);
    out = await ops[req.op](req);
  } catch (e) {
    out = { error: String(e && e.stack ? e.stack : e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
process.exit(0);

// oc_dist.mjs — OpenClaw's own functions, found in its bundled dist at $OC_ROOT by their
// "//#region <source file>" marker and the chunk's final export list (shared by oc_more.mjs and
// oc_tool_args.mjs).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const OC_ROOT = process.env.OC_ROOT || "/tmp/oc";
export const DIST = path.join(OC_ROOT, "app", "node_modules", "openclaw", "dist");
const files = fs.readdirSync(DIST).filter((n) => n.endsWith(".mjs")).map((n) => path.join(DIST, n));

// Every chunk holding the region (a few regions are bundled twice, one copy not exporting the function).
export function chunks(region) {
  const marker = `//#region ${region}\n`;
  const found = [];
  for (const file of files) {
    const text = fs.readFileSync(file, "utf8");
    if (text.includes(marker)) found.push({ file, text });
  }
  if (!found.length) throw new Error(`no chunk has region ${region}`);
  return found;
}
export async function pick(region, name) {
  const seen = [];
  for (const { file, text } of chunks(region)) {
    const m = [...text.matchAll(/export \{([^}]*)\};?\s*$/gm)].pop();
    for (const part of m ? m[1].split(",") : []) {
      const mm = part.trim().match(/^(\S+)\s+as\s+(\S+)$/);
      if (mm && mm[1] === name) return (await import(pathToFileURL(file).href))[mm[2]];
      if (part.trim() === name) return (await import(pathToFileURL(file).href))[name];
    }
    seen.push(path.basename(file));
  }
  throw new Error(`${name} is not exported from ${seen.join(", ")}`);
}

/**
 * What agent/Containerfile's runtime stage holds and runs, read from the file itself so that
 * `npm run bench:agent` and the install tests run the agent exactly as the image does (there is
 * no container builder on the machines that run them). They take the repository's bundle for the
 * build stage's: test/agent/install.test.ts builds the image from its own context
 * (scripts/image-build.ts) and checks that the two are the same, byte for byte.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The runtime stage: its ENTRYPOINT argv, its ENV, and the files it copies from the build stage. */
export interface AgentImage {
  /** ENTRYPOINT, e.g. `["node", "--max-old-space-size=48", "dist/agent/flotilla-agent.mjs"]`. */
  entrypoint: string[];
  /** Variables the ENV lines set. */
  env: Record<string, string>;
  /** `COPY --from=build` lines: repository path (the build stage's `/src` after `npm run build`) → path under `/app`. */
  copies: { from: string; to: string }[];
}

/**
 * Parses agent/Containerfile's last stage.
 *
 * @throws Error when it has no ENTRYPOINT in JSON form.
 */
export function agentImage(): AgentImage {
  const text = fs.readFileSync(path.join(root, "agent/Containerfile"), "utf8");
  const runtime = text.slice(text.lastIndexOf("\nFROM "));
  const entry = /^ENTRYPOINT (\[.*\])$/m.exec(runtime);
  if (!entry) throw new Error("agent/Containerfile has no ENTRYPOINT");
  const env: Record<string, string> = {};
  for (const m of runtime.matchAll(/^ENV (.+)$/gm)) {
    for (const kv of m[1]!.split(/\s+/)) {
      const i = kv.indexOf("=");
      if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
    }
  }
  const copies = [...runtime.matchAll(/^COPY --from=build(?: --chown=\S+)? \/src\/(\S+) \/app\/(\S*)$/gm)].map((m) => ({ from: m[1]!, to: m[2]! }));
  return { entrypoint: JSON.parse(entry[1]!) as string[], env, copies };
}

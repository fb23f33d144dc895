/**
 * The instrumentation of `npm run walk:placement` (scripts/walk-instrument.ts): every function of
 * the hub's files records its file when called, functions of other modules record nothing, and
 * the instrumented code answers as the original does.
 */
import { describe, expect, it } from "vitest";
import { fileAt, instrumentBundle, modulesOf } from "../../scripts/walk-instrument.ts";

/** A bundle as esbuild writes it: each module's code after its `// <path>` marker. */
const BUNDLE = `var shared = 1;

// src/a.ts
function f(x) {
  return x + shared;
}
const g = (x) => x * 2;
const obj = () => ({ made: true });
const curried = (a) => (b) => a + b;

// node_modules/lib/index.js
function lib() {
  return "lib";
}

// durable-objects/b.ts
class B {
  constructor(v) {
    this.v = v;
  }
  get twice() {
    return g(this.v);
  }
  async later() {
    return await Promise.resolve(this.v);
  }
}
`;

type Walked = {
  f: (x: number) => number;
  g: (x: number) => number;
  obj: () => unknown;
  curried: (a: number) => (b: number) => number;
  lib: () => string;
  B: new (v: number) => { twice: number; later(): Promise<number> };
};

/** Evaluates a bundle's code and answers its functions. */
function load(source: string): Walked {
  return new Function(`${source}\nreturn { f, g, obj, curried, lib, B };`)() as Walked;
}

/** Runs `fn` with a fresh record and answers the files it recorded. */
async function recorded(files: string[], fn: () => unknown): Promise<string[]> {
  const walk = new Set<number>();
  (globalThis as { __walk?: Set<number> }).__walk = walk;
  try {
    await fn();
  } finally {
    delete (globalThis as { __walk?: Set<number> }).__walk;
  }
  return [...walk].map((i) => files[i]!).sort();
}

describe("walk instrumentation", () => {
  it("tells modules apart by esbuild's markers", () => {
    const modules = modulesOf(BUNDLE);
    expect(modules.map((m) => m.file)).toEqual(["src/a.ts", "node_modules/lib/index.js", "durable-objects/b.ts"]);
    expect(fileAt(modules, 0)).toBeNull();
    expect(fileAt(modules, BUNDLE.indexOf("function lib"))).toBe("node_modules/lib/index.js");
  });

  it("instruments every function of the hub's files, and only those", () => {
    const { files, functions } = instrumentBundle(BUNDLE);
    expect(files).toEqual(["src/a.ts", "durable-objects/b.ts"]);
    // f, g, obj, curried and its inner arrow; B's constructor, getter and method.
    expect(functions).toBe(8);
  });

  it("records the file of each function called, and answers as before", async () => {
    const { source, files } = instrumentBundle(BUNDLE);
    const plain = load(BUNDLE);
    const walked = load(source);
    expect(await recorded(files, () => expect(walked.f(1)).toBe(plain.f(1)))).toEqual(["src/a.ts"]);
    expect(await recorded(files, () => expect(walked.obj()).toEqual(plain.obj()))).toEqual(["src/a.ts"]);
    expect(await recorded(files, () => expect(walked.curried(1)(2)).toBe(3))).toEqual(["src/a.ts"]);
    expect(await recorded(files, () => expect(walked.lib()).toBe("lib"))).toEqual([]);
    expect(await recorded(files, () => expect(new walked.B(4).twice).toBe(8))).toEqual(["durable-objects/b.ts", "src/a.ts"]);
    expect(await recorded(files, async () => expect(await new walked.B(5).later()).toBe(5))).toEqual(["durable-objects/b.ts"]);
    // Without a record, nothing is recorded and nothing fails.
    expect(walked.g(3)).toBe(6);
  });
});

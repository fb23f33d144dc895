/**
 * Semantic versions as the Kubernetes CEL semver library (`k8s.io/apiserver/pkg/cel/library`
 * `SemverLib`, which OCM's CEL environments include through sdk-go's `BaseEnvOpts`) parses and
 * orders them: semver.org 2.0.0, strict unless `normalize` is asked for. Pure: no I/O.
 *
 * @module
 */

/** A parsed semantic version; `pre` holds the dot-separated pre-release identifiers. */
export class Semver {
  constructor(
    readonly major: bigint,
    readonly minor: bigint,
    readonly patch: bigint,
    readonly pre: readonly string[],
    readonly build: string,
  ) {}

  /** The canonical text, `MAJOR.MINOR.PATCH[-PRE][+BUILD]`. */
  toString(): string {
    return `${this.major}.${this.minor}.${this.patch}${this.pre.length ? `-${this.pre.join(".")}` : ""}${this.build ? `+${this.build}` : ""}`;
  }
}

const NUMERIC = /^(0|[1-9][0-9]*)$/;
const IDENT = /^[0-9A-Za-z-]+$/;
const STRICT = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-([0-9A-Za-z.-]+))?(?:\+([0-9A-Za-z.-]+))?$/;

/**
 * Parses a version. Strict (the default) accepts exactly `MAJOR.MINOR.PATCH[-PRE][+BUILD]`;
 * `normalize` first drops a leading "v", fills a missing minor or patch with 0 and strips leading
 * zeros, as the library's `semver(string, true)` does.
 *
 * @throws Error naming the problem when `text` is not a version.
 * @example parseSemver("v1.30", true).toString() // "1.30.0"
 */
export function parseSemver(text: string, normalize = false): Semver {
  let s = text;
  if (normalize) {
    if (s.startsWith("v")) s = s.slice(1);
    const m = /^([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?(.*)$/.exec(s);
    if (m) s = `${BigInt(m[1]!)}.${BigInt(m[2] ?? "0")}.${BigInt(m[3] ?? "0")}${m[4]}`;
  }
  const m = STRICT.exec(s);
  if (!m) throw new Error(`No Major.Minor.Patch elements found in ${JSON.stringify(text)}`);
  const pre = m[4] ? m[4].split(".") : [];
  for (const p of pre) {
    if (!IDENT.test(p)) throw new Error(`Invalid character(s) found in prerelease ${JSON.stringify(p)}`);
    if (/^[0-9]+$/.test(p) && !NUMERIC.test(p)) throw new Error(`Numeric PreRelease version must not contain leading zeroes ${JSON.stringify(p)}`);
  }
  return new Semver(BigInt(m[1]!), BigInt(m[2]!), BigInt(m[3]!), pre, m[5] ?? "");
}

function cmp(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** -1, 0 or 1 as `a` precedes, equals or follows `b` in semver precedence (build metadata ignored). */
export function compareSemver(a: Semver, b: Semver): number {
  const c = cmp(a.major, b.major) || cmp(a.minor, b.minor) || cmp(a.patch, b.patch);
  if (c !== 0) return c;
  if (a.pre.length === 0 || b.pre.length === 0) return a.pre.length === b.pre.length ? 0 : a.pre.length === 0 ? 1 : -1;
  for (let i = 0; i < Math.max(a.pre.length, b.pre.length); i++) {
    const x = a.pre[i];
    const y = b.pre[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const xn = NUMERIC.test(x);
    const yn = NUMERIC.test(y);
    if (xn && yn) {
      const d = cmp(BigInt(x), BigInt(y));
      if (d !== 0) return d;
    } else if (xn !== yn) {
      return xn ? -1 : 1;
    } else if (x !== y) {
      return x < y ? -1 : 1;
    }
  }
  return 0;
}

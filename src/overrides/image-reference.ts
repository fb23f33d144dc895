/**
 * Container image references split as Karmada's image overrider splits them (karmada-io/karmada
 * `pkg/util/imageparser`, on `github.com/distribution/reference`'s grammar, not normalised: `nginx`
 * stays `nginx`, no `docker.io/library/`): `[hostname[:port]/]repository[:tag|@digest]`. Pure.
 */

// distribution/reference's regular expressions (reference.go, regexp.go).
const alphanumeric = "[a-z0-9]+";
const separator = "(?:[._]|__|[-]+)";
const pathComponent = `${alphanumeric}(?:${separator}${alphanumeric})*`;
const domainNameComponent = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const domainName = `${domainNameComponent}(?:\\.${domainNameComponent})*`;
const host = `(?:${domainName}|\\[(?:[a-fA-F0-9:]+)\\])`;
const domainAndPort = `${host}(?::[0-9]+)?`;
const tag = "[\\w][\\w.-]{0,127}";
const digest = "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}";
const remoteName = `${pathComponent}(?:/${pathComponent})*`;
const namePat = `(?:${domainAndPort}/)?${remoteName}`;
const referenceRegexp = new RegExp(`^(${namePat})(?::(${tag}))?(?:@(${digest}))?$`);
const anchoredTag = new RegExp(`^${tag}$`);
const anchoredDigest = new RegExp(`^${digest}$`);

/** The parts of an image reference (`imageparser.Components`). */
export interface ImageComponents {
  /** The registry, with its port (`fictional.registry.example:10443`), or "". */
  hostname: string;
  /** The repository without the hostname (`karmada/karmada-controller-manager`). */
  repository: string;
  tag: string;
  digest: string;
}

const DIGEST_LENGTHS: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };

/** distribution/reference `splitDomain` as imageparser's `SplitHostname`: a first part with `.` or `:`, or `localhost`, is the hostname. */
function splitHostname(name: string): [string, string] {
  const i = name.indexOf("/");
  if (i === -1 || (!/[.:]/.test(name.slice(0, i)) && name.slice(0, i) !== "localhost")) return ["", name];
  return [name.slice(0, i), name.slice(i + 1)];
}

/**
 * `imageparser.Parse`: the components of `image`, or distribution/reference's error message
 * (`invalid reference format`, `repository name must be lowercase`, ...).
 */
export function parseImage(image: string): ImageComponents | { error: string } {
  const m = referenceRegexp.exec(image);
  if (!m) {
    if (image === "") return { error: "repository name must have at least one component" };
    if (referenceRegexp.test(image.toLowerCase())) return { error: "repository name must be lowercase" };
    return { error: "invalid reference format" };
  }
  const name = m[1]!;
  if (name.length > 255) return { error: "repository name must not be more than 255 characters" };
  const d = m[3] ?? "";
  if (d) {
    const [alg, hex] = [d.slice(0, d.indexOf(":")), d.slice(d.indexOf(":") + 1)];
    const want = DIGEST_LENGTHS[alg];
    if (want === undefined) return { error: "unsupported digest algorithm" };
    if (hex.length !== want) return { error: "invalid checksum digest length" };
    if (!/^[a-f0-9]+$/.test(hex)) return { error: "invalid checksum digest format" };
  }
  const [hostname, repository] = splitHostname(name);
  // A tagged reference reads as Tagged (the digest, if any, is not kept: imageparser checks Tagged first).
  return m[2] ? { hostname, repository, tag: m[2], digest: "" } : { hostname, repository, tag: "", digest: d };
}

/** `Components.String()`: `[hostname/]repository`, then `:tag` or `@digest`. */
export function imageString(c: ImageComponents): string {
  const full = c.hostname === "" ? c.repository : `${c.hostname}/${c.repository}`;
  if (c.tag !== "") return `${full}:${c.tag}`;
  if (c.digest !== "") return `${full}@${c.digest}`;
  return full;
}

/** `SetTagOrDigest`: a tag or a digest by what `input` looks like; anything else changes nothing. */
export function setTagOrDigest(c: ImageComponents, input: string): void {
  if (anchoredTag.test(input)) {
    c.tag = input;
    c.digest = "";
  } else if (anchoredDigest.test(input)) {
    c.digest = input;
    c.tag = "";
  }
}

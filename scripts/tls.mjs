// The local CA and serving certificate of `FLOTILLA_HTTPS=1 npm start` (contract): generated
// once into <state>/tls/ with @peculiar/x509 on Node's WebCrypto (ECDSA P-256), a CA valid for
// 10 years and a certificate for 127.0.0.1 and localhost valid for 1 year, signed by it.
import { webcrypto } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import "reflect-metadata";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto);
const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
const DAY_MS = 24 * 60 * 60 * 1000;

function pemKey(der) {
  const b64 = Buffer.from(der)
    .toString("base64")
    .replace(/(.{64})/g, "$1\n");
  return `-----BEGIN PRIVATE KEY-----\n${b64.trim()}\n-----END PRIVATE KEY-----\n`;
}

function serial() {
  return Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
    .toString("hex")
    .replace(/^[89a-f]/, "1");
}

/**
 * Returns the paths of the local CA certificate and of the serving certificate and key under
 * `<stateDir>/tls`, creating them when absent.
 */
export async function ensureLocalTls(stateDir) {
  const dir = path.join(stateDir, "tls");
  const files = { ca: path.join(dir, "ca.crt"), caKey: path.join(dir, "ca.key"), cert: path.join(dir, "server.crt"), key: path.join(dir, "server.key") };
  if (Object.values(files).every((f) => existsSync(f))) return files;
  mkdirSync(dir, { recursive: true });
  const now = Date.now();
  const caKeys = await webcrypto.subtle.generateKey(ALG, true, ["sign", "verify"]);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: "CN=Flotilla local CA",
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + 3650 * DAY_MS),
    keys: caKeys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const keys = await webcrypto.subtle.generateKey(ALG, true, ["sign", "verify"]);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: "CN=127.0.0.1",
    issuer: ca.subject,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + 365 * DAY_MS),
    signingKey: caKeys.privateKey,
    publicKey: keys.publicKey,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: "ip", value: "127.0.0.1" },
        { type: "dns", value: "localhost" },
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(ca, false),
    ],
  });
  writeFileSync(files.caKey, pemKey(await webcrypto.subtle.exportKey("pkcs8", caKeys.privateKey)), { mode: 0o600 });
  writeFileSync(files.key, pemKey(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey)), { mode: 0o600 });
  writeFileSync(files.ca, ca.toString("pem") + "\n");
  writeFileSync(files.cert, cert.toString("pem") + "\n");
  return files;
}

/**
 * wrangler's (workerd's) line for a connection whose client refused the hub's certificate, once
 * its colours are stripped: `✘ [ERROR] HTTP connection failed: TLS handshake failed: received
 * fatal alert: UnknownCA` (a browser or tool that does not trust the local CA; Chromium sends
 * `CertificateUnknown`, twice per visit), followed by two blank lines.
 */
const UNTRUSTED_HANDSHAKE =
  /^(?:✘ )?\[ERROR\] HTTP connection failed: TLS handshake failed: received fatal alert: (UnknownCA|CertificateUnknown|BadCertificate)\s*$/;

/**
 * A filter of the hub's log lines for `FLOTILLA_HTTPS=1 npm start` (scripts/start.mjs): the first
 * handshake a client failed because it does not trust the local CA becomes one calm line naming
 * the CA file to trust (README.md, "The dashboard"); later ones, and the blank lines wrangler
 * prints after each, are dropped. Every other line passes.
 *
 * @param caFile the local CA certificate's path (`<state>/tls/ca.crt`)
 * @returns a function of one line without terminal colours: `undefined` to pass the line on as it
 *   came, `null` to drop it, or a string to print instead
 */
export function untrustedHandshakeFilter(caFile) {
  let told = false;
  let blanks = 0;
  return (line) => {
    const m = UNTRUSTED_HANDSHAKE.exec(line.trim());
    if (m) {
      blanks = 2;
      if (told) return null;
      told = true;
      return (
        `flotilla: a client (a browser?) refused the hub's certificate (TLS alert ${m[1]}): it does not trust the local CA. ` +
        `Trust ${caFile} (README.md, "The dashboard"); further refusals are not logged.`
      );
    }
    if (blanks > 0 && line.trim() === "") {
      blanks--;
      return null;
    }
    blanks = 0;
    return undefined;
  };
}

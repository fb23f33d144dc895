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

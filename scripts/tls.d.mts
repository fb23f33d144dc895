/** The files of a local TLS setup: the CA's certificate and key, the server's certificate and key (PEM paths). */
export interface LocalTls {
  ca: string;
  caKey: string;
  cert: string;
  key: string;
}
/**
 * The local CA and a server certificate for 127.0.0.1 and localhost under `<stateDir>/tls`,
 * generated once (ECDSA P-256) and reused afterwards.
 */
export function ensureLocalTls(stateDir: string): Promise<LocalTls>;

/**
 * Kubernetes' protobuf request bodies (src/api/protobuf.ts), from the bytes kubectl v1.32's typed
 * clients sent (captured from `kubectl create namespace team-a` and `kubectl create secret
 * generic s1 -n apps --from-literal=token=s3cret --from-literal=b=x`, `kubectl create
 * serviceaccount deployer -n ci`, `kubectl create token deployer -n ci [--duration 10m --audience
 * vault --audience ci.example]`).
 */
import { describe, expect, it } from "vitest";
import { decodeProtobufObject, decodesProtobuf } from "../../src/api/protobuf.ts";
import { ApiError } from "../../src/k8s/errors.ts";

const bytes = (b64: string) => Uint8Array.from(Buffer.from(b64, "base64"));
const KUBECTL_CREATE_NAMESPACE = "azhzAAoPCgJ2MRIJTmFtZXNwYWNlEh4KFgoGdGVhbS1hEgAaACIAKgAyADgAQgASABoCCgAaACIA";
const KUBECTL_CREATE_SECRET = "azhzAAoMCgJ2MRIGU2VjcmV0EjMKFgoCczESABoEYXBwcyIAKgAyADgAQgASBgoBYhIBeBIPCgV0b2tlbhIGczNjcmV0GgAaACIA";
const KUBECTL_CREATE_SERVICEACCOUNT = "azhzAAoUCgJ2MRIOU2VydmljZUFjY291bnQSHAoaCghkZXBsb3llchIAGgJjaSIAKgAyADgAQgAaACIA";
const KUBECTL_CREATE_TOKEN = "azhzAAooChhhdXRoZW50aWNhdGlvbi5rOHMuaW8vdjESDFRva2VuUmVxdWVzdBIaChAKABIAGgAiACoAMgA4AEIAEgAaBAoAEgAaACIA";
const KUBECTL_CREATE_TOKEN_ASKING =
  "azhzAAooChhhdXRoZW50aWNhdGlvbi5rOHMuaW8vdjESDFRva2VuUmVxdWVzdBIwChAKABIAGgAiACoAMgA4AEIAEhYKBXZhdWx0CgpjaS5leGFtcGxlINgEGgQKABIAGgAiAA==";

describe("protobuf request bodies", () => {
  it("decodes kubectl's ServiceAccount and TokenRequest (audiences, expirationSeconds only when asked; status ignored)", () => {
    expect(decodeProtobufObject(bytes(KUBECTL_CREATE_SERVICEACCOUNT))).toEqual({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "deployer", namespace: "ci" } });
    expect(decodeProtobufObject(bytes(KUBECTL_CREATE_TOKEN))).toEqual({ apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", metadata: {}, spec: {} });
    expect(decodeProtobufObject(bytes(KUBECTL_CREATE_TOKEN_ASKING))).toEqual({ apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", metadata: {}, spec: { audiences: ["vault", "ci.example"], expirationSeconds: 600 } });
  });

  it("decodes kubectl's Namespace: the empty fields Go writes are dropped", () => {
    expect(decodeProtobufObject(bytes(KUBECTL_CREATE_NAMESPACE))).toEqual({ apiVersion: "v1", kind: "Namespace", metadata: { name: "team-a" }, spec: {} });
  });

  it("decodes kubectl's Secret: data bytes become base64, the namespace is kept", () => {
    expect(decodeProtobufObject(bytes(KUBECTL_CREATE_SECRET))).toEqual({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "s1", namespace: "apps" },
      data: { b: btoa("x"), token: btoa("s3cret") },
    });
  });

  it("refuses a body without the envelope, a truncated one and a kind it does not decode (400)", () => {
    const refusal = (b: Uint8Array) => {
      try {
        decodeProtobufObject(b);
        return null;
      } catch (e) {
        return e instanceof ApiError ? e.code : e;
      }
    };
    expect(refusal(new TextEncoder().encode('{"kind":"Namespace"}'))).toBe(400);
    expect(refusal(bytes(KUBECTL_CREATE_NAMESPACE).subarray(0, 20))).toBe(400);
    // The envelope naming another kind (Placement) is refused, not guessed at.
    const other = Uint8Array.from([0x6b, 0x38, 0x73, 0x00, 0x0a, 0x0d, 0x0a, 0x02, 0x76, 0x31, 0x12, 0x07, ...new TextEncoder().encode("Service")]);
    expect(refusal(other)).toBe(400);
    expect(decodesProtobuf("v1", "Namespace")).toBe(true);
    expect(decodesProtobuf("cluster.open-cluster-management.io/v1beta1", "Placement")).toBe(false);
  });
});

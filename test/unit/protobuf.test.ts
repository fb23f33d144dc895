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
    expect(decodeProtobufObject(bytes(KUBECTL_CREATE_SERVICEACCOUNT))).toEqual({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "deployer", namespace: "ci" },
    });
    expect(decodeProtobufObject(bytes(KUBECTL_CREATE_TOKEN))).toEqual({ apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", metadata: {}, spec: {} });
    expect(decodeProtobufObject(bytes(KUBECTL_CREATE_TOKEN_ASKING))).toEqual({
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      metadata: {},
      spec: { audiences: ["vault", "ci.example"], expirationSeconds: 600 },
    });
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

  it("decodes a core/v1 Event as client-go's protobuf clients send it (times, MicroTimes, series; zero fields dropped)", () => {
    // A minimal protobuf writer: field n as a length-delimited message or string, or a varint.
    const varint = (v: number) => {
      const out: number[] = [];
      while (v >= 0x80) {
        out.push((v & 0x7f) | 0x80);
        v = Math.floor(v / 128);
      }
      return [...out, v];
    };
    const msg = (n: number, body: number[]) => [...varint((n << 3) | 2), ...varint(body.length), ...body];
    const s = (n: number, v: string) => msg(n, [...new TextEncoder().encode(v)]);
    const int = (n: number, v: number) => [...varint(n << 3), ...varint(v)];
    const t = Date.parse("2026-11-26T10:00:00Z") / 1000;
    const event = [
      ...msg(1, [...s(1, "p.1"), ...s(3, "apps")]),
      ...msg(2, [...s(1, "Pod"), ...s(2, "apps"), ...s(3, "p"), ...s(4, "u-1")]),
      ...s(3, "Started"),
      ...s(4, "started it"),
      ...msg(5, [...s(1, "kubelet")]),
      ...msg(6, [...int(1, t)]),
      ...msg(7, [...int(1, t + 60)]),
      ...int(8, 2),
      ...s(9, "Normal"),
      ...msg(10, [...int(1, t), ...int(2, 123_456_000)]),
      ...msg(11, [...int(1, 2), ...msg(2, [...int(1, t + 60)])]),
      ...s(12, "Start"),
      ...msg(13, []),
      ...s(14, "kubelet"),
      ...s(15, "node-1"),
    ];
    const body = [0x6b, 0x38, 0x73, 0x00, ...msg(1, [...s(1, "v1"), ...s(2, "Event")]), ...msg(2, event)];
    expect(decodesProtobuf("v1", "Event")).toBe(true);
    expect(decodeProtobufObject(Uint8Array.from(body))).toEqual({
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: "p.1", namespace: "apps" },
      involvedObject: { kind: "Pod", namespace: "apps", name: "p", uid: "u-1" },
      reason: "Started",
      message: "started it",
      source: { component: "kubelet" },
      firstTimestamp: "2026-11-26T10:00:00Z",
      lastTimestamp: "2026-11-26T10:01:00Z",
      count: 2,
      type: "Normal",
      eventTime: "2026-11-26T10:00:00.123456Z",
      series: { count: 2, lastObservedTime: "2026-11-26T10:01:00.000000Z" },
      action: "Start",
      related: {},
      reportingComponent: "kubelet",
      reportingInstance: "node-1",
    });
  });
});

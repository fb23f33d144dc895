/**
 * The text exposition format (src/metrics/exposition.ts) read back by Prometheus' own parser
 * (test/prometheus-parser.ts): escaping, histograms (cumulative buckets, +Inf, _sum, _count),
 * counters and gauges of every family /metrics shows.
 */
import { describe, expect, it } from "vitest";
import { addValues, escapeLabelValue, labelsPart, observation, renderExposition, type Cell } from "../../src/metrics/exposition.ts";
import { ALL_FAMILIES, COUNTED, GAUGES } from "../../src/metrics/families.ts";
import { parsePrometheus, sampleSum } from "../prometheus-parser.ts";

describe("text exposition format 0.0.4", () => {
  it("is read back by Prometheus' parser with the same values and labels, awkward label values included", async () => {
    const odd = 'a "quoted" \\ back\nslash';
    const requests = COUNTED.apiRequests;
    const cells: Cell[] = [
      { family: requests.name, labels: labelsPart(requests.labels, { verb: "LIST", resource: "managedclusters", code: 200 }), values: [3] },
      { family: requests.name, labels: labelsPart(requests.labels, { verb: "GET", resource: odd, code: 404 }), values: [1] },
      { family: GAUGES.clusterCount.name, labels: "", values: [2000] },
      {
        family: GAUGES.clustersByCondition.name,
        labels: labelsPart(GAUGES.clustersByCondition.labels, { condition: "ManagedClusterConditionAvailable", status: "True" }),
        values: [1999],
      },
      { family: COUNTED.leasesExpired.name, labels: "", values: [0.5e-7] },
      { family: "not_a_family", labels: "", values: [1] },
    ];
    const family = COUNTED.apiRequestDuration;
    const h = [0.003, 0.02, 0.02, 0.7, 99].reduce<number[]>((acc, v) => addValues(acc, observation(family, v)), []);
    cells.push({ family: family.name, labels: labelsPart(family.labels, { verb: "LIST", resource: "managedclusters" }), values: h });
    const text = renderExposition(ALL_FAMILIES, cells);
    const parsed = await parsePrometheus(text);
    expect(parsed.map((f) => f.name)).toEqual([
      "apiserver_request",
      "apiserver_request_duration_seconds",
      "flotilla_cluster_leases_expired",
      "acm_managed_cluster_count",
      "flotilla_managed_clusters",
    ]);
    expect(parsed.find((f) => f.name === "apiserver_request")).toMatchObject({ type: "counter", help: requests.help });
    expect(sampleSum(parsed, "apiserver_request_total", { verb: "LIST", code: "200" })).toBe(3);
    expect(sampleSum(parsed, "apiserver_request_total", { resource: odd })).toBe(1);
    expect(sampleSum(parsed, "acm_managed_cluster_count")).toBe(2000);
    expect(sampleSum(parsed, "flotilla_managed_clusters", { status: "True" })).toBe(1999);
    expect(sampleSum(parsed, "flotilla_cluster_leases_expired_total")).toBe(0.5e-7);
    const hist = parsed.find((f) => f.name === family.name)!;
    expect(hist.type).toBe("histogram");
    const bucket = (le: string) => hist.samples.find((s) => s.name === `${family.name}_bucket` && s.labels.le === le)?.value;
    expect([bucket("0.005"), bucket("0.025"), bucket("0.6"), bucket("0.8"), bucket("60"), bucket("+Inf")]).toEqual([1, 3, 3, 4, 4, 5]);
    expect(sampleSum(parsed, `${family.name}_count`)).toBe(5);
    expect(sampleSum(parsed, `${family.name}_sum`)).toBeCloseTo(99.743, 6);
    // Buckets never decrease, and +Inf equals _count.
    const values = hist.samples.filter((s) => s.name.endsWith("_bucket")).map((s) => s.value);
    expect(values).toEqual([...values].sort((a, b) => a - b));
  });

  it("gives one HELP and TYPE line per family, in the order the families are listed, and nothing for an empty family", () => {
    const text = renderExposition(ALL_FAMILIES, [
      { family: GAUGES.workCount.name, labels: "", values: [0] },
      { family: COUNTED.registrations.name, labels: labelsPart(COUNTED.registrations.labels, { code: 201 }), values: [2] },
    ]);
    expect(text).toBe(
      [
        `# HELP flotilla_cluster_registrations_total ${COUNTED.registrations.help}`,
        "# TYPE flotilla_cluster_registrations_total counter",
        'flotilla_cluster_registrations_total{code="201"} 2',
        `# HELP acm_manifestwork_count ${GAUGES.workCount.help}`,
        "# TYPE acm_manifestwork_count gauge",
        "acm_manifestwork_count 0",
        "",
      ].join("\n"),
    );
    expect(renderExposition(ALL_FAMILIES, [])).toBe("");
  });

  it("names every family as Prometheus allows, each once", () => {
    const names = ALL_FAMILIES.map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
    for (const f of ALL_FAMILIES) {
      expect(f.name).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/);
      for (const l of f.labels) expect(l).toMatch(/^[a-zA-Z_][a-zA-Z0-9_]*$/);
      if (f.type === "counter") expect(f.name).toMatch(/_total$/);
      if (f.type === "histogram") expect(f.buckets!.length).toBeGreaterThan(0);
    }
  });

  it("escapes a label value only where it must, as the three replacements did", () => {
    const plain = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
    for (const v of ["", "GET", "apps", 'a "q"', "back\\slash", "line\nfeed", 'all \\ " \n of them', "\\\\"]) expect(escapeLabelValue(v)).toBe(plain(v));
  });
});

/**
 * The Deployment the benchmarks apply to the hub (bench/kinds.ts, bench/apply-requests.ts): one
 * container with ports, env (a fieldRef among them), resources and a readiness probe, so that a
 * create runs the kind's whole schema check and defaults, as a real app's Deployment does.
 */
export const benchDeployment = (name: string, ns?: string) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name, ...(ns ? { namespace: ns } : {}), labels: { app: name } },
  spec: {
    replicas: 3,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: {
        containers: [
          {
            name: "web",
            image: "nginx:1.27",
            ports: [{ containerPort: 80, name: "http" }],
            env: [
              { name: "MODE", value: "production" },
              { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
            ],
            resources: { requests: { cpu: "100m", memory: "64Mi" }, limits: { cpu: "500m", memory: "256Mi" } },
            readinessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 5 },
          },
        ],
      },
    },
  },
});

declare namespace Cloudflare {
  interface Env {
    DB: D1Database;
    CLUSTERS: DurableObjectNamespace<import("../../durable-objects/cluster.ts").ClusterObject>;
    SCHEDULER: DurableObjectNamespace<import("../../durable-objects/scheduler.ts").SchedulerObject>;
    REPLICASETS: DurableObjectNamespace<import("../../durable-objects/replicaset.ts").ReplicaSetObject>;
    METRICS: DurableObjectNamespace<import("../../durable-objects/metrics.ts").MetricsObject>;
    FLOTILLA_ADMIN_TOKEN: string;
    FLOTILLA_ENCRYPTION_KEYS: string;
    LEASE_GRACE_MULTIPLIER: string;
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
  }
}
declare namespace Cloudflare {
  interface GlobalProps {
    mainModule: typeof import("../../src/index.ts");
    durableNamespaces: "ClusterObject" | "SchedulerObject" | "ReplicaSetObject" | "MetricsObject";
  }
}

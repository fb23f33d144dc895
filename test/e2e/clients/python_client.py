"""Drives the hub with the Python Kubernetes client Debian ships (python3-kubernetes).

Run as: python3 python_client.py <scenario> with HUB (https URL), TOKEN (admin bearer token) and
CA (the hub's CA file) in the environment. Prints one JSON object: what the client got.
"""
import json
import os
import sys
import threading
import time

from kubernetes import client, dynamic, watch

GROUP = "cluster.open-cluster-management.io"


def api_client():
    cfg = client.Configuration()
    cfg.host = os.environ["HUB"]
    cfg.api_key = {"authorization": os.environ["TOKEN"]}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    cfg.ssl_ca_cert = os.environ["CA"]
    return client.ApiClient(cfg)


def discovery():
    api = api_client()
    version = client.VersionApi(api).get_code()
    groups = client.ApisApi(api).get_api_versions()
    core = client.CoreApi(api).get_api_versions()
    return {
        "gitVersion": version.git_version,
        "groups": sorted(g.name for g in groups.groups),
        "core": core.versions,
    }


def crud():
    api = api_client()
    co = client.CustomObjectsApi(api)
    ns = "py"
    out = {}
    # As a user does first: the namespace the objects go in.
    created = client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    out["namespace"] = {"phase": created.status.phase, "finalizers": created.spec.finalizers}
    for name, tier in (("p1", "web"), ("p2", "web"), ("p3", "db")):
        body = {"apiVersion": f"{GROUP}/v1beta1", "kind": "Placement", "metadata": {"name": name, "labels": {"tier": tier}}, "spec": {"numberOfClusters": 1}}
        co.create_namespaced_custom_object(GROUP, "v1beta1", ns, "placements", body)
    listed = co.list_namespaced_custom_object(GROUP, "v1beta1", ns, "placements", label_selector="tier=web")
    out["selected"] = sorted(o["metadata"]["name"] for o in listed["items"])
    merged = co.patch_namespaced_custom_object(GROUP, "v1beta1", ns, "placements", "p1", {"spec": {"numberOfClusters": 2}})
    out["merged"] = merged["spec"]["numberOfClusters"]
    # JSON patch: this client's CustomObjectsApi sends only merge patches; the dynamic client takes a content type.
    placements = dynamic.DynamicClient(api).resources.get(api_version=f"{GROUP}/v1beta1", kind="Placement")
    ops = [{"op": "test", "path": "/spec/numberOfClusters", "value": 2}, {"op": "replace", "path": "/spec/numberOfClusters", "value": 3}]
    patched = placements.patch(name="p1", namespace=ns, body=ops, content_type="application/json-patch+json")
    out["jsonPatched"] = patched.spec.numberOfClusters
    co.delete_namespaced_custom_object(GROUP, "v1beta1", ns, "placements", "p3")
    # Delete of a collection by label (this client's CustomObjectsApi takes no selector there; the dynamic client does).
    gone = placements.delete(namespace=ns, label_selector="tier=web")
    out["collectionDeleted"] = sorted(o.metadata.name for o in gone.items)
    out["left"] = sorted(o["metadata"]["name"] for o in co.list_namespaced_custom_object(GROUP, "v1beta1", ns, "placements")["items"])
    return out


def dynamic_list():
    dyn = dynamic.DynamicClient(api_client())
    mcl = dyn.resources.get(api_version=f"{GROUP}/v1", kind="ManagedCluster")
    for name, env in (("dyn1", "prod"), ("dyn2", "dev")):
        mcl.create(body={"apiVersion": f"{GROUP}/v1", "kind": "ManagedCluster", "metadata": {"name": name, "labels": {"env": env, "dyn": "yes"}}})
    selected = mcl.get(label_selector="dyn=yes,env in (prod)")
    return {"selected": [o.metadata.name for o in selected.items], "kind": selected.kind}


def watch_changes():
    co = client.CustomObjectsApi(api_client())
    seen = []
    started = threading.Event()

    def run():
        w = watch.Watch()
        started.set()
        for event in w.stream(co.list_cluster_custom_object, GROUP, "v1", "managedclusters", label_selector="pywatch=yes", timeout_seconds=20):
            seen.append(f"{event['type']}:{event['object']['metadata']['name']}")
            if len(seen) >= 4:
                w.stop()

    t = threading.Thread(target=run)
    t.start()
    started.wait()
    time.sleep(0.5)
    writer = client.CustomObjectsApi(api_client())
    body = {"apiVersion": f"{GROUP}/v1", "kind": "ManagedCluster", "metadata": {"name": "pyw1", "labels": {"pywatch": "yes"}}}
    writer.create_cluster_custom_object(GROUP, "v1", "managedclusters", body)
    writer.patch_cluster_custom_object(GROUP, "v1", "managedclusters", "pyw1", {"metadata": {"labels": {"pywatch": "yes", "step": "2"}}})
    body2 = {"apiVersion": f"{GROUP}/v1", "kind": "ManagedCluster", "metadata": {"name": "pyw2", "labels": {"pywatch": "yes"}}}
    writer.create_cluster_custom_object(GROUP, "v1", "managedclusters", body2)
    writer.delete_cluster_custom_object(GROUP, "v1", "managedclusters", "pyw1")
    t.join(30)
    return {"events": seen}


def future():
    """A watch and a list from a resourceVersion the hub has not reached (a million ahead): what
    the client raises for each, as it would for kube-apiserver's 504 Too large resource version."""
    co = client.CustomObjectsApi(api_client())
    current = co.list_cluster_custom_object(GROUP, "v1", "managedclusters", limit=1)["metadata"]["resourceVersion"]
    ahead = str(int(current) + 1000000)
    out = {"ahead": ahead}
    try:
        for _ in watch.Watch().stream(co.list_cluster_custom_object, GROUP, "v1", "managedclusters", resource_version=ahead, timeout_seconds=30):
            pass
        out["watch"] = "ended without an error"
    except client.ApiException as e:
        out["watch"] = {"status": e.status, "reason": e.reason}
    try:
        co.list_cluster_custom_object(GROUP, "v1", "managedclusters", resource_version=ahead)
        out["list"] = "answered"
    except client.ApiException as e:
        status = json.loads(e.body)
        out["list"] = {"status": e.status, "reason": status["reason"], "causes": [c["reason"] for c in status["details"]["causes"]], "retryAfter": e.headers.get("Retry-After")}
    return out


def follow():
    """Follows ManagedClusters labelled follow=yes as a reflector does: list, then watch from the
    list's resourceVersion; a broken watch resumes from the last version seen, a 410 lists again.
    Prints one JSON line per change it learns: {"name": ..., "step": ... or null when deleted}.
    Runs until stdin closes."""
    co = client.CustomObjectsApi(api_client())
    state = {}

    def learn(name, obj):
        step = None if obj is None else obj["metadata"].get("labels", {}).get("step")
        if state.get(name, "absent") != step:
            state[name] = step
            print(json.dumps({"name": name, "step": step}), flush=True)

    def relist():
        while True:
            try:
                listed = co.list_cluster_custom_object(GROUP, "v1", "managedclusters", label_selector="follow=yes")
                break
            except Exception:  # the hub is restarting
                time.sleep(0.3)
        names = set()
        for o in listed["items"]:
            names.add(o["metadata"]["name"])
            learn(o["metadata"]["name"], o)
        for name in list(state):
            if name not in names and state[name] is not None:
                learn(name, None)
        return listed["metadata"]["resourceVersion"]

    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    rv = relist()
    while not done.is_set():
        try:
            w = watch.Watch()
            for event in w.stream(co.list_cluster_custom_object, GROUP, "v1", "managedclusters", label_selector="follow=yes", resource_version=rv, timeout_seconds=5):
                obj = event["object"]
                if event["type"] == "ERROR":
                    raise client.ApiException(status=obj.get("code", 500))
                rv = obj["metadata"]["resourceVersion"]
                if event["type"] == "BOOKMARK":
                    continue
                learn(obj["metadata"]["name"], None if event["type"] == "DELETED" else obj)
        except client.ApiException as e:
            if e.status == 410:
                rv = relist()
            else:
                time.sleep(0.3)
        except Exception:  # the connection broke: resume from the last version seen
            time.sleep(0.3)
    return {"followed": len(state)}


if __name__ == "__main__":
    scenario = {"discovery": discovery, "crud": crud, "dynamic": dynamic_list, "watch": watch_changes, "future": future, "follow": follow}[sys.argv[1]]
    print(json.dumps(scenario()))

-- Namespaces become objects (core v1 `namespaces`, src/kinds/namespace.ts), and a namespaced
-- object may be created only in one that exists (NamespaceLifecycle). So that a hub upgraded
-- from before answers as it did, this creates, as Active namespaces: the built-in ones
-- (`default`, `kube-system`, `kube-public`, `kube-node-lease`), each ManagedCluster's (labelled
-- `open-cluster-management.io/cluster-name`, as OCM's registration controller makes it), and
-- every namespace that already holds an object. Each gets its own resourceVersion after the
-- counter's value, a random UUID, and its labels in the label index.
INSERT INTO `counters` (`id`, `value`) VALUES (1, 0) ON CONFLICT (`id`) DO NOTHING;
--> statement-breakpoint
INSERT OR IGNORE INTO `objects` (`resource`, `namespace`, `name`, `uid`, `resource_version`, `body`)
SELECT '/namespaces', '', n.name, n.uid,
  (SELECT `value` FROM `counters` WHERE `id` = 1) + row_number() OVER (ORDER BY n.name),
  json_object(
    'apiVersion', 'v1',
    'kind', 'Namespace',
    'metadata', json_object(
      'name', n.name,
      'uid', n.uid,
      'creationTimestamp', strftime('%Y-%m-%dT%H:%M:%SZ', 'now'),
      'generation', 1,
      'labels', CASE WHEN n.cluster THEN json_object('kubernetes.io/metadata.name', n.name, 'open-cluster-management.io/cluster-name', n.name)
                     ELSE json_object('kubernetes.io/metadata.name', n.name) END
    ),
    'spec', json_object('finalizers', json_array('kubernetes')),
    'status', json_object('phase', 'Active')
  )
FROM (
  SELECT m.name, max(m.cluster) AS cluster,
    lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' ||
      substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))) AS uid
  FROM (
    SELECT `value` AS name, 0 AS cluster FROM json_each('["default","kube-system","kube-public","kube-node-lease"]')
    UNION ALL SELECT `name`, 1 FROM `objects` WHERE `resource` = 'cluster.open-cluster-management.io/managedclusters'
    UNION ALL SELECT DISTINCT `namespace`, 0 FROM `objects` WHERE `namespace` <> ''
  ) m
  GROUP BY m.name
) n;
--> statement-breakpoint
UPDATE `counters` SET `value` = (SELECT max(`resource_version`) FROM `objects`) WHERE `id` = 1 AND `value` < (SELECT max(`resource_version`) FROM `objects`);
--> statement-breakpoint
INSERT OR IGNORE INTO `labels` (`resource`, `namespace`, `name`, `key`, `value`)
SELECT o.resource, o.namespace, o.name, l.key, l.value
FROM `objects` o, json_each(o.body, '$.metadata.labels') l
WHERE o.resource = '/namespaces' AND l.type = 'text';

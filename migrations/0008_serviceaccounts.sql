-- Secrets the hub generates for itself and keeps across restarts, one row each, the value sealed
-- with the Secrets' encryption keys (src/k8s/encryption.ts): the ServiceAccount token signing key
-- when FLOTILLA_SERVICE_ACCOUNT_KEYS is not set (src/auth/serviceaccounts.ts). `created_at` is
-- epoch milliseconds.
CREATE TABLE IF NOT EXISTS `hub_secrets` (
  `name` text PRIMARY KEY NOT NULL,
  `value` text NOT NULL,
  `created_at` integer NOT NULL
);
--> statement-breakpoint
-- ServiceAccounts become objects (core v1 `serviceaccounts`, src/kinds/serviceaccount.ts), and
-- every namespace has its `default` one, as kube-controller-manager's serviceaccounts controller
-- makes it (src/auth/serviceaccounts.ts creates it with each new namespace). So that the
-- namespaces a hub had before get theirs: each namespace not being deleted gets a `default`
-- ServiceAccount, with its own resourceVersion after the counter's value and a random UUID.
INSERT INTO `counters` (`id`, `value`) VALUES (1, 0) ON CONFLICT (`id`) DO NOTHING;
--> statement-breakpoint
INSERT OR IGNORE INTO `objects` (`resource`, `namespace`, `name`, `uid`, `resource_version`, `body`)
SELECT '/serviceaccounts', n.name, 'default', n.uid,
  (SELECT `value` FROM `counters` WHERE `id` = 1) + row_number() OVER (ORDER BY n.name),
  json_object(
    'apiVersion', 'v1',
    'kind', 'ServiceAccount',
    'metadata', json_object(
      'name', 'default',
      'namespace', n.name,
      'uid', n.uid,
      'creationTimestamp', strftime('%Y-%m-%dT%H:%M:%SZ', 'now'),
      'generation', 1
    )
  )
FROM (
  SELECT o.name,
    lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' ||
      substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))) AS uid
  FROM `objects` o
  WHERE o.resource = '/namespaces' AND o.namespace = ''
    AND json_extract(o.body, '$.metadata.deletionTimestamp') IS NULL
    AND NOT EXISTS (SELECT 1 FROM `objects` s WHERE s.resource = '/serviceaccounts' AND s.namespace = o.name AND s.name = 'default')
) n;
--> statement-breakpoint
UPDATE `counters` SET `value` = (SELECT max(`resource_version`) FROM `objects`) WHERE `id` = 1 AND `value` < (SELECT max(`resource_version`) FROM `objects`);

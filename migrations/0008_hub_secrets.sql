-- Secrets the hub generates for itself and keeps across restarts, one row each, the value sealed
-- with the Secrets' encryption keys (src/k8s/encryption.ts): the ServiceAccount token signing key
-- when FLOTILLA_SERVICE_ACCOUNT_KEYS is not set (src/auth/serviceaccounts.ts). `created_at` is
-- epoch milliseconds.
CREATE TABLE IF NOT EXISTS `hub_secrets` (
  `name` text PRIMARY KEY NOT NULL,
  `value` text NOT NULL,
  `created_at` integer NOT NULL
);

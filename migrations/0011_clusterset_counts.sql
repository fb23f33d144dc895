-- Each ManagedClusterSet's member count (src/clusterprofile/set-counts.ts), kept in the batch of
-- every write that changes a cluster's membership, so that a cluster's change costs one row per
-- set instead of a COUNT over the set's members.
CREATE TABLE `clusterset_counts` (
	`name` text PRIMARY KEY NOT NULL,
	`requirements` text NOT NULL,
	`clusters` integer NOT NULL,
	`recount` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
-- Existing sets: their selector as requirements (as src/clusterprofile/set-counts.ts
-- `setRequirements` writes them: an ExclusiveClusterSetLabel set selects its clusterset label;
-- a LabelSelector set its matchLabels and matchExpressions; a null labelSelector nothing).
-- `recount` = 1: the release before this one may still write clusters between this migration
-- and the deploy of the code that keeps the counts, so that code counts each such set once
-- more, in one statement, before it first uses the row.
INSERT INTO `clusterset_counts` (`name`, `requirements`, `clusters`, `recount`)
SELECT s.name,
	CASE
		WHEN coalesce(json_extract(s.body, '$.spec.clusterSelector.selectorType'), 'ExclusiveClusterSetLabel') = 'ExclusiveClusterSetLabel'
			THEN json_array(json_object('k', 'cluster.open-cluster-management.io/clusterset', 'o', 'in', 'v', json_array(s.name)))
		WHEN json_type(s.body, '$.spec.clusterSelector.labelSelector') IS NULL OR json_type(s.body, '$.spec.clusterSelector.labelSelector') = 'null'
			THEN json_array(json_object('o', 'none'))
		ELSE (
			SELECT coalesce(json_group_array(json(r)), '[]') FROM (
				SELECT json_object('k', m.key, 'o', 'in', 'v', json_array(m.value)) AS r
				FROM json_each(s.body, '$.spec.clusterSelector.labelSelector.matchLabels') m
				UNION ALL
				SELECT json_object('k', json_extract(e.value, '$.key'),
					'o', CASE json_extract(e.value, '$.operator') WHEN 'In' THEN 'in' WHEN 'NotIn' THEN 'notin' WHEN 'Exists' THEN 'exists' WHEN 'DoesNotExist' THEN '!' ELSE 'none' END,
					'v', coalesce(json_extract(e.value, '$.values'), json_array()))
				FROM json_each(s.body, '$.spec.clusterSelector.labelSelector.matchExpressions') e
			)
		)
	END,
	0,
	1
FROM `objects` s
WHERE s.resource = 'cluster.open-cluster-management.io/managedclustersets' AND s.namespace = '';
--> statement-breakpoint
-- Their counts, from the clusters' label index rows.
UPDATE `clusterset_counts` SET `clusters` = (
	SELECT count(*) FROM `objects` o
	WHERE o.resource = 'cluster.open-cluster-management.io/managedclusters' AND o.namespace = ''
	AND NOT EXISTS (
		SELECT 1 FROM json_each(`clusterset_counts`.`requirements`) r
		WHERE CASE json_extract(r.value, '$.o')
			WHEN 'in' THEN NOT EXISTS (SELECT 1 FROM `labels` l WHERE l.resource = o.resource AND l.namespace = '' AND l.name = o.name AND l.key = json_extract(r.value, '$.k') AND l.value IN (SELECT v.value FROM json_each(r.value, '$.v') v))
			WHEN 'notin' THEN EXISTS (SELECT 1 FROM `labels` l WHERE l.resource = o.resource AND l.namespace = '' AND l.name = o.name AND l.key = json_extract(r.value, '$.k') AND l.value IN (SELECT v.value FROM json_each(r.value, '$.v') v))
			WHEN 'exists' THEN NOT EXISTS (SELECT 1 FROM `labels` l WHERE l.resource = o.resource AND l.namespace = '' AND l.name = o.name AND l.key = json_extract(r.value, '$.k'))
			WHEN '!' THEN EXISTS (SELECT 1 FROM `labels` l WHERE l.resource = o.resource AND l.namespace = '' AND l.name = o.name AND l.key = json_extract(r.value, '$.k'))
			ELSE 1
		END
	)
);

-- The target rows as they are in the data (every column), in id order, for the result and
-- per-group summaries. Rows chosen by id end in a LIMIT, as in targets.sql.
SELECT {id} AS __cohort_id, {columns}
FROM {source}
WHERE {membership}
ORDER BY {id}{limit}

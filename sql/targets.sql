-- The targets, in id order: the rows whose decisions are explained.
SELECT *
FROM {subjects}
WHERE {condition}
ORDER BY __cohort_id

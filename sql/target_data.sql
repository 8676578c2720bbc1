-- The target rows as they are in the data (every column), for the result and per-group summaries.
SELECT * EXCLUDE (__cohort_row)
FROM (SELECT row_number() OVER () - 1 AS __cohort_row, * FROM {source})
WHERE __cohort_row IN (SELECT __cohort_row FROM {targets})
ORDER BY __cohort_row

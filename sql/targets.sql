-- The targets, in table order: the rows whose decisions are explained.
SELECT __cohort_row, __cohort_id, {predictors}, __cohort_y
FROM {subjects}
WHERE {condition}
ORDER BY __cohort_row

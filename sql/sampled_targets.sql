-- A random sample of targets, drawn in Python from the row positions 0 .. n-1 with the caller's seed.
SELECT *
FROM {subjects}
WHERE __cohort_row IN (SELECT row FROM {sample})
ORDER BY __cohort_row

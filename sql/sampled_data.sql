-- The data's own columns (as they are) of about {fraction} of the subject rows, each kept or not on
-- its own hash exactly as in sampled_rows.sql (every row when {fraction} is 1), in id order: what a
-- check of the data as a whole reads, in one scan of the data.
SELECT {columns}
FROM {subjects}
WHERE {kept}
ORDER BY __cohort_id

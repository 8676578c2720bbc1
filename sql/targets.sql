-- The targets, in id order: the rows whose decisions are explained, with their weight under every
-- weighting (__cohort_w0, __cohort_w1, ...: see weighted_subjects.sql). {limit} is empty, or LIMIT
-- the number of ids asked for when the rows are chosen by id (see queries/targets.py, top_rows).
SELECT *, {weights}
FROM {subjects}
WHERE {condition}
ORDER BY __cohort_id{limit}

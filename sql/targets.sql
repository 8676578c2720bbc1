-- The targets, in id order: the rows whose decisions are explained, with their weight under every
-- weighting (__cohort_w0, __cohort_w1, ...: see weighted_subjects.sql). Rows chosen by id end in a
-- LIMIT of the number of ids asked for (see queries/targets.py, top_rows).
SELECT *, {weights}
FROM {subjects}
WHERE {condition}
ORDER BY __cohort_id{limit}

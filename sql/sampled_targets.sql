-- A random sample of {size} targets among the rows that satisfy the condition, the same on every
-- engine: rows ranked by the md5 hash of the seed and their id, the first {size} kept, in id order,
-- with their weight under every weighting (see weighted_subjects.sql).
SELECT *, {weights}
FROM (
    SELECT *
    FROM {subjects}
    WHERE {condition}
    ORDER BY md5({seed} || CAST(__cohort_id AS {text})), __cohort_id
    LIMIT {size}
) AS sample
ORDER BY __cohort_id

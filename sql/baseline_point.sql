-- The mean baseline of baseline Shapley, as the data hold it and as the similarity tests compare it:
-- each numeric predictor's mean over the subjects, each other predictor's most frequent value.
WITH means AS (
    SELECT count(*) AS __cohort_rows{means}
    FROM {source}
),
point AS (
    SELECT {values}
    FROM means
)
SELECT *, {prepared}
FROM point

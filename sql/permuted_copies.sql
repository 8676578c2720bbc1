-- The null reference's copies of predictors, each with its values permuted across the subjects:
-- copy b of a predictor, at the row that is r-th in id order, holds the value of the row that is
-- r-th in the order of md5('<seed>:null:<b>:' || id) (then id). One permutation per copy, shared by
-- every predictor copied (so a group's members move together); the same draws on every engine.
WITH positions AS (
    SELECT __cohort_id, row_number() OVER (ORDER BY __cohort_id) AS __cohort_position
    FROM {subjects}
),
drawn AS (
    SELECT
        copies.__cohort_copy,
        {donor_columns},
        row_number() OVER (
            PARTITION BY copies.__cohort_copy
            ORDER BY md5({seed} || CAST(copies.__cohort_copy AS {text}) || ':' || CAST(donor.__cohort_id AS {text})),
                donor.__cohort_id
        ) AS __cohort_position
    FROM {subjects} AS donor
    CROSS JOIN (VALUES {copy_numbers}) AS copies(__cohort_copy)
)
SELECT subject.*, {copy_columns}
FROM {subjects} AS subject
JOIN positions AS own ON own.__cohort_id = subject.__cohort_id
{copy_joins}

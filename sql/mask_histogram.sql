-- DESIGN §2 step 1, the only step that touches every subject.
-- For every target t (one row of the batch) and subject s, the similarity mask
--     m = sum_j z_tj(x_sj) << j        (split into BIGINT words of 63 predictors when d > 63)
-- then one row per (target, mask): how many subjects have that mask and the sum of their y.
-- Subjects with identical predictors arrive collapsed, with their count and sum of y.
-- The cohort of predictor set u is every subject whose mask contains u.
SELECT
    t.__cohort_batch AS target,
    {masks},
    CAST({count} AS BIGINT) AS subjects,
    sum(s.__cohort_sum) AS sum_y
FROM {subjects} AS s
CROSS JOIN {targets} AS t
GROUP BY {ordinals}

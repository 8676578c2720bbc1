-- DESIGN §2 step 1, the only step that touches all n subjects.
-- For every target t (one row of the batch) and subject s, the similarity mask
--     m = sum_j z_tj(x_sj) << j
-- then one row per (target, mask): how many subjects have that mask and the sum of their y.
-- The cohort of predictor set u is every subject whose mask contains u.
SELECT
    t.__cohort_batch AS target,
    {mask} AS mask,
    count(*) AS subjects,
    sum(s.__cohort_y) AS sum_y
FROM {subjects} AS s
CROSS JOIN {targets} AS t
GROUP BY ALL

-- The pairwise path (docs/design.md §2), the only step that touches every subject.
-- For every target t (one row of the batch) and subject s, the similarity mask
--     m = sum_j z_tj(x_sj) << j        (split into BIGINT words of 63 predictors when d > 63)
-- then one row per (target, mask): the subjects' weight under every weighting (w0: their number
-- when unweighted) and their weighted sums of every outcome (s<k>_<b>, see cohortsql/measures.py).
-- Subjects with identical predictors arrive collapsed, with their sums.
-- The cohort of predictor set u is every subject whose mask contains u.
SELECT
    t.__cohort_batch AS target,
    {masks},
    {sums}
FROM {subjects} AS s
CROSS JOIN {targets} AS t
GROUP BY {ordinals}

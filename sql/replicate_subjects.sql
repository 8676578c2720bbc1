-- The subjects under groups of four bootstrap replicates, for the mask histogram of many replicates
-- (cohortsql/run/pairwise.py): one row per subject (or, collapsed, per distinct predictor row) and
-- group g, with the sums of replicate_cells.sql: own_w and own_s<k> the data's own weighting (in
-- group 0 only), w<r> and s<k>_<r> replicate b = 4g + 1 + r (draws as in replicate_draws.sql). Its
-- width does not grow with B, its rows do: the histogram groups by g as well as by target and mask.
SELECT
    {columns},
    s.__cohort_group AS __cohort_draw_group,
    {measures}
FROM (
    SELECT *, {hash} AS __cohort_hash
    FROM {subjects}
    CROSS JOIN {groups} AS g
) AS s
{grouping}

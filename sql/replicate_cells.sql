-- The finest cells of equivalence similarities (see equivalence_cells.sql) under every bootstrap
-- replicate, one row per cell and group g of four replicates b = 4g + 1 .. 4g + 4 (draws as in
-- replicate_draws.sql, from the hash of each subject and group): w<r> and s<k>_<r> sum replicate
-- 4g + 1 + r, own_w and own_s<k> the data's own weighting (in group 0 only). The query's size does
-- not grow with B.
SELECT
    {keys},
    s.__cohort_group AS draw_group,
    {sums}
FROM (
    SELECT *, {hash} AS __cohort_hash
    FROM {subjects}
    CROSS JOIN {groups} AS g
) AS s
GROUP BY {ordinals}

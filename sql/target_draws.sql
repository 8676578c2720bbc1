-- The targets' Bayesian-bootstrap draws in long form: one row per target and group g of four
-- replicates b = 4g + 1 .. 4g + 4, the draws e_b of replicate_draws.sql (the same md5 of the seed,
-- the group and the id), so that the query's width does not grow with B. Targets are numbered in id
-- order, the order in which they were read; rows come in any order.
SELECT
    position,
    draw_group,
    {draws}
FROM (
    SELECT t.__cohort_position AS position, g.__cohort_group AS draw_group, {hash} AS __cohort_hash
    FROM (
        SELECT __cohort_id, row_number() OVER (ORDER BY __cohort_id) - 1 AS __cohort_position
        FROM {targets}
    ) AS t
    CROSS JOIN {groups} AS g
) AS hashed

-- The variance game of Shapley effects (docs/design.md §1): v_var(u) = the targets' weighted mean of
-- v_t(u)^2 (every target weighs 1 without case weights), as one game (target 0).
SELECT
    0 AS target,
    g.u,
    sum({weight} * g.v * g.v) / sum({weight}) AS v
FROM {games} AS g
JOIN {targets} AS t ON g.target = t.__cohort_batch
GROUP BY 1, 2

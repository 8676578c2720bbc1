-- The refinement curves of an attribution's order (the insertion and deletion tests of Hama, Mase &
-- Owen): each target carries its players' ranks r_j (1: the largest attribution). A subject is in the
-- cohort of the first m players (insertion) when every player it is not similar on ranks after m: its
-- smallest such rank (d + 1 when none) exceeds m; it is in the cohort of every player after the first
-- m (deletion) when its largest such rank (0 when none) is at most m. One row per (target, rank): the
-- subjects' weight and weighted sums of every outcome.
SELECT
    target,
    {rank} AS rank,
    {sums}
FROM (
    SELECT
        t.__cohort_batch AS target,
        {values},
        {ranks}
    FROM {subjects} AS s
    CROSS JOIN {targets} AS t
) AS pairs
GROUP BY 1, 2

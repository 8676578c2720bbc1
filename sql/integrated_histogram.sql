-- The integrated path (docs/design.md §2): integrated gradient cohort Shapley needs, per target, only
-- how many players each subject is not similar on. For every target t (one row of the batch) and
-- subject s, n_j = 1 when s is not similar to t on player j (else 0) and k = sum_j n_j; then one row
-- per (target, k): the subjects' weight and weighted sums of every measure (w<b>, s<k>_<b>, see
-- cohortsql/request/measures.py), and per player j the same over those not similar on j (<name>_p<j>).
-- At most d + 1 rows per target, whatever the subjects: O(n d) per target.
SELECT
    target,
    {k} AS k,
    {sums}
FROM (
    SELECT
        t.__cohort_batch AS target,
        {values},
        {flags}
    FROM {subjects} AS s
    CROSS JOIN {targets} AS t
) AS pairs
GROUP BY 1, 2

-- Equivalence similarities (exact, bins): every cohort C_{t,u} is the cell of t in the partition of the
-- subjects by their keys on u. This collapses the subjects into the cells of the finest partition
-- (all d keys) with their size and the sum of y - ybar; numpy then walks every subset u over these
-- cells (cohortsql/lattice.py): no n^2 join.
SELECT
    {keys},
    CAST(count(*) AS BIGINT) AS subjects,
    sum(s.__cohort_y - {mean}) AS centered_sum
FROM {subjects} AS s
GROUP BY {ordinals}

-- Equivalence similarities (exact, bins): every cohort C_{t,u} is the cell of t in the partition of the
-- subjects by their keys on u. This collapses the subjects into the cells of the finest partition
-- (all d keys) with their weights and weighted sums of y (as the histogram's, see mask_histogram.sql);
-- numpy then walks every subset u over these cells (cohortsql/lattice.py): no n^2 join.
SELECT
    {carried}{keys},
    {sums}
FROM {subjects} AS s
GROUP BY {ordinals}

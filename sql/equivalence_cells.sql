-- Equivalence similarities (exact, bins): every cohort C_{t,u} is the cell of t in the partition of the
-- subjects by their keys on u. This collapses the subjects into the cells of the finest partition
-- (all d keys) with their size and the sum of y - ybar, and gives each key a dense 0-based code.
-- numpy then walks every subset u over these cells (cohortsql/lattice.py): no n^2 join.
CREATE TEMP TABLE {cells} AS
SELECT
    row_number() OVER () - 1 AS __cohort_cell,
    {codes},
    *
FROM (
    SELECT
        {keys},
        count(*) AS subjects,
        sum(s.__cohort_y - {mean}) AS centered_sum
    FROM {subjects} AS s
    GROUP BY ALL
)

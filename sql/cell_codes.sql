-- The finest cells for the lattice walk: one code per key, the size and the centred sum of y.
SELECT {codes}, subjects, centered_sum
FROM {cells}
ORDER BY __cohort_cell

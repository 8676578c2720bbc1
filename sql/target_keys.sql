-- The equivalence keys of each target, in the batch's order, to find its cell.
SELECT {keys}
FROM {targets} AS t
ORDER BY t.__cohort_batch

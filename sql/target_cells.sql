-- The finest cell of every target (keys compared NULL-safely: NULL is similar to NULL only).
SELECT c.__cohort_cell AS cell
FROM {targets} AS t
JOIN {cells} AS c ON {matches}
ORDER BY t.__cohort_batch

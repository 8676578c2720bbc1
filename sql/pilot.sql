-- A pilot value of the explained column: any one finite value. Every later sum is of y - pilot, so
-- means, variances and cohort sums keep their digits when y carries a large offset (1e15 + small).
-- An integer column's pilot is read as it is, so that y - pilot is exact before it becomes a DOUBLE.
SELECT {value} AS pilot
FROM {source}
WHERE abs(CAST({prediction} AS DOUBLE)) < CAST('Infinity' AS DOUBLE)
LIMIT 1

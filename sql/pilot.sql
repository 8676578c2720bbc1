-- A pilot value of the explained column: any one finite value. Every later sum is of y - pilot, so
-- means, variances and cohort sums keep their digits when y carries a large offset (1e15 + small).
-- An integer column's pilot is read as it is, so that y - pilot is exact before it becomes a DOUBLE.
-- Beside it, the column's largest finite |y|: squares beyond a DOUBLE are refused before any sum of them.
SELECT
    {value} AS pilot,
    (SELECT max(abs(CAST({prediction} AS DOUBLE))) FROM {source} AS every_row WHERE {finite}) AS largest
FROM {source}
WHERE {finite}
LIMIT 1

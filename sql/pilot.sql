-- A pilot value of the explained column: any one finite value. Every later sum is of y - pilot, so
-- means, variances and cohort sums keep their digits when y carries a large offset (1e15 + small).
-- An integer column's pilot is read as it is, so that y - pilot is exact before it becomes a DOUBLE.
-- Beside it, where an overflowing sum stops the query (PostgreSQL), the column's largest
-- finite |y| over every row, so that squares beyond a DOUBLE are refused before any sum of them;
-- elsewhere the statistics read it beside the sums, and the pilot reads one row.
SELECT
    {value} AS pilot{largest}
FROM {source}
WHERE {finite}
LIMIT 1

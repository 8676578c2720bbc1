-- Order statistics of one column for exact, linearly interpolated quantiles when memory is limited:
-- a sort (which spills to disk) instead of an aggregate that holds every value in memory. For each
-- probability p the rows at 0-based ranks floor((n - 1) p) and the next one are kept.
SELECT order_index, value, n
FROM (
    SELECT value, row_number() OVER (ORDER BY value) - 1 AS order_index, count(*) OVER () AS n
    FROM (SELECT {value} AS value FROM {source}) AS column_values
    WHERE value IS NOT NULL
) AS ranked
WHERE {ranks}
ORDER BY order_index

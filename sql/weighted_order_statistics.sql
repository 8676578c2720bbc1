-- Order statistics of one column under case weights, for linearly interpolated quantiles that read
-- a weight as a number of repetitions (an integer weight w is the row repeated w times). Rows sorted
-- by value occupy the positions [upto - weight, upto) of the repeated table; for each probability p
-- the rows holding positions floor((W - 1) p) and the next one are kept (W: the total weight).
SELECT value, upto - weight AS before, upto, total
FROM (
    SELECT
        value,
        weight,
        sum(weight) OVER (ORDER BY value ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
        sum(weight) OVER () AS total
    FROM (SELECT {value} AS value, CAST({weight} AS DOUBLE) AS weight FROM {source}) AS weighted
    WHERE value IS NOT NULL
) AS ranked
WHERE {positions}
ORDER BY value

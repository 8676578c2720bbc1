-- Every row's measures summed per value of one column (a protected attribute): its rows, and under
-- each weighting b (the case weights, then each bootstrap replicate, cohortsql/queries/measures.py)
-- the total weight W_b and the weighted sum S_b0 of the explained value. The audit's gaps over every
-- row, S_b0 / W_b of a group less that of all rows, and their replicates, come from these.
SELECT
    s.{level} AS level,
    count(*) AS row_count,
    {sums}
FROM (SELECT * FROM {subjects}) AS s
GROUP BY 1

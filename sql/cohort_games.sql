-- Every cohort's value from its sums (see superset_pass.sql): v(u) = S(u) / W(u) - S(0) / W(0), the
-- cohort's weighted mean of y minus the whole table's (the cohort of the empty set is every subject),
-- whatever constant y was centred on before it was summed; exactly 0 for the empty set.
SELECT
    g.target,
    g.u,
    CASE WHEN g.u = 0 THEN CAST(0 AS DOUBLE) ELSE g.s / g.w - e.s / e.w END AS v
FROM {lattice} AS g
JOIN {lattice} AS e ON e.target = g.target AND e.u = 0

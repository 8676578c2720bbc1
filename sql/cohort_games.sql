-- Every cohort's value from its sums (see superset_pass.sql): v(u) = S(u) / W(u), the cohort's
-- weighted mean of y - mean, i.e. its mean minus the whole-table mean; exactly 0 for the empty set,
-- whose cohort is every subject.
SELECT
    target,
    u,
    CASE WHEN u = 0 THEN CAST(0 AS DOUBLE) ELSE s / w END AS v
FROM {lattice}

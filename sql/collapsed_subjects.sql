-- Subjects with identical predictors are indistinguishable to every similarity test, so they are
-- collapsed into one row with their count and sum of y before the join with the targets.
SELECT {columns}, count(*) AS __cohort_count, sum(__cohort_y) AS __cohort_sum
FROM {subjects}
GROUP BY {ordinals}

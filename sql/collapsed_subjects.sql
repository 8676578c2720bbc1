-- Subjects with identical predictors are indistinguishable to every similarity test, so they are
-- collapsed into one row before the join with the targets, with the sums of what the histogram
-- sums over them (their weights and weighted outcomes, see weighted_subjects.sql).
SELECT {columns}, {sums}
FROM {subjects}
GROUP BY {ordinals}

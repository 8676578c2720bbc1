-- Every subject on its own, with count 1: used when sql: similarity predicates may read any column,
-- or when nearly every row is distinct (collapsing would cost more than it saves).
SELECT *, 1 AS __cohort_count, __cohort_y AS __cohort_sum
FROM {subjects}

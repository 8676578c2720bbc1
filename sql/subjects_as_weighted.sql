-- Every subject on its own, with count 1: used when sql: similarity predicates may read any column.
CREATE TEMP VIEW {weighted} AS
SELECT *, 1 AS __cohort_count, __cohort_y AS __cohort_sum
FROM {subjects}

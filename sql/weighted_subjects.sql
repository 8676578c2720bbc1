-- Every subject on its own with its weight under each weighting (cohortsql/measures.py):
-- __cohort_w0 (its case weight, or 1) and __cohort_w1, __cohort_w2, ... (its case weight times a
-- bootstrap replicate's draw). The histogram sums them, and their products with each outcome.
-- Used when sql: predicates may read any column, or when nearly every row is distinct (collapsing
-- would cost more than it saves).
SELECT *, {measures}
FROM {subjects}

-- Every subject on its own with what the histogram sums over it (cohortsql/measures.py): its weight
-- under each weighting, __cohort_w0 (its case weight, or 1) and __cohort_w1, __cohort_w2, ... (its
-- case weight times a bootstrap replicate's draw), and __cohort_s<k>_<b> = __cohort_w<b> * y_k.
-- Used when sql: predicates may read any column, or when nearly every row is distinct (collapsing
-- would cost more than it saves).
SELECT *, {measures}
FROM {subjects}

-- The subjects: every input row with its id, each explained value y_k - pilot_k as DOUBLE
-- (__cohort_y0, __cohort_y1, ...), its case weight (__cohort_weight, when the rows are weighted),
-- whether it is a target (when targets are chosen by a SQL predicate) and each predictor as the
-- similarity tests compare it (floats with NaN read as NULL, integers widened, dates and timestamps
-- as days); the data's own columns too, when sql: similarity predicates may read them or targets are
-- read with their data (whose columns then stand for the predictors that are a column as it is).
SELECT
    {id} AS __cohort_id,
    {values}{is_target} AS __cohort_target{predictors}{data_columns}
FROM {source}

-- The subjects: every input row with its id, the explained value y - pilot as DOUBLE, whether it is a
-- target (when targets are chosen by a SQL predicate) and each predictor as the similarity tests
-- compare it (floats with NaN read as NULL, integers widened, dates and timestamps as days); the
-- data's own columns too, only when sql: similarity predicates may read them.
SELECT
    {id} AS __cohort_id,
    CAST({prediction} AS DOUBLE) - {pilot} AS __cohort_y,
    {is_target} AS __cohort_target,
    {predictors}{data_columns}
FROM {source}

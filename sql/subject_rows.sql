-- The rows of the subjects' predictors, as the similarity tests compare them (only the distinct ones
-- when many repeat), numbered 0, 1, ...: a hybrid point of baseline Shapley is realistic when one of
-- these rows is similar to it on every predictor. The numbers are bit positions in realism's bitsets,
-- read once per predictor, so they must not change between reads (see Dialect.stable_row_number).
SELECT
    {columns},
    {numbers} AS __cohort_row
FROM (SELECT {distinct}{columns} FROM {subjects}) AS subject_rows

-- Whole-table statistics, one row and one pass over the data: the number of subjects, the mean and
-- variance of y - pilot, checks on y, the ids and each predictor, and the parameters data-dependent
-- similarity kinds need (window widths from ranges or quantiles, bin edges). Deltas are computed once
-- over the whole table, never per target.
SELECT
    {aggregates}
FROM {source}

-- For one predictor: every (point value, subject row) pair where the subject row's value is similar to
-- the point's value under the predictor's kind. Points are the distinct values of the predictor among
-- the targets and baselines, numbered by __cohort_code; subject rows are numbered by __cohort_row.
SELECT t.__cohort_code, s.__cohort_row
FROM {points} AS t
JOIN {subject_rows} AS s ON {test}

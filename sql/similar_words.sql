-- For one predictor, bitsets of the subject rows similar to each point value, as words of W bits
-- (WORD_BITS in cohortsql/realism.py): bit b of word k of value c is set when subject row W k + b is
-- similar to the point value numbered c under the predictor's kind. Points are the distinct values of
-- the predictor among the targets and baselines; subject rows are numbered by __cohort_row
-- (sql/subject_rows.sql). Only words with a bit set come back, at most values x rows / W of them,
-- never the similar pairs themselves.
SELECT
    t.__cohort_code,
    CAST(floor(s.__cohort_row / {word_bits}) AS BIGINT) AS __cohort_word,
    bit_or(CAST(power(2, s.__cohort_row % {word_bits}) AS BIGINT)) AS __cohort_bits
FROM {points} AS t
JOIN {subject_rows} AS s ON {test}
GROUP BY 1, 2

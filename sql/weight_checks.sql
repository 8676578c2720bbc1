-- The case-weight column's checks, over every row: negative, NULL or non-finite weights are
-- refused (the first one's id is reported), and the total must be positive. The total is summed
-- scaled down by a power of two, so that it cannot overflow on any engine.
SELECT
    count_if({bad}) AS bad_weights,
    min(CASE WHEN {bad} THEN {id} END) AS first_bad_weight,
    sum(CASE WHEN {bad} THEN NULL ELSE {weight} * {scale} END) AS scaled_total_weight,
    count_if({weight} > 0) AS positive_rows
FROM {source}

-- A case weight of zero drops the row: every later step reads only the rows of positive weight
-- (negative, NULL and non-finite weights were refused before).
SELECT *
FROM {source}
WHERE CAST({weight} AS DOUBLE) > 0

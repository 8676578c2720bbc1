-- The most frequent value of one column (ties: the smallest; missing values count as a value).
SELECT {column}
FROM {source}
GROUP BY {column}
ORDER BY count(*) DESC, {column} NULLS LAST
LIMIT 1

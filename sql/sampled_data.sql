-- The data's rows as they are (every column) kept on their own hash, for the checks of the data as a
-- whole. No ORDER BY: the caller sorts the few rows it reads by id (on Spark a sort of the whole scan
-- took 1.4 s of a 2.5 s read of 1,000,000 cached rows).
SELECT {id} AS __cohort_id, {columns}
FROM {source}
WHERE {membership}

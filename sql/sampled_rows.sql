-- About {fraction} of the rows that satisfy the condition, kept or not each on its own hash: the first
-- 32 bits of md5('<seed>:row:<id>') below {fraction} of 2^32 (a Bernoulli sample: no sort, so it reads
-- a table of any size in bounded memory), in id order, with their weight under every weighting.
SELECT *, {weights}
FROM {subjects}
WHERE {condition} AND {kept}
ORDER BY __cohort_id

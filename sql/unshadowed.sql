-- The query cohort_shapley prepared for a table of the database, refused where the caller's own
-- connection holds a TEMP table or view of the same name (which its SQL would read instead).
SELECT *
FROM (
{query}
) AS prepared
WHERE (
    SELECT CASE
        WHEN count(*) > 0 THEN error('{function}: a TEMP table or view named ' || {name} || ' shadows the database''s own; rename or drop it, or store it with CREATE TABLE')
        ELSE TRUE
    END
    FROM (
        SELECT table_name AS name FROM duckdb_tables() WHERE temporary
        UNION ALL
        SELECT view_name FROM duckdb_views() WHERE temporary
    ) AS temporary_objects
    WHERE lower(name) = lower({name})
)

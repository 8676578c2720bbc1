-- Requested target ids that match no row of the data.
SELECT requested.id
FROM {requested} AS requested
ANTI JOIN {subjects} AS s ON s.__cohort_id = requested.id

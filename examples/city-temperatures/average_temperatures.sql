-- The table the job keeps up to date, in PostgreSQL (the seed writes it to
-- Elasticsearch for a dashboard; a table with a key is the same
-- materialized view):
--   psql -h 127.0.0.1 -U postgres test -f average_temperatures.sql
DROP TABLE IF EXISTS average_temperatures;
CREATE TABLE average_temperatures (
    city            TEXT NOT NULL,
    window_time     TIMESTAMP NOT NULL,
    avg_temperature DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (city, window_time)
);

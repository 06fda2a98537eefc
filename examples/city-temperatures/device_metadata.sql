-- The device metadata the lookup join reads, in MariaDB (or MySQL):
--   mariadb test < device_metadata.sql
-- Device d-99 is not in it: its readings find no city and the inner join
-- drops them, as Flink's lookup JOIN does.
DROP TABLE IF EXISTS device_metadata;
CREATE TABLE device_metadata (
    device_id VARCHAR(16) PRIMARY KEY,
    city      VARCHAR(64) NOT NULL
);
INSERT INTO device_metadata (device_id, city) VALUES
    ('d-01', 'Berlin'), ('d-02', 'Berlin'), ('d-03', 'Berlin'),
    ('d-04', 'Lisbon'), ('d-05', 'Lisbon'),
    ('d-06', 'Tokyo'), ('d-07', 'Tokyo'), ('d-08', 'Tokyo');

-- Run leases (issue 22): the owner driving the run (NULL: free), the epoch
-- of its holding (increases with every acquisition, never reset) and when
-- it expires (Unix nanoseconds).
ALTER TABLE runs ADD COLUMN lease_owner TEXT COLLATE "C";
ALTER TABLE runs ADD COLUMN lease_epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN lease_expires BIGINT NOT NULL DEFAULT 0;

-- Run leases (issue 22): the owner driving the run (NULL: free), the epoch
-- of its holding (increases with every acquisition, never reset) and when
-- it expires (Unix nanoseconds).
ALTER TABLE runs ADD COLUMN lease_owner TEXT;
ALTER TABLE runs ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN lease_expires INTEGER NOT NULL DEFAULT 0;

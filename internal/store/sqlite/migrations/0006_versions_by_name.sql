-- A workflow's versions, newest first (the dashboard's workflow page).
CREATE INDEX versions_name_created ON versions(name, created_at DESC);

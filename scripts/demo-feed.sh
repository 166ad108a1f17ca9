#!/usr/bin/env bash
# make run's demo feeder: inserts 0 to 3 events a second into demo_events (database demo), each
# dated now, so the demo stays alive: `SELECT count(*) FROM demo_events \watch 1` shows rows
# arriving and, 10 seconds later, going. One psql session fed by a loop; it ends when the
# server goes away (make stop), or on `kill -- -PGID` (scripts/demo-feed.sh runs in its own
# process group: make run starts it under setsid and writes its PID to build/run/demo-feed.pid).
#   scripts/demo-feed.sh PSQL SOCKET_DIR PORT
set -euo pipefail
psql=${1:?psql} sock=${2:?socket directory} port=${3:?port}
insert="INSERT INTO demo_events (doc)
        SELECT jsonb_build_object('kind', (ARRAY['click', 'view', 'login'])[1 + (random() * 2)::int],
                                  'creationDate', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))
        FROM generate_series(1, (random() * 3)::int);"
while sleep 1; do echo "$insert"; done |
  "$psql" -h "$sock" -p "$port" -U postgres -d demo -X -q -v ON_ERROR_STOP=1 >/dev/null

"""Django's PostgreSQL backend, with a health check that needs no round trip when it can.

CONN_HEALTH_CHECKS makes Django run `SELECT 1` before the first query of every request on a
kept connection: a round trip and ~1.5 ms of a worker's CPU per API call on the 2-core bench
machine, about a tenth of what an ingest batch of 1,000 samples costs. A server that ends a
connection (a restart, `pg_terminate_backend`, an idle timeout) sends its error and closes
the socket, which then has something to read; an idle connection whose socket has nothing to
read would pass the `SELECT 1` too. So the socket is polled first (no wait), and the query is
run only when something arrived (an ended connection, a notice, a NOTIFY) or the connection
is not idle. What neither check sees quickly (a silent network partition) is unchanged.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import pq

IDLE = pq.TransactionStatus.IDLE


class DatabaseWrapper(base.DatabaseWrapper):
    def close_if_health_check_failed(self) -> None:
        if (
            self.connection is not None
            and self.health_check_enabled
            and not self.health_check_done
            and not self.pool
            and self._quiet()
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def _quiet(self) -> bool:
        """True when the connection is open, idle, and nothing waits on its socket."""
        connection = self.connection
        if connection.closed or connection.broken:
            return False
        pgconn = connection.pgconn
        try:
            if pgconn.status != pq.ConnStatus.OK or pgconn.transaction_status != IDLE:
                return False
            readable, _, _ = select.select([pgconn.socket], [], [], 0)
        except (OSError, ValueError, base.Database.Error):
            return False
        return not readable

"""The PostgreSQL engine's health check: a connection the server ended is replaced before a
request uses it, a quiet one is kept (perfhub/postgresql/base.py). Real PostgreSQL only."""

from __future__ import annotations

import select
import time

import pytest
from django.db import connection, connections

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's own backends"),
]


@pytest.fixture
def kept():
    """A second connection to the test database, as a worker keeps it between requests."""
    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def _next_request(wrapper) -> int:
    """What a request does with a kept connection: the check, then a query (its backend pid)."""
    wrapper.health_check_done = False
    wrapper.close_if_health_check_failed()
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _pid(wrapper) -> int:
    return wrapper.connection.info.backend_pid


def test_a_connection_the_server_ended_is_replaced_before_the_next_query(kept):
    ended = _pid(kept)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [ended])
    deadline = time.monotonic() + 5
    while not _socket_has_data(kept) and time.monotonic() < deadline:
        time.sleep(0.01)  # until the server's goodbye reaches the socket
    assert _next_request(kept) != ended


def test_a_quiet_connection_is_kept(kept):
    assert _next_request(kept) == _pid(kept)


def _socket_has_data(wrapper) -> bool:
    return bool(select.select([wrapper.connection.pgconn.socket], [], [], 0)[0])

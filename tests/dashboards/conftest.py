"""Fixtures for dashboard tests; the rows they seed come from `tests.factories`."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest


@pytest.fixture
def now() -> datetime:
    return datetime.now(tz=UTC)

"""The load-tests page's baselines table tells same-named baselines apart: five nightly runs
all read "vllm bench c=16 (nightly)", with nothing else to tell which is which."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from tests.factories.catalog import make_baseline

pytestmark = pytest.mark.django_db

FIRST = datetime(2026, 11, 3, 2, 0, tzinfo=UTC)


def _rows(html: str) -> dict[str, str]:
    section = html[html.index('id="baselines"') :]
    section = section[: section.index("</section>")]
    rows = section.split("<tr data-baseline=")[1:]
    return {r.split('"')[1]: r[: r.index("</tr>")] for r in rows}


def test_same_named_baselines_show_their_dates_and_which_is_current(owner_client, service):
    nightly = [
        make_baseline(
            service,
            label="vllm bench c=16 (nightly)",
            measured_at=FIRST + timedelta(days=i),
            is_current=(i == 2),
        )
        for i in range(5)
    ]
    html = owner_client.get(reverse("loadtests:list", args=[service.slug])).content.decode()
    rows = _rows(html)
    for i, b in enumerate(nightly):
        row = rows[str(b.pk)]
        assert f"2026-11-0{3 + i} 02:00" in row
        assert ('badge-ok">current' in row) is (i == 2)
        assert ("not current" in row) is (i != 2)

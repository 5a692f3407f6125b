"""The baseline's claim names the objective it compares with, and where it is set.

Its targets are the service's "SLO P99" settings (`Service.slo_p99_*_ms`); the SLOs listed on
the dossier are the SLO objects, which replace the settings in that list once a latency SLO is
saved. The demo saves "Interactive latency" (TTFT and TPOT only), so the 2,000 ms end-to-end
target appeared in no listed SLO: the page now says so instead of hiding it.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from dossiers import selectors
from dossiers.models import Slo
from tests.factories.catalog import make_baseline

pytestmark = pytest.mark.django_db


def _interactive(service, **thresholds) -> Slo:
    return Slo.objects.create(
        service=service, name="Interactive latency", target_percent=99.0, window_days=28,
        **(thresholds or {"ttft_ms": 500, "tpot_ms": 50}),
    )  # fmt: skip


def _by_metric(service):
    return {c.metric: c for c in selectors.slo_checks(service, None)}


def test_without_saved_slos_the_settings_are_the_listed_slo(service):
    checks = _by_metric(service)
    assert {m: c.agreement for m, c in checks.items()} == dict.fromkeys(
        ("e2e", "ttft", "tpot"), "listed"
    )


def test_a_setting_left_out_of_the_saved_slos_is_not_listed(service):
    _interactive(service)
    checks = _by_metric(service)
    assert checks["e2e"].target_ms == 2000
    assert checks["e2e"].agreement == "not listed"
    assert checks["ttft"].agreement == "listed"


def test_a_saved_slo_with_another_threshold_differs(service):
    _interactive(service, ttft_ms=400)
    check = _by_metric(service)["ttft"]
    assert check.agreement == "differs"
    assert "“Interactive latency”: TTFT ≤ 400 ms for 99% of requests" in check.agreement_note


def test_the_claim_names_the_setting_and_links_where_it_is_set(owner_client, service):
    make_baseline(service)
    _interactive(service)
    page = owner_client.get(service.get_absolute_url()).content.decode()
    assert "SLO P99 fields" not in page  # the unexplained term
    row = re.search(r'<tr data-slo="e2e".*?</tr>', page, re.S).group(0)
    edit = reverse("dossiers:service_edit", args=[service.slug]) + "#id_slo_p99_e2e_ms"
    assert f'href="{edit}"' in row
    assert "SLO P99 end-to-end (ms)" in row
    assert 'data-slo-agreement="not listed"' in row


def test_the_slo_list_shows_the_setting_it_leaves_out(outsider_client, service):
    make_baseline(service)
    _interactive(service)
    page = outsider_client.get(service.get_absolute_url()).content.decode()
    note = re.search(r"<p[^>]*data-unlisted-slo-targets.*?</p>", page, re.S).group(0)
    assert "end-to-end ≤ 2,000 ms" in note
    assert "TTFT" not in note  # listed as set: nothing to flag

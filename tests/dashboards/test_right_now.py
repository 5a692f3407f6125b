"""One verdict right now per service: from its SLOs over live roll-ups and its live alerts,
on the fleet row and the dossier's right-now fragment, the baseline's claims on a line apart."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.urls import reverse

from alerts.models import AlertInstance, Rule
from analysis.buckets import BucketCounts
from collectors import storage
from collectors.models import Host, ScrapeWindow
from collectors.services.ingest import WINDOW_FIELDS, epoch_minute
from collectors.services.rollups import rollup_host_minutes
from dashboards.right_now import Verdict, right_now
from dossiers.models import Slo
from tests.factories.alerts import LAG, feed, minute

pytestmark = pytest.mark.django_db

NOW = minute(30) + LAG + timedelta(seconds=5)  # minutes 0-29 closed and past the lag


@pytest.fixture
def host(db) -> Host:
    return Host.objects.create(name="gpu-node-01")


@pytest.fixture
def slo(service) -> Slo:
    return Slo.objects.create(service=service, name="Interactive", e2e_ms=2000, target_percent=99)


def verdict(service) -> Verdict:
    with time_machine.travel(NOW, tick=False):
        return right_now([service], now=NOW)[service.pk].verdict


def fire(service, *, kind="slo_burn", severity="warning", state="firing") -> AlertInstance:
    rule = Rule.objects.create(
        service=service, name=f"{kind} {severity}", kind=kind, threshold=14.4,
        window_s=3600, severity=severity,
    )  # fmt: skip
    return AlertInstance.objects.create(
        rule=rule, service=service, fingerprint=f"fp-{rule.pk}", state=state, threshold=14.4,
        value=20.0, fired_at=NOW, pending_since=NOW, last_evaluated_at=NOW,
    )  # fmt: skip


def test_good_traffic_meets_its_slos(service, host, slo):
    for i in range(30):
        feed(service, host, i, e2e_ms=1000)
    assert verdict(service) == Verdict.MEETING


def test_a_firing_slo_alert_is_never_shown_as_fine(service, host, slo):
    for i in range(30):
        feed(service, host, i, e2e_ms=1000)
    fire(service, severity="warning")
    assert verdict(service) == Verdict.BURNING


def test_a_firing_critical_alert_means_breaching(service, host, slo):
    for i in range(30):
        feed(service, host, i, e2e_ms=1000)
    fire(service, kind="kv_cache", severity="critical")
    assert verdict(service) == Verdict.BREACHING


def test_a_pending_alert_is_listed_but_not_judged(service, host, slo):
    for i in range(30):
        feed(service, host, i, e2e_ms=1000)
    fire(service, severity="critical", state="pending")
    with time_machine.travel(NOW, tick=False):
        rn = right_now([service], now=NOW)[service.pk]
    assert rn.verdict == Verdict.MEETING and rn.pending_count == 1


def test_an_slo_missed_over_its_window_is_breaching(service, host, slo):
    for i in range(30):
        feed(service, host, i, e2e_ms=1000 if i < 25 else 9000)  # 1/6 of requests bad
    assert verdict(service) == Verdict.BREACHING


def test_without_slo_or_p99_fields_the_verdict_says_so(service):
    service.slo_p99_e2e_ms = service.slo_p99_ttft_ms = service.slo_p99_tpot_ms = None
    service.save()
    assert verdict(service) == Verdict.NO_SLO


def _engine_minute(service, node, i: int, counts: tuple[float, ...]) -> None:
    """One minute of vLLM e2e histogram deltas only (no pushed requests)."""
    hist = {"e2e_seconds": BucketCounts((0.5, 1.0, 2.5, 5.0), counts).to_dict()}
    start = minute(i)
    row = (node.pk, service.pk, "vllm", start, start + timedelta(seconds=59), 59.0,
           {"requests_finished": sum(counts)}, {}, hist, {}, False)  # fmt: skip
    storage.bulk_insert(ScrapeWindow, WINDOW_FIELDS, [row])
    rollup_host_minutes(host_id=node.pk, minutes=[epoch_minute(start)])


def _fragment_over_engine_minutes(client, service, host) -> str:
    """The right-now fragment after 30 minutes of 100 requests each, from engine histograms:
    2,000 ms lies inside (1 s, 2.5 s], so each minute's 10 requests there may be good or bad."""
    for i in range(30):
        _engine_minute(service, host, i, (80, 5, 10, 5, 0))
    url = reverse("dashboards:service_right_now", args=[service.slug])
    with time_machine.travel(NOW, tick=False):
        return client.get(url).content.decode()


def test_a_threshold_between_bucket_edges_is_shown_as_bounds(owner_client, service, host, slo):
    page = _fragment_over_engine_minutes(owner_client, service, host)
    assert "85.00% to 95.00%" in page
    assert "between bucket edges 1,000 ms and 2,500 ms" in page
    assert "engine histograms (server-side" in page


def test_the_request_count_an_slo_figure_rests_on_reads_with_thousands_separated(
    owner_client, service, host, slo
):
    page = _fragment_over_engine_minutes(owner_client, service, host)
    assert "over 28 days, 3,000 requests" in page


def test_the_fragment_puts_the_claims_on_a_separate_labelled_line(owner_client, service, slo):
    fire(service, severity="critical")
    url = reverse("dashboards:service_right_now", args=[service.slug])
    with time_machine.travel(NOW, tick=False):
        page = owner_client.get(url).content.decode()
    assert 'data-verdict="breaching"' in page
    assert "The dossier's claims (the current baseline" in page
    assert page.index("Right now") < page.index("The dossier's claims")


def test_the_fleet_row_gives_the_verdict_and_links_the_alerts(owner_client, service, slo):
    fire(service, severity="critical")
    page = owner_client.get(reverse("home")).content.decode()
    assert 'data-right-now="breaching"' in page
    assert "1 critical firing" in page
    assert f"?service={service.slug}" in page


def test_a_service_silent_for_the_last_hour_is_not_called_fine(service, host, slo):
    for i in range(30):
        feed(service, host, i, e2e_ms=1000)
    later = NOW + timedelta(hours=2)
    with time_machine.travel(later, tick=False):
        rn = right_now([service], now=later)[service.pk]
    assert rn.verdict == Verdict.NO_DATA
    assert "no requests in the last hour" in rn.reasons

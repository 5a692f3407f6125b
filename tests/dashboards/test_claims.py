"""Each figure a dossier claims is checked against live roll-ups at an equal workload."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from analysis.claims import Status
from dashboards.claims import check_claims, drift_since
from dashboards.workload_claims import workload_claims
from tests.factories.catalog import make_baseline, make_service
from tests.factories.traffic import seed_traffic

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
HOUR_AGO = NOW - timedelta(minutes=60)


@pytest.fixture
def svc(team):
    # Two replicas; one host at 120 requests a minute is 1 request/s per replica.
    return make_service(team, "claims-svc")


@pytest.fixture
def baseline(svc):
    # The workload `seed_traffic` sends by default: 1 request/s per replica, 1,000 output and
    # 500 prompt tokens per request.
    return make_baseline(
        svc, measured_at=NOW - timedelta(days=10), qps=1.0, e2e_p50_ms=1000.0,
        e2e_p90_ms=1400.0, e2e_p99_ms=1480.0, output_tps=1000.0, input_tps=500.0,
        ttft_p50_ms=200.0, ttft_p99_ms=298.0, tpot_p50_ms=20.0, tpot_p99_ms=29.8,
    )  # fmt: skip


def check(svc, baseline):
    return check_claims([svc], {svc.pk: baseline}, now=NOW)[svc.pk]


def test_a_p99_that_matches_live_traffic_holds(svc, baseline):
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60, e2e_ms=1000.0)
    assert check(svc, baseline).claim("e2e_p99_ms").status == Status.HOLDS


def test_lengths_without_pushed_requests_leave_the_service_holding(svc, baseline):
    # Roll-ups only, as for a service whose engines are scraped: no live length distribution.
    baseline.prompt_tokens_mean = 500.0
    baseline.save(update_fields=["prompt_tokens_mean"])
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60, e2e_ms=1000.0)
    result = check(svc, baseline)
    workload_claims(result)
    assert (result.claim("prompt_length").status, result.status) == (
        Status.NO_LIVE_DATA,
        Status.HOLDS,
    )


def test_a_p99_that_live_traffic_doubles_has_drifted(svc, baseline):
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60, e2e_ms=2000.0)
    claim = check(svc, baseline).claim("e2e_p99_ms")
    assert claim.status == Status.DRIFTED
    assert claim.verdict.change == pytest.approx(1.0, abs=0.05)


def test_live_load_far_from_the_baseline_rate_is_not_compared(svc, baseline):
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60, requests=20, e2e_ms=2000.0,
                 tokens_per_second=2000 / 6)  # fmt: skip
    claim = check(svc, baseline).claim("e2e_p99_ms")
    assert claim.status == Status.WORKLOAD_CHANGED
    assert claim.note == "workload changed: request rate -83%"


# A live window that differs from the baseline only in answer length: 27% more output tokens
# per request at the same request rate and prompt length, latencies as claimed.
def longer_answers(svc):
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60, tokens_per_second=2540.0,
                 prompt_tokens_per_second=1000.0)  # fmt: skip


def test_longer_answers_give_no_throughput_verdict_and_say_why(svc, baseline):
    longer_answers(svc)
    claim = check(svc, baseline).claim("output_tps")
    assert claim.status == Status.WORKLOAD_CHANGED
    assert claim.note == "workload changed: output tokens per request +27%"


def test_longer_answers_give_no_cost_or_margin_verdict(svc, baseline):
    longer_answers(svc)
    result = check(svc, baseline)
    assert {result.claim(k).status for k in ("cost_per_mtok", "margin")} == {
        Status.WORKLOAD_CHANGED
    }


def test_longer_answers_give_no_end_to_end_latency_verdict(svc, baseline):
    longer_answers(svc)
    assert check(svc, baseline).claim("e2e_p99_ms").status == Status.WORKLOAD_CHANGED


def test_longer_answers_leave_the_decode_step_claim_judged(svc, baseline):
    longer_answers(svc)
    assert check(svc, baseline).claim("tpot_p99_ms").status == Status.HOLDS


def test_the_same_workload_keeps_throughput_and_cost_judged(svc, baseline):
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60)
    result = check(svc, baseline)
    assert [result.claim(k).status for k in ("output_tps", "cost_per_mtok", "margin")] == [
        Status.HOLDS
    ] * 3


def test_a_baseline_without_prompt_lengths_gives_no_throughput_verdict(svc):
    bare = make_baseline(svc, qps=1.0, output_tps=1000.0, input_tps=None,
                         measured_at=NOW - timedelta(days=10))  # fmt: skip
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60)
    claim = check(svc, bare).claim("output_tps")
    assert (claim.status, claim.note) == (
        Status.NOT_COMPARABLE,
        "no workload to compare: prompt tokens per request unknown",
    )


def test_the_fleet_row_says_which_workload_figure_changed(client, owner, svc, baseline,
                                                          time_machine):  # fmt: skip
    time_machine.move_to(NOW + timedelta(seconds=30))
    longer_answers(svc)
    client.force_login(owner)
    html = client.get(reverse("home")).content.decode()
    row = html[html.index('data-service="claims-svc"') :]
    row = row[: row.index("</tr>")]
    assert 'data-claims="workload changed"' in row
    assert "workload changed: output tokens per request +27%" in row


def test_without_live_traffic_the_claim_has_no_live_data(svc, baseline):
    assert check(svc, baseline).claim("e2e_p99_ms").status == Status.NO_LIVE_DATA


def test_an_old_baseline_is_stale(svc, baseline):
    baseline.measured_at = NOW - timedelta(days=200)
    baseline.save()
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60, e2e_ms=1000.0)
    assert check(svc, baseline).status == Status.STALE


def test_live_margin_is_known_at_any_load(svc, baseline):
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60, requests=20, tokens_per_second=100.0)
    assert check(svc, baseline).live_economics.margin < 0


def test_the_fleet_row_shows_the_drift_and_the_live_p99(client, owner, svc, baseline,
                                                         time_machine):  # fmt: skip
    time_machine.move_to(NOW + timedelta(seconds=30))
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60, e2e_ms=2000.0)
    client.force_login(owner)
    html = client.get(reverse("home")).content.decode()
    row = html[html.index('data-service="claims-svc"') :]
    row = row[: row.index("</tr>")]
    assert 'data-claims="drifted"' in row
    # The figure, then its window (as the alert pages write it: "-11.1% live, last 60 min").
    assert re.search(
        r"data-live=\"p99\">[\d,]+ \(\+10\d%\) <span data-window>live, last 60 min", row
    )


def test_the_dossier_fragment_lists_each_claim_with_its_verdict(client, owner, svc, baseline,
                                                                 time_machine):  # fmt: skip
    time_machine.move_to(NOW + timedelta(seconds=30))
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60, e2e_ms=2000.0)
    client.force_login(owner)
    response = client.get(reverse("dashboards:service_claims", args=[svc.slug]))
    html = response.content.decode()
    row = html[html.index('data-claim="e2e_p99_ms"') :]
    assert "drifted" in row[: row.index("</tr>")]


def test_the_dossier_fragment_names_the_currency_of_the_cost_claim(client, owner, svc, baseline,
                                                                  time_machine):  # fmt: skip
    # The row read "Cost per Mtok | 0.0989 | 0.0962": the only figure of the table with no unit.
    time_machine.move_to(NOW + timedelta(seconds=30))
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60, e2e_ms=1000.0)
    client.force_login(owner)
    html = client.get(reverse("dashboards:service_claims", args=[svc.slug])).content.decode()
    row = html[html.index('data-claim="cost_per_mtok"') :]
    assert f"Cost per Mtok ({svc.currency})" in row[: row.index("</tr>")]


def test_an_owner_records_the_live_window_as_a_baseline_candidate(client, owner, svc, baseline,
                                                                   time_machine):  # fmt: skip
    time_machine.move_to(NOW + timedelta(seconds=30))
    seed_traffic(service=svc, start=HOUR_AGO, minutes=60, e2e_ms=1000.0)
    client.force_login(owner)
    client.post(reverse("dashboards:live_baseline_candidate", args=[svc.slug]))
    candidate = svc.baselines.exclude(pk=baseline.pk).get()
    assert not candidate.is_current
    assert candidate.qps == pytest.approx(1.0)
    assert candidate.e2e_p99_ms == pytest.approx(1491, rel=0.02)


def test_someone_outside_the_team_cannot_record_a_baseline(client, outsider, svc, baseline):
    client.force_login(outsider)
    response = client.post(reverse("dashboards:live_baseline_candidate", args=[svc.slug]))
    assert response.status_code == 403


def test_the_live_page_costs_the_window_as_the_fleet_does(svc, baseline):
    # One host all hour, a second only for its last half hour at another rate and GPU load:
    # a mean of per-minute rates would weigh the two halves alike; totals over the window don't.
    from collectors.economics import live_economics

    seed_traffic(service=svc, start=HOUR_AGO, minutes=60, tokens_per_second=2000.0, util=0.9)
    seed_traffic(service=svc, host="gpu-host-2", start=NOW - timedelta(minutes=30), minutes=30,
                 tokens_per_second=500.0, util=0.3)  # fmt: skip
    fleet = check(svc, baseline).live_economics
    page = live_economics(service=svc, now=NOW + timedelta(seconds=30))
    assert page.window_minutes == 60
    assert page.economics.cost_per_mtok == pytest.approx(fleet.cost_per_mtok)
    assert page.economics.margin == pytest.approx(fleet.margin)
    assert page.economics.cost_per_mtok_usage == pytest.approx(fleet.cost_per_mtok_usage)


def test_a_drifted_p99_says_since_when(svc, baseline):
    # Two hours that hold, then three that drift: the drift started three hours ago.
    seed_traffic(service=svc, host="h", start=NOW - timedelta(hours=5), minutes=120, e2e_ms=1000.0)
    seed_traffic(service=svc, host="h", start=NOW - timedelta(hours=3), minutes=180, e2e_ms=2000.0)
    result = check(svc, baseline)
    drift_since(result)
    since = (NOW - timedelta(hours=3)).strftime("%Y-%m-%d %H:%M")
    assert result.claim("e2e_p99_ms").since == f"since {since} UTC"


def test_a_host_that_started_mid_window_is_judged_over_the_time_it_reported(svc, baseline):
    # The live agent began 30 minutes ago (the demo's seam): the same workload, half a window.
    seed_traffic(service=svc, start=NOW - timedelta(minutes=30), minutes=30)
    result = check(svc, baseline)
    assert result.workload_note == ""
    assert result.claim("output_tps").status == Status.HOLDS

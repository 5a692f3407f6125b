"""Both sides of one run (issue 20, item 3): a load test overlapping scrapes of its service
keeps the engine's figures of its window beside its own, the gap is a measured layer, a
diagnosis rule proposes it when it dominates, and live server-side claims are checked against
the baseline run's engine-side figures."""

import json
from datetime import datetime, timedelta

import pytest

from collectors.services.rollups import rollup_pending
from dashboards.claims import check_claims
from loadtests.diagnosis import proposals_for
from loadtests.engine_side import layers, side_by_side
from loadtests.importing import import_loadtest_file, promote_load_test
from tests.factories.batches import INGEST_URL, make_batch, recent_minute, rfc3339

pytestmark = pytest.mark.django_db


def ttft_exposition(cumulative: tuple[int, int, int, int]) -> str:
    """vLLM's page whose TTFT histogram has these cumulative counts at 20, 40, 60 ms, +Inf."""
    le = ("0.02", "0.04", "0.06", "+Inf")
    n = cumulative[-1]
    rows = [
        "# TYPE vllm:request_success_total counter",
        f'vllm:request_success_total{{finished_reason="stop"}} {n}',
        "# TYPE vllm:time_to_first_token_seconds histogram",
        *[f'vllm:time_to_first_token_seconds_bucket{{le="{e}"}} {c}'
          for e, c in zip(le, cumulative, strict=True)],
        f"vllm:time_to_first_token_seconds_sum {0.03 * n}",
        f"vllm:time_to_first_token_seconds_count {n}",
    ]  # fmt: skip
    return "\n".join(rows) + "\n"


def exposition(n: int) -> str:
    """vLLM after `n` requests: every engine-side TTFT in (20, 40] ms but a tenth under 20."""
    return ttft_exposition((n // 10, n, n, n))


def bench_file(end, ttft_p99_ms: float = 800.6) -> bytes:
    """`vllm bench serve`'s default file for 100 requests over the 15 s ending at `end` (its
    median TTFT at most its P99, as the import requires)."""
    return json.dumps(
        {
            "date": end.strftime("%Y%m%d-%H%M%S"),
            "completed": 100,
            "failed": 0,
            "duration": 15.0,
            "request_throughput": 100 / 15,
            "request_rate": "inf",
            "max_concurrency": 4,
            "median_ttft_ms": min(283.6, ttft_p99_ms),
            "p99_ttft_ms": ttft_p99_ms,
        }
    ).encode()


def scraped_run(agent_client, service, capture, **bench):
    """A load test of `service` whose 15 s the agent scraped (two scrapes: 100 requests);
    `bench`: bench_file's figures. `capture`: django_capture_on_commit_callbacks."""
    service.replicas = 1
    service.save()
    t0 = recent_minute() + timedelta(seconds=20)
    for ts, n in ((t0, 100), (t0 + timedelta(seconds=15), 200)):
        scrape = {"ts": rfc3339(ts), "service": service.slug, "source": "vllm",
                  "exposition": exposition(n)}  # fmt: skip
        batch = make_batch(gpus=[], requests=[], scrapes=[scrape])
        response = agent_client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
        assert response.status_code == 202, response.content
    with capture(execute=True):
        (run,) = import_loadtest_file(
            service=service,
            content=bench_file(t0 + timedelta(seconds=15), **bench),
            filename="b.json",
        )
    run.refresh_from_db()
    return run


@pytest.fixture
def run(agent_client, service, django_capture_on_commit_callbacks):
    return scraped_run(agent_client, service, django_capture_on_commit_callbacks)


def test_an_imported_run_keeps_the_engine_figures_of_its_window(run):
    figure = run.server_side["figures"]["ttft_p99_ms"]
    assert (figure["count"], figure["lower"], figure["upper"]) == (100, 20.0, 40.0)


def test_the_run_figures_stay_client_side(run):
    assert (run.vantage, run.ttft_p99_ms) == ("client", 800.6)


def test_the_gap_between_client_and_engine_is_a_measured_layer(run):
    (p99,) = [layer for layer in layers(run) if layer.key == "ttft_p99_ms"]
    assert p99.text() == "API server and tokenizer: +761 ms at TTFT P99"


def test_the_layer_is_bounded_by_the_engine_bucket(run):
    (p99,) = [layer for layer in layers(run) if layer.key == "ttft_p99_ms"]
    assert (p99.low_ms, p99.high_ms) == (pytest.approx(760.6), pytest.approx(780.6))


def test_the_run_page_rows_show_both_sides_apart(run):
    (row,) = [r for r in side_by_side(run) if r["figure"] == "TTFT P99"]
    assert (row["client"], row["engine"]) == (800.6, "39.8 ms [20, 40]")


def test_a_client_figure_below_the_engines_is_not_a_layer_but_other_traffic(
    agent_client, service, django_capture_on_commit_callbacks
):
    # 10 ms at the client, while the engine's TTFTs of those minutes were 20-40 ms: the engine
    # served other requests too, and a negative "layer" would be nonsense.
    run = scraped_run(agent_client, service, django_capture_on_commit_callbacks, ttft_p99_ms=10.0)
    assert "ttft_p99_ms" not in [layer.key for layer in layers(run)]
    (row,) = [r for r in side_by_side(run) if r["figure"] == "TTFT P99"]
    assert row["layer"].startswith("below the engine's own figure")


def test_diagnosis_proposes_the_front_of_the_engine_when_it_dominates(run):
    assert "front_of_engine" in [p.rule for p in proposals_for(run)]


def test_diagnosis_stays_quiet_when_the_engine_accounts_for_most_of_ttft(
    agent_client, service, django_capture_on_commit_callbacks
):
    near = scraped_run(agent_client, service, django_capture_on_commit_callbacks, ttft_p99_ms=60.0)
    assert "front_of_engine" not in [p.rule for p in proposals_for(near)]


def live_claims(service, baseline, start=None, minutes: int = 3):
    """The service's claims checked against `baseline` once the scrapes are rolled up: over
    `minutes` from `start`, by default from the minute before the run's."""
    rollup_pending()
    start = start or recent_minute() - timedelta(minutes=1)
    check = check_claims(
        [service], {service.pk: baseline}, start=start, end=start + timedelta(minutes=minutes)
    )
    return check[service.pk]


def test_promoting_the_run_carries_its_engine_side_to_the_baseline(run):
    baseline = promote_load_test(load_test=run)
    assert baseline.server_side["figures"]["ttft_p99_ms"]["upper"] == 40.0


def test_live_server_side_claims_are_checked_against_the_baseline_engine_figures(run, service):
    baseline = promote_load_test(load_test=run)
    claim = live_claims(service, baseline).claim("ttft_p99_ms")
    assert (claim.label, claim.status.value) == ("TTFT P99 (server)", "holds")


def test_live_server_side_claims_without_baseline_engine_figures_are_not_comparable(run, service):
    baseline = promote_load_test(load_test=run)
    baseline.server_side = {}
    baseline.save()
    assert live_claims(service, baseline).claim("ttft_p99_ms").status.value == "not comparable"


def test_a_baseline_engine_figure_known_only_as_a_bucket_is_compared_as_an_interval(run, service):
    """The baseline run's engine-side TTFT P99 lay in (20, 40] with no value (as vLLM's E2E
    below its first 300 ms edge does); the live window's lies in the same bucket: holds."""
    baseline = promote_load_test(load_test=run)
    figure = baseline.server_side["figures"]["ttft_p99_ms"]
    baseline.server_side["figures"]["ttft_p99_ms"] = {**figure, "value": None}
    baseline.save()
    assert live_claims(service, baseline).claim("ttft_p99_ms").status.value == "holds"


def _claims_page(client, service, **query) -> str:
    from urllib.parse import urlencode

    from django.urls import reverse

    url = reverse("dashboards:service_claims", args=[service.slug]) + "?" + urlencode(query)
    return client.get(url)


def test_the_claims_check_honours_the_range_the_user_picked(run, service, client, outsider):
    promote_load_test(load_test=run)
    rollup_pending()
    client.force_login(outsider)
    start = recent_minute() - timedelta(minutes=1)
    page = _claims_page(
        client, service, start=start.isoformat(), end=(start + timedelta(minutes=3)).isoformat()
    ).content.decode()
    assert 'data-claim="ttft_p99_ms"><th scope="row">TTFT P99 (server)' in page


def test_a_claims_range_that_cannot_be_read_is_refused_naming_the_field(service, client, outsider):
    client.force_login(outsider)
    response = _claims_page(client, service, start="yesterday-ish")
    assert (response.status_code, list(response.json())) == (400, ["start"])


def test_the_command_attaches_late_scrapes_and_prints_the_layer(run, service):
    from io import StringIO

    from django.core.management import call_command

    run.server_side = {}
    run.save()
    out = StringIO()
    call_command("attach_engine_side", "--service", service.slug, stdout=out)
    assert "API server and tokenizer: +761 ms at TTFT P99" in out.getvalue()


def test_the_command_refuses_a_service_without_load_tests_with_exit_2(service):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError) as caught:
        call_command("attach_engine_side", "--service", service.slug)
    assert caught.value.returncode == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--service", "nope"], "unknown service 'nope'"),
        (["--service", "chat-7b", "--run", "999999"], "--run 999999: no such load test"),
    ],
)
def test_the_command_names_an_unknown_service_or_run_with_exit_2(run, args, message):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=message) as caught:
        call_command("attach_engine_side", *args)
    assert caught.value.returncode == 2


@pytest.mark.parametrize("bad", [str(10**30), "0", "x"])
def test_the_command_refuses_a_run_that_is_no_id_before_asking_the_database(run, bad):
    """(SQLite raised OverflowError past 2**63.) On the command line argparse exits 2."""
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="is not a load test id"):
        call_command("attach_engine_side", "--service", "chat-7b", "--run", bad)


def _scrape_ttfts(client, service, at, cumulative: tuple[int, int, int, int]) -> None:
    text = ttft_exposition(cumulative)
    scrape = {"ts": rfc3339(at), "service": service.slug, "source": "vllm", "exposition": text}
    batch = make_batch(gpus=[], requests=[], scrapes=[scrape])
    response = client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
    assert response.status_code == 202, response.content


@pytest.fixture
def run_after_warmup(agent_client, service, django_capture_on_commit_callbacks):
    """A 15 s run in the minute where, 20 s earlier, ten slow warm-up requests (TTFT over the
    engine's last 60 ms edge) reached the engine: the minute holds 210 requests, the run 200."""
    service.replicas = 1
    service.save()
    minute = recent_minute()
    scrapes = ((5, (0, 0, 0, 0)), (12, (0, 0, 0, 10)), (25, (10, 100, 100, 110)),
               (40, (20, 200, 200, 210)))  # fmt: skip
    for seconds, cumulative in scrapes:
        _scrape_ttfts(agent_client, service, minute + timedelta(seconds=seconds), cumulative)
    with django_capture_on_commit_callbacks(execute=True):
        (run,) = import_loadtest_file(
            service=service, content=bench_file(minute + timedelta(seconds=40)), filename="w.json"
        )
    run.refresh_from_db()
    return run


def _minute_of(run) -> datetime:
    return run.window()[0].replace(second=0, microsecond=0)


def test_the_engine_side_covers_the_whole_minutes_a_live_view_reads(run_after_warmup):
    side, minute = run_after_warmup.server_side, _minute_of(run_after_warmup)
    assert (side["covered"], side["figures"]["ttft_p99_ms"]["count"]) == (
        [minute.isoformat(), (minute + timedelta(minutes=1)).isoformat()],
        210,
    )


def test_a_claim_over_the_runs_minutes_compares_the_same_requests_on_both_sides(
    run_after_warmup, service
):
    """Cut at the run's own seconds, the engine side left out the warm-up (P99 in (20, 40]),
    while the live minute held it (P99 above 60 ms): 'drifted' on identical traffic."""
    baseline = promote_load_test(load_test=run_after_warmup)
    claims = live_claims(service, baseline, _minute_of(run_after_warmup), minutes=1)
    assert claims.claim("ttft_p99_ms").status.value == "holds"


def test_a_baseline_engine_figure_above_the_last_edge_is_compared_as_an_interval(run, service):
    """ "> 60 ms" on both sides holds; without the open bucket it read 'not comparable'."""
    baseline = promote_load_test(load_test=run)
    figure = baseline.server_side["figures"]["ttft_p99_ms"]
    baseline.server_side["figures"]["ttft_p99_ms"] = {
        **figure, "value": None, "lower": None, "upper": None, "above_last_edge": 30.0
    }  # fmt: skip
    baseline.save()
    assert live_claims(service, baseline).claim("ttft_p99_ms").status.value == "holds"

"""The aggregated Prometheus source, against the real `prometheus` and `promtool`: three hosts'
raw series backfilled into a TSDB, PerfHub's recording rules backfilled over them, and the
roll-ups read through the recorded per-service sums equal those read host by host."""

from __future__ import annotations

import time
from datetime import timedelta
from decimal import Decimal

import pytest
import yaml
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from analysis import buckets
from collectors import exposition
from collectors.distributions import Traffic
from collectors.exposition import recording
from collectors.models import PrometheusSource, ScrapeWindow, ServiceRollup
from collectors.services.prometheus import source_create, source_sync
from collectors.services.rollups import rollup_pending
from dossiers.models import Service
from tests import fleet_tsdb

pytestmark = pytest.mark.usefixtures("outbound_loopback")

# roll-up latency metric -> the vLLM histogram that feeds it
HISTOGRAMS = {"ttft": "vllm:time_to_first_token_seconds",
              "e2e": "vllm:e2e_request_latency_seconds",
              "itl": "vllm:inter_token_latency_seconds"}  # fmt: skip


@pytest.fixture(scope="module")
def fleet_prometheus(tmp_path_factory):
    """3 hosts, 20 minutes scraped every 30 s ending a few minutes ago, rules every 60 s."""
    workdir = tmp_path_factory.mktemp("fleet")
    start = (int(time.time()) - 25 * 60) // 60 * 60
    fleet = fleet_tsdb.write_openmetrics(
        workdir / "fleet.om", hosts=3, start=start, scrapes=40, scrape_s=30
    )
    rules = workdir / "rules.yml"
    rules.write_text(
        yaml.safe_dump(recording.rules_document(["vllm", "dcgm"], interval_s=60), sort_keys=False)
    )
    prom = fleet_tsdb.build_tsdb(workdir, workdir / "fleet.om", rules, start=start,
                                 end=fleet.end + 120)  # fmt: skip
    try:
        yield prom, fleet
    finally:
        prom.stop()


@pytest.fixture
def no_lag(settings):
    settings.PERFHUB_PROMETHEUS_LAG_S = 0


def twin(service: Service, slug: str) -> Service:
    return Service.objects.create(
        slug=slug, name=slug, team=service.team, model_name="m", model_params_b=Decimal(7),
        engine="vllm", gpu_model="H100", gpus_per_replica=1, replicas=1, gpu_hour_price=2,
    )  # fmt: skip


def fleet_source(prom_url: str, service: Service, name: str, mode: str = "aggregated",
                 selector: str = 'service="fleet-a"'):  # fmt: skip
    """A source reading the fleet's Prometheus a minute a step, an hour back."""
    return source_create(
        name=name, service=service, base_url=prom_url, mode=mode, engine_selector=selector,
        step_s=60, backfill_hours=1,
    )  # fmt: skip


def synced(prom_url: str, service: Service, mode: str) -> Traffic:
    source = fleet_source(prom_url, service, f"fleet-{mode}", mode)
    outcome = source_sync(source_id=source.pk)
    assert outcome.ok, outcome.error
    rollup_pending()
    traffic = Traffic()
    for row in ServiceRollup.objects.filter(service=service, resolution_s=60):
        traffic.add_row(row)
    return traffic


@pytest.fixture
def both_modes(fleet_prometheus, service, no_lag) -> tuple[Traffic, Traffic, fleet_tsdb.Fleet]:
    prom, fleet = fleet_prometheus
    per_host = synced(prom.url, service, PrometheusSource.Mode.PER_HOST)
    aggregated = synced(prom.url, twin(service, "chat-agg"), PrometheusSource.Mode.AGGREGATED)
    return per_host, aggregated, fleet


def test_aggregated_and_per_host_roll_ups_count_the_same_observations(both_modes):
    per_host, aggregated, fleet = both_modes
    for metric in HISTOGRAMS:
        a = aggregated.merged_buckets(metric)
        p = per_host.merged_buckets(metric)
        assert a.counts == p.counts, metric
        # ...and both are what the three hosts observed (fleet-a has no restart)
        assert list(a.counts) == list(fleet.observed["fleet-a"][HISTOGRAMS[metric]])


def test_aggregated_percentiles_fall_in_the_per_host_percentiles_bucket(both_modes):
    per_host, aggregated, _ = both_modes
    for metric in HISTOGRAMS:
        for q in (0.5, 0.9, 0.99):
            a = buckets.quantile(aggregated.merged_buckets(metric), q)
            p = buckets.quantile(per_host.merged_buckets(metric), q)
            assert (a.lower, a.upper) == (p.lower, p.upper), (metric, q)


def test_aggregated_and_per_host_count_the_same_requests_and_tokens(both_modes):
    per_host, aggregated, _ = both_modes
    assert aggregated.scraped_requests == per_host.scraped_requests > 0
    assert aggregated.scraped_aborts == per_host.scraped_aborts > 0
    assert aggregated.scraped_prompt_tokens == per_host.scraped_prompt_tokens > 0
    assert aggregated.scraped_generation_tokens == per_host.scraped_generation_tokens > 0


def test_aggregated_and_per_host_count_the_same_per_request_tokens_and_preemptions(both_modes):
    per_host, aggregated, _ = both_modes
    for name in ("scraped_token_requests", "scraped_request_prompt_tokens",
                 "scraped_request_output_tokens", "scraped_preemptions"):  # fmt: skip
        assert getattr(aggregated, name) == getattr(per_host, name) > 0, name


def test_a_second_aggregated_sync_adds_no_window(fleet_prometheus, service, no_lag):
    prom, _ = fleet_prometheus
    source = fleet_source(prom.url, service, "fleet-again")
    first = source_sync(source_id=source.pk)
    windows = ScrapeWindow.objects.filter(host=source.host).count()
    again = source_sync(source_id=source.pk, now=timezone.now() + timedelta(minutes=1))
    assert first.steps == windows > 0
    assert again.ok and again.steps == 0
    assert ScrapeWindow.objects.filter(host=source.host).count() == windows


def test_an_aggregated_source_without_recorded_series_names_the_rules(
    fleet_prometheus, service, no_lag
):
    prom, _ = fleet_prometheus
    source = fleet_source(prom.url, service, "fleet-none", selector='service="no-such-service"')
    outcome = source_sync(source_id=source.pk)
    assert not outcome.ok
    assert "export_recording_rules" in outcome.error


def test_the_exported_recording_rules_pass_promtool(tmp_path):
    path = tmp_path / "perfhub.recording.yml"
    call_command("export_recording_rules", "--output", str(path))
    checked = fleet_tsdb.promtool("check", "rules", str(path))
    assert "SUCCESS" in checked


def test_a_bad_service_label_is_refused_with_exit_2():
    with pytest.raises(CommandError, match="service label") as exc:
        call_command("export_recording_rules", "--service-label", "not a label")
    assert exc.value.returncode == 2


def test_an_aggregated_source_refuses_a_dcgm_selector(service):
    with pytest.raises(ValidationError) as exc:
        source_create(
            name="agg-gpu", service=service, base_url="http://prometheus.example.com:9090",
            mode="aggregated", engine_selector='service="a"', dcgm_selector='job="dcgm"',
        )  # fmt: skip
    assert "dcgm_selector" in exc.value.message_dict


def test_recorded_samples_become_one_window_each_under_the_engines_names():
    matrix = [
        {"metric": {"__name__": "perfhub_service:vllm:request_success_total:delta",
                    "service": "a", "finished_reason": "stop"},
         "values": [[60.5, "7"], [120.5, "3"]]},
        {"metric": {"__name__": "perfhub_service:vllm:request_success_total:delta",
                    "service": "a", "finished_reason": "abort"},
         "values": [[60.5, "1"]]},
        {"metric": {"__name__": "perfhub_service:vllm:num_requests_running:sum",
                    "service": "a"}, "values": [[60.5, "12"]]},
    ]  # fmt: skip
    texts = recording.delta_expositions(matrix)
    assert list(texts) == [60.5, 120.5]
    empty = exposition.ParsedScrape(source="vllm")
    w = exposition.window(empty, exposition.parse(texts[60.5], "vllm"), 60.0)
    assert w.counters == {"requests_finished": 7.0, "request_aborts": 1.0}
    assert w.gauges["requests_running"] == 12.0


def test_recorded_per_request_tokens_and_preemptions_read_back_as_a_scrapes_do():
    recorded = {
        "vllm:request_generation_tokens_count": "63",
        "vllm:request_generation_tokens_sum": "3153",
        "vllm:request_prompt_tokens_sum": "7988",
        "vllm:num_preemptions_total": "3",
    }
    matrix = [{"metric": {"__name__": f"perfhub_service:{name}:delta", "service": "a"},
               "values": [[60.5, value]]} for name, value in recorded.items()]  # fmt: skip
    text = recording.delta_expositions(matrix)[60.5]
    w = exposition.window(
        exposition.ParsedScrape(source="vllm"), exposition.parse(text, "vllm"), 60
    )
    assert w.counters == {"finished_requests_counted": 63.0, "finished_generation_tokens": 3153.0,
                          "finished_prompt_tokens": 7988.0, "preemptions": 3.0}  # fmt: skip


def test_recorded_kv_blocks_of_an_older_trt_llm_backend_read_as_used_over_max():
    # Backend 0.17 and older: no `fraction`; the recording keeps the block type (the most used
    # and the largest max over the service's hosts), the reader divides one by the other.
    name = "perfhub_service:nv_trt_llm_kv_cache_block_metrics:max"
    matrix = [
        {"metric": {"__name__": name, "service": "a", "kv_cache_block_type": kind},
         "values": [[60.5, value]]}
        for kind, value in (("used", "4800"), ("free", "1439"), ("max", "6239"))
    ]  # fmt: skip
    text = recording.delta_expositions(matrix)[60.5]
    assert exposition.parse(text, "triton").gauges["kv_cache_usage"] == 4800 / 6239


def test_recorded_trt_llm_tokens_of_an_interval_that_served_a_batched_request_are_not_read():
    # 4 requests to tensorrt_llm in the interval, one of batch size 2: 5 inferences. Its token
    # histograms hold that request's last row alone (SOURCES.md, the `-batched` scrape).
    recorded = [
        ("nv_llm_input_token_len_sum", {"response_metric_type": "total_input_tokens"}, "780"),
        ("nv_inference_count", {}, "5"),
        ("nv_inference_request_success", {}, "4"),
    ]
    matrix = [{"metric": {"__name__": f"perfhub_service:{name}:delta", "service": "a",
                          "model": "tensorrt_llm", **labels}, "values": [[60.5, value]]}
              for name, labels, value in recorded]  # fmt: skip
    text = recording.delta_expositions(matrix)[60.5]
    assert exposition.parse(text, "triton").counter_total("prompt_tokens") is None


def test_an_aggregated_sources_page_shows_the_recorded_series_it_reads(client, owner, service):
    source = source_create(
        name="agg-page", service=service, base_url="http://prometheus.example.com:9090",
        mode="aggregated", engine_selector='service="chat"',
    )  # fmt: skip
    client.force_login(owner)
    page = client.get(source.get_absolute_url()).content.decode()
    assert "perfhub_service:vllm:time_to_first_token_seconds_bucket:delta" in page
    assert "export_recording_rules" in page


def _promtool_test(tmp_path, sources: list[str], series: dict[str, str], expected: dict) -> str:
    """Run `promtool test rules` on PerfHub's rules for `sources`: `series` (selector -> values)
    as input, `expected` (recorded expression -> [(labels, value)]) checked at minute 3."""
    (tmp_path / "rules.yml").write_text(
        yaml.safe_dump(recording.rules_document(sources, interval_s=60), sort_keys=False)
    )
    cases = [
        {"expr": expr, "eval_time": "3m",
         "exp_samples": [{"labels": labels, "value": value} for labels, value in samples]}
        for expr, samples in expected.items()
    ]  # fmt: skip
    test = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "promql_expr_test": cases,
                   "input_series": [{"series": s, "values": v} for s, v in series.items()]}],
    }  # fmt: skip
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test, sort_keys=False))
    return fleet_tsdb.promtool("test", "rules", str(tmp_path / "test.yml"))


def test_the_recorded_gpu_sums_leave_mig_instances_rows_out(tmp_path):
    # dcgm-exporter's MIG rows (GPU_I_ID) read a slice of the GPU whose own row is beside them.
    name = "DCGM_FI_PROF_DRAM_ACTIVE"
    record = f"perfhub_service:{name}:sum"
    out = _promtool_test(
        tmp_path,
        ["dcgm"],
        {f'{name}{{service="s",gpu="0"}}': "0.69x5",
         f'{name}{{service="s",gpu="0",GPU_I_ID="13",GPU_I_PROFILE="1g.5gb"}}': "0.8x5"},
        {record: [(f'{record}{{service="s"}}', 0.69)]},
    )  # fmt: skip
    assert "SUCCESS" in out


def test_the_recorded_gpu_power_reads_a_3x_mig_gpu_once_from_its_instances_rows(tmp_path):
    # dcgm-exporter 3.x: no row of the GPU's own, its power repeated on each instance's row.
    name = "DCGM_FI_DEV_POWER_USAGE"
    out = _promtool_test(
        tmp_path,
        ["dcgm"],
        {f'{name}{{service="s",gpu="0",UUID="GPU-a",GPU_I_ID="3"}}': "52x5",
         f'{name}{{service="s",gpu="0",UUID="GPU-a",GPU_I_ID="4"}}': "54x5",
         f'{name}{{service="s",gpu="1",UUID="GPU-b"}}': "100x5",
         f'{name}{{service="s",gpu="1",UUID="GPU-b",GPU_I_ID="3"}}': "999x5"},
        {f"perfhub_service:{name}:sum": [(f'perfhub_service:{name}:sum{{service="s"}}', 153)],
         f"perfhub_service:{name}:count": [(f'perfhub_service:{name}:count{{service="s"}}', 2)]},
    )  # fmt: skip
    assert "SUCCESS" in out


def test_the_recorded_gpu_sums_leave_dcgm_blank_readings_out(tmp_path):
    name = "DCGM_FI_DEV_SM_CLOCK"
    record = f"perfhub_service:{name}:count"
    out = _promtool_test(
        tmp_path,
        ["dcgm"],
        {f'{name}{{service="s",gpu="0"}}': "1410x5",
         f'{name}{{service="s",gpu="1"}}': "2147483634x5"},  # DCGM's int32 "not supported"
        {record: [(f'{record}{{service="s"}}', 1)]},
    )  # fmt: skip
    assert "SUCCESS" in out


def test_the_recorded_vllm_counts_add_a_ray_serve_replica_to_a_plain_vllm_one(tmp_path):
    record = "perfhub_service:vllm:prompt_tokens_total:delta"
    out = _promtool_test(
        tmp_path,
        ["vllm"],
        {'vllm:prompt_tokens_total{service="s",instance="a"}': "0+10x5",
         'ray_vllm:prompt_tokens_total{service="s",WorkerId="w1"}': "0+5x5"},
        {record: [(f'{record}{{service="s"}}', 15)]},
    )  # fmt: skip
    assert "SUCCESS" in out


def test_the_recorded_vllm_per_request_token_histogram_keeps_its_sum_and_its_count(tmp_path):
    # One histogram read as two counters (tokens per finished request): both recorded.
    name = "vllm:request_generation_tokens"
    out = _promtool_test(
        tmp_path,
        ["vllm"],
        {f'{name}_sum{{service="s",instance="a"}}': "0+320x5",
         f'{name}_count{{service="s",instance="a"}}': "0+10x5"},
        {f"perfhub_service:{name}_sum:delta":
             [(f'perfhub_service:{name}_sum:delta{{service="s"}}', 320)],
         f"perfhub_service:{name}_count:delta":
             [(f'perfhub_service:{name}_count:delta{{service="s"}}', 10)]},
    )  # fmt: skip
    assert "SUCCESS" in out


def test_the_recorded_sglang_retractions_count_a_tp_group_once_on_either_version(tmp_path):
    # 0.5.23's counter on both TP ranks (--enable-metrics-for-all-schedulers) and a 0.5.1
    # host's running total (a gauge): each host once, the TP group once.
    new, old = "sglang:num_retracted_requests_total", "sglang:total_retracted_reqs"
    record = f"perfhub_service:{new}:delta"
    bare = record.replace("_total:", ":")
    out = _promtool_test(
        tmp_path,
        ["sglang"],
        {f'{new}{{service="s",instance="a",tp_rank="0"}}': "0+3x5",
         f'{new}{{service="s",instance="a",tp_rank="1"}}': "0+3x5",
         f'{old}{{service="s",instance="b",tp_rank="0"}}': "0+2x5"},
        {record: [(f'{record}{{service="s"}}', 3)],
         # the gauge has no `_total`: recorded under the bare name
         bare: [(f'{bare}{{service="s"}}', 2)]},
    )  # fmt: skip
    assert "SUCCESS" in out


def test_recorded_sglang_retractions_of_both_versions_read_back_as_one_count():
    recorded = {"sglang:num_retracted_requests_total": "3", "sglang:num_retracted_requests": "2"}
    matrix = [{"metric": {"__name__": f"perfhub_service:{name}:delta", "service": "a"},
               "values": [[60.5, value]]} for name, value in recorded.items()]  # fmt: skip
    text = recording.delta_expositions(matrix)[60.5]
    w = exposition.window(
        exposition.ParsedScrape(source="sglang"), exposition.parse(text, "sglang"), 60
    )
    assert w.counters == {"preemptions": 5.0}


def test_the_recorded_triton_counts_keep_the_model_that_tells_an_ensemble(tmp_path):
    # The reader keeps only the ensemble's counts (`Rule.prefer`), so the model must survive.
    name = "nv_inference_request_success"
    record = f"perfhub_service:{name}:delta"
    out = _promtool_test(
        tmp_path,
        ["triton"],
        {f'{name}{{service="s",model="ensemble",version="1"}}': "0+10x5",
         f'{name}{{service="s",model="preprocessing",version="1"}}': "0+10x5"},
        {record: [(f'{record}{{service="s",model="ensemble"}}', 10),
                  (f'{record}{{service="s",model="preprocessing"}}', 10)]},
    )  # fmt: skip
    assert "SUCCESS" in out

"""A service's rules as a Prometheus rules file: promtool accepts it, and `promtool test rules`
fires the exported P99, KV-cache and margin alerts on a small series set (and not on a calm
one)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from alerts.models import Rule
from alerts.prometheus_rules import rules_yaml
from alerts.services import ensure_default_rules
from collectors.services.prometheus import source_create
from dossiers.models import Baseline
from tests.promstack import promtool

pytestmark = pytest.mark.django_db

# vLLM's e2e histogram (names from the mapping tables), 120 requests a minute: one host whose
# requests all take 2.5-5 s (P99 above the 2,000 ms SLO), beside one at 0.1-0.25 s.
SERIES = """
      - series: 'vllm:e2e_request_latency_seconds_bucket{job="vllm",instance="a",le="0.25"}'
        values: '0+0x20'
      - series: 'vllm:e2e_request_latency_seconds_bucket{job="vllm",instance="a",le="2.5"}'
        values: '0+0x20'
      - series: 'vllm:e2e_request_latency_seconds_bucket{job="vllm",instance="a",le="5"}'
        values: '0+%(slow)sx20'
      - series: 'vllm:e2e_request_latency_seconds_bucket{job="vllm",instance="a",le="+Inf"}'
        values: '0+%(slow)sx20'
      - series: 'vllm:e2e_request_latency_seconds_count{job="vllm",instance="a"}'
        values: '0+%(slow)sx20'
      - series: 'vllm:e2e_request_latency_seconds_bucket{job="vllm",instance="b",le="0.25"}'
        values: '0+120x20'
      - series: 'vllm:e2e_request_latency_seconds_bucket{job="vllm",instance="b",le="2.5"}'
        values: '0+120x20'
      - series: 'vllm:e2e_request_latency_seconds_bucket{job="vllm",instance="b",le="5"}'
        values: '0+120x20'
      - series: 'vllm:e2e_request_latency_seconds_bucket{job="vllm",instance="b",le="+Inf"}'
        values: '0+120x20'
      - series: 'vllm:e2e_request_latency_seconds_count{job="vllm",instance="b"}'
        values: '0+120x20'
      - series: 'vllm:kv_cache_usage_perc{job="vllm",instance="a"}'
        values: '%(kv)sx20'
"""


@pytest.fixture
def rules_file(service, tmp_path) -> Path:
    ensure_default_rules(service)
    path = tmp_path / "perfhub.rules.yml"
    path.write_text(rules_yaml(service, engine_selector='job="vllm"', dcgm_selector=""))
    return path


def alert_test(
    rules: Path, *, slow: int, kv: str, expect: list[str], series_prefix: str = "vllm:"
) -> Path:
    document = yaml.safe_load(rules.read_text())
    exported = {a["labels"]["perfhub_rule"]: a for a in document["groups"][0]["rules"]}
    tests = []
    for rule_name in ("P99 end-to-end above SLO", "KV cache near full"):
        alert = exported[rule_name]
        exp = [{"exp_labels": alert["labels"], "exp_annotations": alert["annotations"]}]
        tests.append(
            {"eval_time": "15m", "alertname": alert["alert"],
             "exp_alerts": exp if rule_name in expect else []}
        )  # fmt: skip
    path = rules.parent / "test.yml"
    text = SERIES.replace("'vllm:", f"'{series_prefix}")
    series = yaml.safe_load("input_series:" + text % {"slow": slow, "kv": kv})
    path.write_text(
        yaml.safe_dump(
            {
                "rule_files": [rules.name],
                "evaluation_interval": "1m",
                "tests": [
                    {"interval": "1m", **series, "alert_rule_test": tests},
                ],
            },
            sort_keys=False,
        )
    )
    return path


def test_promtool_accepts_the_exported_rules(rules_file):
    checked = promtool("check", "rules", str(rules_file))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # cost vs baseline is left out: the service has no baseline yet
    assert "SUCCESS: 8 rules found" in checked.stdout


def test_promtool_fires_p99_and_kv_cache_on_a_slow_full_engine(rules_file):
    test = alert_test(rules_file, slow=120, kv="0.97", expect=["P99 end-to-end above SLO",
                                                              "KV cache near full"])  # fmt: skip
    ran = promtool("test", "rules", str(test))
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_promtool_fires_on_vllms_metrics_as_ray_serve_exports_them(rules_file):
    # Ray's metrics agent prefixes every name with `ray_`: the same rules read them.
    test = alert_test(rules_file, slow=120, kv="0.97", series_prefix="ray_vllm:",
                      expect=["P99 end-to-end above SLO", "KV cache near full"])  # fmt: skip
    ran = promtool("test", "rules", str(test))
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_promtool_stays_quiet_on_a_calm_engine(rules_file):
    # 1 slow request in 121 a minute: the merged P99 stays in the fast bucket.
    test = alert_test(rules_file, slow=1, kv="0.5", expect=[])
    ran = promtool("test", "rules", str(test))
    assert ran.returncode == 0, ran.stdout + ran.stderr


# A TensorRT-LLM backend before 0.18 on Triton: KV blocks used and max, no `fraction` series.
TRITON_KV_BLOCKS_SERIES = """
      - series: 'nv_trt_llm_kv_cache_block_metrics{job="triton",model="tensorrt_llm",version="1",kv_cache_block_type="used"}'
        values: '%(used)sx20'
      - series: 'nv_trt_llm_kv_cache_block_metrics{job="triton",model="tensorrt_llm",version="1",kv_cache_block_type="max"}'
        values: '6239x20'
"""  # noqa: E501


@pytest.mark.parametrize("used, fires", [(6100, True), (3000, False)])
def test_promtool_reads_an_older_trt_llm_backends_kv_usage_from_its_blocks(
    service, tmp_path, used, fires
):
    # 6,100 of 6,239 blocks: 98% full, over the default threshold; 3,000 (48%) is not.
    service.engine = "triton"
    service.save(update_fields=["engine"])
    ensure_default_rules(service)
    rules = tmp_path / "triton.rules.yml"
    rules.write_text(rules_yaml(service, engine_selector='job="triton"', dcgm_selector=""))
    document = yaml.safe_load(rules.read_text())
    alert = next(a for a in document["groups"][0]["rules"] if a["labels"]["perfhub_rule"]
                 == "KV cache near full")  # fmt: skip
    expected = [{"exp_labels": alert["labels"], "exp_annotations": alert["annotations"]}]
    series = yaml.safe_load("input_series:" + TRITON_KV_BLOCKS_SERIES % {"used": used})
    test = {"eval_time": "15m", "alertname": alert["alert"],
            "exp_alerts": expected if fires else []}  # fmt: skip
    path = tmp_path / "kv-test.yml"
    path.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": "1m",
                                    "tests": [{"interval": "1m", **series,
                                               "alert_rule_test": [test]}]}))  # fmt: skip
    ran = promtool("test", "rules", str(path))
    assert ran.returncode == 0, ran.stdout + ran.stderr


# Triton with the TensorRT-LLM backend on an idle GPU (20%): the executor has nothing waiting,
# while 3 requests queue in Triton in front of the tensorrt_llm model.
TRITON_QUEUED_SERIES = """
      - series: 'DCGM_FI_DEV_GPU_UTIL{gpu="0",GPU_I_ID=""}'
        values: '20x30'
      - series: 'nv_trt_llm_request_metrics{job="triton",model="tensorrt_llm",version="1",request_type="waiting"}'
        values: '0x30'
      - series: 'nv_inference_pending_request_count{job="triton",model="tensorrt_llm",version="1"}'
        values: '3x30'
"""  # noqa: E501


def test_promtool_fires_gpu_waiting_on_requests_queued_in_triton_before_the_executor(
    service, tmp_path
):
    service.engine = "triton"
    service.save(update_fields=["engine"])
    ensure_default_rules(service)
    rules = tmp_path / "triton.rules.yml"
    rules.write_text(rules_yaml(service, engine_selector='job="triton"', dcgm_selector=""))
    document = yaml.safe_load(rules.read_text())
    alert = next(a for a in document["groups"][0]["rules"] if a["labels"]["perfhub_rule"]
                 == "GPU waiting while requests queue")  # fmt: skip
    expected = [{"exp_labels": alert["labels"], "exp_annotations": alert["annotations"]}]
    series = yaml.safe_load("input_series:" + TRITON_QUEUED_SERIES)
    test = {"eval_time": "25m", "alertname": alert["alert"], "exp_alerts": expected}
    path = tmp_path / "waiting-test.yml"
    path.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": "1m",
                                    "tests": [{"interval": "1m", **series,
                                               "alert_rule_test": [test]}]}))  # fmt: skip
    ran = promtool("test", "rules", str(path))
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_the_export_names_the_engines_metrics_and_what_it_left_out(service):
    ensure_default_rules(service)
    text = rules_yaml(service, engine_selector='job="vllm"', dcgm_selector='job="dcgm"')
    assert (
        'rate({__name__=~"vllm:e2e_request_latency_seconds_bucket'
        '|ray_vllm:e2e_request_latency_seconds_bucket", job="vllm"}[5m])'
    ) in text
    assert 'DCGM_FI_PROF_SM_ACTIVE{job="dcgm", GPU_I_ID=""}' in text
    assert "# Not exported: Cost per Mtok above baseline: no current baseline" in text


# 4 GPUs at 10 an hour, a price of 5 per Mtok: the margin falls below 0.2 under about 2,778
# output tokens/s. 120 finished requests a minute (over the rule's minimum of 100 an hour).
TOKEN_SERIES = """
      - series: 'vllm:generation_tokens_total{job="vllm",instance="a"}'
        values: '0+%(tokens_per_min)sx150'
      - series: 'vllm:request_success_total{job="vllm",instance="a",finished_reason="stop"}'
        values: '0+120x150'
      - series: 'vllm:request_success_total{job="vllm",instance="a",finished_reason="abort"}'
        values: '0+1000x150'
"""


def margin_test(
    rules: Path, *, tokens_per_s: int, fires: bool, series_yaml: str = TOKEN_SERIES
) -> Path:
    document = yaml.safe_load(rules.read_text())
    alert = next(a for a in document["groups"][0]["rules"] if a["labels"]["perfhub_rule"]
                 == "Margin below target")  # fmt: skip
    expected = [{"exp_labels": alert["labels"], "exp_annotations": alert["annotations"]}]
    series = yaml.safe_load("input_series:" + series_yaml % {"tokens_per_min": tokens_per_s * 60})
    test = {
        "eval_time": "150m",
        "alertname": alert["alert"],
        "exp_alerts": expected if fires else [],
    }
    path = rules.parent / "margin-test.yml"
    path.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": "1m",
                                    "tests": [{"interval": "1m", **series,
                                               "alert_rule_test": [test]}]}))  # fmt: skip
    return path


def test_promtool_fires_the_margin_alert_when_throughput_is_too_low_for_the_price(rules_file):
    # 1,000 tokens/s: 11.1 per Mtok against a price of 5, a margin of -122%.
    ran = promtool("test", "rules", str(margin_test(rules_file, tokens_per_s=1000, fires=True)))
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_promtool_keeps_the_margin_alert_quiet_at_a_profitable_throughput(rules_file):
    # 10,000 tokens/s: 1.11 per Mtok, a margin of 78%.
    ran = promtool("test", "rules", str(margin_test(rules_file, tokens_per_s=10000, fires=False)))
    assert ran.returncode == 0, ran.stdout + ran.stderr


# Triton with the TensorRT-LLM backend (0.16+): output tokens in the backend model's length
# histogram's sum, requests in the ensemble's success counter (the models it calls count again).
TRITON_TOKEN_SERIES = (
    """
      - series: 'nv_llm_output_token_len_sum{job="triton",model="tensorrt_llm",version="1","""
    """response_metric_type="total_output_tokens"}'
        values: '0+%(tokens_per_min)sx150'
      - series: 'nv_inference_request_success{job="triton",model="ensemble",version="1"}'
        values: '0+120x150'
      - series: 'nv_inference_request_success{job="triton",model="tensorrt_llm",version="1"}'
        values: '0+120x150'
"""
)


def test_promtool_fires_the_margin_alert_on_tritons_token_histogram(service, tmp_path):
    # 1,000 output tokens/s from the TensorRT-LLM backend: a margin of -122%, as vLLM's above.
    service.engine = "triton"
    service.save(update_fields=["engine"])
    ensure_default_rules(service)
    rules = tmp_path / "triton.rules.yml"
    rules.write_text(rules_yaml(service, engine_selector='job="triton"', dcgm_selector=""))
    test = margin_test(rules, tokens_per_s=1000, fires=True, series_yaml=TRITON_TOKEN_SERIES)
    ran = promtool("test", "rules", str(test))
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_promtool_does_not_read_tritons_token_histogram_while_batched_requests_are_served(
    service, tmp_path
):
    # Every request to tensorrt_llm carries 2 rows: the histogram holds one row of each, so
    # its 1,000 tokens/s are not the throughput, and the margin is not judged on them.
    service.engine = "triton"
    service.save(update_fields=["engine"])
    ensure_default_rules(service)
    rules = tmp_path / "triton.rules.yml"
    rules.write_text(rules_yaml(service, engine_selector='job="triton"', dcgm_selector=""))
    batched = TRITON_TOKEN_SERIES + (
        """      - series: 'nv_inference_count{job="triton",model="tensorrt_llm",version="1"}'\n"""
        "        values: '0+240x150'\n"
    )
    test = margin_test(rules, tokens_per_s=1000, fires=False, series_yaml=batched)
    ran = promtool("test", "rules", str(test))
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_the_cost_rule_is_exported_against_the_current_baselines_cost(service):
    Baseline.objects.create(service=service, label="v1", measured_at=timezone.now(),
                            output_tps=2000, is_current=True)  # fmt: skip
    ensure_default_rules(service)
    text = rules_yaml(service, engine_selector='job="vllm"', dcgm_selector="")
    # live: 11111.11 per Mtok at 1 token/s over the fleet's token rate; baseline: 1.389 per Mtok
    assert (
        '((11111.11111 / (sum(rate({__name__=~"vllm:generation_tokens_total'
        '|ray_vllm:generation_tokens_total", job="vllm"}[1h])))) '
        "/ 1.388888889 - 1) * 100 > 25"
    ) in text
    assert "Not exported: Cost per Mtok" not in text


def test_selectors_default_to_the_services_prometheus_source(service):
    ensure_default_rules(service)
    source_create(name="p", service=service, base_url="http://prom:9090",
                  engine_selector='job="chat"', dcgm_selector='job="gpus"')  # fmt: skip
    text = rules_yaml(service)
    assert '{__name__=~"vllm:kv_cache_usage_perc|ray_vllm:kv_cache_usage_perc", job="chat"}' in text
    assert 'DCGM_FI_DEV_GPU_UTIL{job="gpus", GPU_I_ID=""}' in text


def test_the_command_writes_the_file_and_refuses_bad_input(service, tmp_path, capsys):
    ensure_default_rules(service)
    out = tmp_path / "r.yml"
    call_command("export_prometheus_rules", "chat-7b", "--output", str(out))
    assert yaml.safe_load(out.read_text())["groups"][0]["name"] == "perfhub-chat-7b"
    with pytest.raises(CommandError, match="no service with slug 'nope'") as exc:
        call_command("export_prometheus_rules", "nope")
    assert exc.value.returncode == 2
    with pytest.raises(CommandError, match="engine selector: cannot read") as exc:
        call_command("export_prometheus_rules", "chat-7b", "--engine-selector", "job=x")
    assert exc.value.returncode == 2


def test_the_page_downloads_the_file(client, owner, service):
    ensure_default_rules(service)
    client.force_login(owner)
    response = client.get("/alerts/rules/prometheus/chat-7b/")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="perfhub-chat-7b.rules.yml"'
    assert b"histogram_quantile(0.99" in response.content


# TGI's router as Prometheus stores it: counters without `_total`, failures by `err`. 600
# requests a minute finish; %(failed)s a minute fail with err="%(err)s".
TGI_SERIES = """
      - series: 'tgi_request_success{job="tgi",instance="a"}'
        values: '0+600x20'
      - series: 'tgi_request_failure{job="tgi",instance="a",err="%(err)s"}'
        values: '0+%(failed)sx20'
"""


def error_rate_test(service, tmp_path, *, engine: str, series_yaml: str, fires: bool) -> Path:
    """A promtool test of the service's 5% error-rate rule, exported for `engine` (selector
    job=ENGINE), over `series_yaml`: firing at 15 minutes, or quiet."""
    service.engine = engine
    service.save(update_fields=["engine"])
    Rule.objects.create(
        service=service, name="Errors", kind="error_rate", threshold=0.05, window_s=300
    )
    rules = tmp_path / f"{engine}.rules.yml"
    rules.write_text(rules_yaml(service, engine_selector=f'job="{engine}"', dcgm_selector=""))
    document = yaml.safe_load(rules.read_text())
    alert = next(a for a in document["groups"][0]["rules"] if a["labels"]["perfhub_rule"]
                 == "Errors")  # fmt: skip
    expected = [{"exp_labels": alert["labels"], "exp_annotations": alert["annotations"]}]
    series = yaml.safe_load("input_series:" + series_yaml)
    test = {
        "eval_time": "15m",
        "alertname": alert["alert"],
        "exp_alerts": expected if fires else [],
    }
    path = tmp_path / f"{engine}-test.yml"
    path.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": "1m",
                                    "tests": [{"interval": "1m", **series,
                                               "alert_rule_test": [test]}]}))  # fmt: skip
    return path


def test_promtool_fires_tgis_error_rate_on_its_bare_counter_names(service, tmp_path):
    # 60 generation failures in 660 a minute: 9%, over the 5% threshold.
    series = TGI_SERIES % {"err": "generation", "failed": 60}
    test = error_rate_test(service, tmp_path, engine="tgi", series_yaml=series, fires=True)
    ran = promtool("test", "rules", str(test))
    assert ran.returncode == 0, ran.stdout + ran.stderr


@pytest.mark.parametrize("err", ["validation", "template"])  # both answered 422: the client's
def test_promtool_does_not_count_requests_tgi_refused_as_invalid(service, tmp_path, err):
    series = TGI_SERIES % {"err": err, "failed": 60}
    test = error_rate_test(service, tmp_path, engine="tgi", series_yaml=series, fires=False)
    ran = promtool("test", "rules", str(test))
    assert ran.returncode == 0, ran.stdout + ran.stderr


# vLLM 0.32 with --max-num-queued-reqs: 600 requests a minute finish, %(rejected)s a minute are
# refused with a 503 (the queue full); no request finishes in error.
VLLM_REJECTING_SERIES = """
      - series: 'vllm:request_success_total{job="vllm",finished_reason="stop"}'
        values: '0+600x20'
      - series: 'vllm:request_success_total{job="vllm",finished_reason="error"}'
        values: '0+0x20'
      - series: 'vllm:admission_rejections_total{job="vllm",reason="max_num_queued_reqs"}'
        values: '0+%(rejected)sx20'
"""


@pytest.mark.parametrize("rejected, fires", [(60, True), (0, False)])
def test_promtool_counts_vllms_queue_full_rejections_as_errors(service, tmp_path, rejected, fires):
    series = VLLM_REJECTING_SERIES % {"rejected": rejected}
    test = error_rate_test(service, tmp_path, engine="vllm", series_yaml=series, fires=fires)
    ran = promtool("test", "rules", str(test))
    assert ran.returncode == 0, ran.stdout + ran.stderr


# SGLang 0.5.23 with --max-queued-requests: 600 requests a minute finish, %(refused)s a minute are
# answered 503 on an endpoint (its only count of them is the HTTP one).
SGLANG_REFUSING_SERIES = """
      - series: 'sglang:num_requests_total{job="sglang",is_streaming="false"}'
        values: '0+600x20'
      - series: 'sglang:http_responses_total{job="sglang",status_code="503",%(endpoint)s}'
        values: '0+%(refused)sx20'
"""


@pytest.mark.parametrize("endpoint, fires", [("/v1/chat/completions", True), ("/health", False)])
def test_promtool_counts_sglangs_503_answers_to_requests_as_errors(
    service, tmp_path, endpoint, fires
):
    series = SGLANG_REFUSING_SERIES % {"refused": 60, "endpoint": f'endpoint="{endpoint}"'}
    test = error_rate_test(service, tmp_path, engine="sglang", series_yaml=series, fires=fires)
    ran = promtool("test", "rules", str(test))
    assert ran.returncode == 0, ran.stdout + ran.stderr

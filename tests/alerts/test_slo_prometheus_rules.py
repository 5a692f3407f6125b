"""SLO burn rules exported for Prometheus: `promtool test rules` fires the fast pair on a
14.4x burn and stays quiet at 1x; a threshold between bucket edges is left out, not rounded."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import yaml

from alerts.models import Rule
from alerts.prometheus_rules import rules_yaml
from analysis.buckets import BucketCounts
from collectors.models import MINUTE, ServiceMergedRollup
from dossiers.models import Slo
from tests.promstack import promtool

pytestmark = pytest.mark.django_db

EDGES = (0.5, 1.0, 2.0, 5.0)  # seconds, as vLLM's e2e histogram


@pytest.fixture
def fast_rule(service) -> Rule:
    Slo.objects.create(service=service, name="Interactive", e2e_ms=2000, target_percent=99)
    ServiceMergedRollup.objects.create(
        service=service, resolution_s=MINUTE, start=datetime(2026, 3, 2, 9, tzinfo=UTC),
        e2e_buckets=BucketCounts(EDGES, (1, 0, 0, 0, 0)).to_dict(),
    )  # fmt: skip
    return Rule.objects.create(
        service=service, name="SLO budget burn: fast", kind="slo_burn", threshold=14.4,
        window_s=3600, for_s=0, min_requests=100, severity="critical",
    )  # fmt: skip


def series(bad_per_min: int, total_per_min: int = 100) -> list[dict]:
    good = total_per_min - bad_per_min
    name = "vllm:e2e_request_latency_seconds"
    sel = 'job="vllm",instance="a"'
    return [
        {"series": f'{name}_bucket{{{sel},le="2.0"}}', "values": f"0+{good}x90"},
        {"series": f'{name}_bucket{{{sel},le="+Inf"}}', "values": f"0+{total_per_min}x90"},
        {"series": f"{name}_count{{{sel}}}", "values": f"0+{total_per_min}x90"},
    ]


def run(tmp_path, service, rule, *, bad: int, fires: bool):
    rules = tmp_path / "slo.rules.yml"
    rules.write_text(rules_yaml(service, engine_selector='job="vllm"', dcgm_selector=""))
    exported = {
        a["labels"]["perfhub_rule"]: a
        for a in yaml.safe_load(rules.read_text())["groups"][0]["rules"]
    }
    alert = exported[rule.name]
    labels = {**alert["labels"], "slo": str(service.slos.get().pk)}
    expected = [{"exp_labels": labels, "exp_annotations": alert["annotations"]}] if fires else []
    test = tmp_path / "test.yml"
    test.write_text(
        yaml.safe_dump(
            {
                "rule_files": [rules.name],
                "evaluation_interval": "1m",
                "tests": [
                    {
                        "interval": "1m",
                        "input_series": series(bad),
                        "alert_rule_test": [
                            {
                                "eval_time": "75m",
                                "alertname": alert["alert"],
                                "exp_alerts": expected,
                            }
                        ],
                    }
                ],
            },
            sort_keys=False,
        )
    )
    return promtool("test", "rules", str(test))


def test_promtool_fires_the_fast_pair_on_a_14x_burn(tmp_path, service, fast_rule):
    ran = run(tmp_path, service, fast_rule, bad=15, fires=True)  # 15% bad at 99%: 15x
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_promtool_stays_quiet_at_1x(tmp_path, service, fast_rule):
    ran = run(tmp_path, service, fast_rule, bad=1, fires=False)  # 1% bad at 99%: 1x
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_a_threshold_between_bucket_edges_is_left_out_with_the_edges_named(service, fast_rule):
    slo = service.slos.get()
    slo.e2e_ms = 1500
    slo.save()
    text = rules_yaml(service, engine_selector='job="vllm"', dcgm_selector="")
    assert "SLO budget burn: fast: e2e threshold 1,500 ms is not a bucket edge" in text
    assert "1,000 ms, 2,000 ms" in text


def test_a_large_threshold_left_out_reads_in_full_not_in_exponent_notation(service, fast_rule):
    slo = service.slos.get()
    slo.e2e_ms = 1_000_000
    slo.save()
    text = rules_yaml(service, engine_selector='job="vllm"', dcgm_selector="")
    assert "e2e threshold 1,000,000 ms is not a bucket edge (nearest: 5,000 ms)" in text

"""The dossier timeline and the chart markers: alerts, deploys, experiments, gate runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.urls import reverse

from alerts.models import AlertEvent, Rule
from dashboards.timeline import time_markers, timeline
from dossiers.models import ConfigVersion, Experiment
from loadtests.importing import promote_load_test
from loadtests.models import GateRun, LoadTest
from tests.factories.catalog import make_baseline

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)


@pytest.fixture
def rule(service):
    return Rule.objects.create(service=service, name="P99 e2e", kind="p99_e2e", threshold=1)


def _event(rule, kind, at, **extra):
    return AlertEvent.objects.create(rule=rule, service=rule.service, kind=kind, at=at, **extra)


def test_the_timeline_merges_everything_newest_first(service, rule):
    baseline = make_baseline(service)
    _event(rule, "firing", T0, value=2500, threshold=2000)
    config = ConfigVersion.objects.create(service=service, version=3, config={}, note="batch 32")
    ConfigVersion.objects.filter(pk=config.pk).update(
        created_at=T0 + timedelta(hours=1), made_current_at=T0 + timedelta(hours=1)
    )
    Experiment.objects.create(
        service=service, title="Batch 32", hypothesis="h", variable_key="max_num_seqs",
        value_from="16", value_to="32", before=baseline, run_on=(T0 - timedelta(days=1)).date(),
    )  # fmt: skip
    candidate = LoadTest.objects.create(
        service=service, label="rc1", format="vllm_bench", content_sha256="0" * 64,
        run_index=0, measured_at=T0,
    )  # fmt: skip
    run = GateRun.objects.create(
        service=service, candidate=candidate, baseline=baseline, verdict="regression", source="cli"
    )
    GateRun.objects.filter(pk=run.pk).update(created_at=T0 + timedelta(hours=2))
    entries = timeline(service=service)
    assert [(e.kind, e.title) for e in entries] == [
        ("gate", "Release gate: regression"),
        ("deploy", "Config v3 deployed"),
        ("alert", "P99 e2e: firing"),
        ("experiment", "Experiment: Batch 32"),
    ]
    assert entries[2].tone == "bad"
    assert entries[2].detail.startswith("2,500 ms against a threshold of 2,000 ms")


def test_an_alert_whose_reason_states_its_figures_is_not_told_twice(service, rule):
    reason = "value 2,500 ms > threshold 2,000 ms for 5 min"
    _event(rule, "firing", T0, value=2500, threshold=2000, reason=reason)
    (entry,) = timeline(service=service)
    assert entry.detail == reason


def test_the_timeline_leaves_out_rule_health_changes(service, rule):
    _event(rule, "no_data", T0)
    _event(rule, "firing", T0 + timedelta(minutes=5))
    assert [e.title for e in timeline(service=service)] == ["P99 e2e: firing"]


def test_charts_mark_alerts_that_fired_and_resolved_but_not_pending_ones(service, rule):
    _event(rule, "pending", T0)
    _event(rule, "firing", T0 + timedelta(minutes=5))
    _event(rule, "resolved", T0 + timedelta(minutes=20))
    markers = time_markers(service=service, start=T0, end=T0 + timedelta(hours=1))
    assert [(m.kind, m.tone) for m in markers] == [("alert", "bad"), ("alert", "ok")]


def test_chart_markers_stay_inside_the_range(service, rule):
    _event(rule, "firing", T0 - timedelta(hours=2))
    assert time_markers(service=service, start=T0, end=T0 + timedelta(hours=1)) == []


def test_a_step_in_the_load_test_history_is_on_the_timeline(service):
    rng = np.random.default_rng(5)
    runs = []
    for night in range(12):
        level = 250.0 if night < 8 else 280.0  # TTFT P50 +12% from the ninth run
        runs.append(
            LoadTest.objects.create(
                service=service, label=f"nightly {night}", format="vllm-bench",
                content_sha256=f"{night:064d}", run_index=0, concurrency=16,
                measured_at=T0 + timedelta(days=night),
                ttft_p50_ms=level * float(np.exp(rng.normal(0, 0.02))),
            )
        )  # fmt: skip
    config = ConfigVersion.objects.create(service=service, version=7, config={})
    ConfigVersion.objects.filter(pk=config.pk).update(created_at=T0 + timedelta(days=7, hours=12))
    (change,) = [e for e in timeline(service=service) if e.kind == "change"]
    assert change.title.startswith("TTFT P50 stepped +1")
    assert change.title.endswith(f"at run #{runs[8].pk}, config v7")
    assert change.at == runs[8].measured_at and change.tone == "bad"
    assert "run 9 of 12" in change.detail


def _config(service, version: int, made: datetime, current_at: datetime | None = None):
    config = ConfigVersion.objects.create(service=service, version=version, config={"v": version})
    ConfigVersion.objects.filter(pk=config.pk).update(created_at=made, made_current_at=current_at)


def test_a_trial_config_never_made_current_is_not_called_deployed(service):
    _config(service, 2, T0, current_at=T0)
    _config(service, 3, T0 + timedelta(days=1))  # a canary trial; v2 stays current
    assert [e.title for e in timeline(service=service)] == [
        "Config v3 recorded, not made current",
        "Config v2 deployed",
    ]


def test_making_an_older_config_current_again_is_a_rollback(service):
    from dossiers.services import config_version_make_current

    _config(service, 2, T0, current_at=T0)
    _config(service, 3, T0 + timedelta(days=1), current_at=T0 + timedelta(days=1))
    config_version_make_current(
        config_version=service.config_versions.get(version=2), at=T0 + timedelta(days=2)
    )
    newest = timeline(service=service)[0]
    assert (newest.title, newest.tone) == ("Config v2 deployed again: rollback from v3", "warn")


def test_the_demo_timeline_agrees_with_the_current_config(demo_fleet, db):
    # Support Chat's dossier keeps v2 current after a v3 canary trial.
    service = demo_fleet.services["support-chat-7b"]
    current = service.config_versions.get(is_current=True).version
    deployed = [e.title for e in timeline(service=service) if " deployed" in e.title]
    assert deployed[0] == f"Config v{current} deployed"


def _promoted_run(service, night: int, batch: str = "") -> LoadTest:
    run = LoadTest.objects.create(
        service=service, label="nightly", format="vllm-bench", content_sha256=f"{night:064d}",
        run_index=0, concurrency=16, measured_at=T0 + timedelta(days=night), e2e_p50_ms=900.0,
        e2e_p90_ms=1000.0, e2e_p99_ms=1200.0, ttft_p50_ms=100.0,
    )  # fmt: skip
    promote_load_test(load_test=run, promotion_batch=batch)
    return run


def test_runs_promoted_together_are_one_baseline_marker(service):
    for night in range(3):
        _promoted_run(service, night, batch="repeats-of-build-42")
    (marker,) = [e for e in timeline(service=service) if e.kind == "baseline"]
    assert marker.title == "3 runs promoted together as one baseline set: “nightly”"


def test_runs_promoted_one_by_one_are_one_marker_each(service):
    for night in range(3):
        _promoted_run(service, night)
    titles = [e.title for e in timeline(service=service) if e.kind == "baseline"]
    assert titles == ["Baseline “nightly” made current"] * 3


def test_the_demo_timeline_ends_with_the_current_baseline_made_current(demo_fleet, db):
    # The 13B's nightly reference set is promoted, then the sweep's batch 16 made current again.
    service = demo_fleet.services["code-review-13b"]
    current = service.baselines.get(is_current=True)
    promotions = [e.title for e in timeline(service=service) if e.kind == "baseline"]
    assert promotions[0] == f"Baseline “{current.label}” made current"
    assert promotions[1].startswith("5 runs promoted together as one baseline set")


def _gate(service, baseline, verdict, at):
    candidate = LoadTest.objects.create(
        service=service, label=f"nightly {at:%d}", format="vllm_bench", content_sha256="0" * 64,
        run_index=GateRun.objects.count(), measured_at=at,
    )  # fmt: skip
    run = GateRun.objects.create(
        service=service, candidate=candidate, baseline=baseline, verdict=verdict, source="cli"
    )
    GateRun.objects.filter(pk=run.pk).update(created_at=at)


def test_passes_in_a_row_are_one_timeline_entry(service):
    baseline = make_baseline(service)
    for night in range(3):
        _gate(service, baseline, "pass", T0 + timedelta(days=night))
    (entry,) = [e for e in timeline(service=service) if e.kind == "gate"]
    assert entry.title == "Release gate: 3 runs passed"
    assert entry.detail.startswith("from 2026-11-20 10:00 to 2026-11-22 10:00 UTC")


def test_a_regression_between_passes_keeps_its_own_entry(service):
    baseline = make_baseline(service)
    for night, verdict in enumerate(("pass", "pass", "regression", "pass", "pass")):
        _gate(service, baseline, verdict, T0 + timedelta(days=night))
    titles = [e.title for e in timeline(service=service) if e.kind == "gate"]
    assert titles == [
        "Release gate: 2 runs passed",
        "Release gate: regression",
        "Release gate: 2 runs passed",
    ]


def test_a_deploy_between_passes_splits_them(service):
    baseline = make_baseline(service)
    _gate(service, baseline, "pass", T0)
    config = ConfigVersion.objects.create(service=service, version=3, config={}, note="batch 32")
    ConfigVersion.objects.filter(pk=config.pk).update(
        created_at=T0 + timedelta(hours=1), made_current_at=T0 + timedelta(hours=1)
    )
    _gate(service, baseline, "pass", T0 + timedelta(hours=2))
    titles = [e.title for e in timeline(service=service) if e.kind in ("gate", "deploy")]
    assert titles == ["Release gate: pass", "Config v3 deployed", "Release gate: pass"]


def test_the_gate_filter_counts_runs_not_entries(client, outsider, service):
    baseline = make_baseline(service)
    for night in range(3):
        _gate(service, baseline, "pass", T0 + timedelta(days=night))
    client.force_login(outsider)
    page = client.get(reverse("dashboards:service_timeline", args=[service.slug])).content
    assert b'value="gate" checked> Gate runs <span class="sub">(3)</span>' in page

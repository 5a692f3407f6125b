"""Migration loadtests 0008: guidellm runs imported before it stored guidellm's own TPOT (first
token included); after it they hold guidellm's ITL, PerfHub's TPOT, as a new import would."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support import migrate, old_service

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("latest_schema_restored"),
]

BEFORE = [
    ("loadtests", "0007_lint_findings_and_fingerprints"),
    ("dossiers", "0011_slo_kind_registry"),
]
AFTER = [("loadtests", "0008_guidellm_tpot_is_its_itl")]
WHEN = datetime(2026, 11, 2, 9, tzinfo=UTC)
OWN_TPOT = {"p50": 9.15, "p90": 10.8, "p95": 11.6, "p99": 12.3, "p999": 12.3}
ITL = {"median": 8.81, "p50": 8.81, "p90": 9.97, "p95": 10.07, "p99": 10.56, "p999": 10.56}


def old_guidellm_run(apps, *, baseline_tpot_p99: float | None = None):
    service = old_service(apps)
    own = {f"tpot_{label}_ms": value for label, value in OWN_TPOT.items()}
    baseline = apps.get_model("dossiers", "Baseline").objects.create(
        service=service, label="promoted", measured_at=WHEN, **own
    )
    if baseline_tpot_p99 is not None:  # edited by hand after promotion
        baseline.tpot_p99_ms = baseline_tpot_p99
        baseline.save()
    sources = {"tpot_p99_ms": "metrics.time_per_output_token_ms.successful.percentiles.p99"}
    return apps.get_model("loadtests", "LoadTest").objects.create(
        service=service, label="guidellm concurrent 4", format="guidellm",
        content_sha256="a" * 64, run_index=0, measured_at=WHEN, promoted_to=baseline,
        extra={"latency_ms": {"tpot": OWN_TPOT, "itl": ITL}, "sources": sources}, **own,
    )  # fmt: skip


def test_an_imported_guidellm_run_and_its_baseline_take_guidellms_itl_as_tpot():
    run = old_guidellm_run(migrate(BEFORE))

    new = migrate(AFTER)
    moved = new.get_model("loadtests", "LoadTest").objects.get(pk=run.pk)
    assert (moved.tpot_p50_ms, moved.tpot_p99_ms) == (8.81, 10.56)
    assert moved.extra["latency_ms"]["latency_per_token"] == OWN_TPOT
    assert "inter_token_latency_ms" in moved.extra["sources"]["tpot_p99_ms"]
    baseline = new.get_model("dossiers", "Baseline").objects.get(pk=run.promoted_to_id)
    assert (baseline.tpot_p50_ms, baseline.tpot_p99_ms) == (8.81, 10.56)


def test_a_baseline_edited_after_promotion_keeps_its_figures():
    run = old_guidellm_run(migrate(BEFORE), baseline_tpot_p99=11.0)

    new = migrate(AFTER)
    baseline = new.get_model("dossiers", "Baseline").objects.get(pk=run.promoted_to_id)
    assert (baseline.tpot_p50_ms, baseline.tpot_p99_ms) == (9.15, 11.0)

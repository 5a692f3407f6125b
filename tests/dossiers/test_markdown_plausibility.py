"""A dossier import cannot bring in an impossible baseline (the gate would compare against it)
or an impossible service setting: refused naming the line and the key, exit 2 for the command,
nothing changed."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.core.management import CommandError, call_command

from dossiers import services
from dossiers.markdown import DossierFormatError, export_dossier, import_dossier
from dossiers.models import Baseline

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def exported(service) -> str:
    services.baseline_record(
        service=service, label="batch 8", measured_at=T0, concurrency=8, output_tps=1000.0,
        gpu_util=0.31, e2e_p50_ms=800.0, e2e_p90_ms=2000.0, e2e_p99_ms=8000.5,
    )  # fmt: skip
    return export_dossier(service)


def _replace_row(text: str, metric: str, values: str) -> str:
    edited, n = re.subn(rf"(?m)^(\s*{metric}: )\[.*\]$", rf"\g<1>{values}", text)
    assert n == 1, f"no {metric} row in the export"
    return edited


def test_a_baseline_whose_percentiles_decrease_is_refused_naming_its_line(exported, service, owner):
    text = _replace_row(exported, "e2e", "[9000, 5000, 2000, 1000, 500]")
    with pytest.raises(DossierFormatError) as refused:
        import_dossier(service=service, text=text, author=owner)
    message = str(refused.value)
    assert re.match(r"line \d+: Baselines > B1: latency_ms\.e2e: P90 \(5000\) is below", message)
    assert Baseline.objects.get().e2e_p50_ms == 800.0  # unchanged


def test_a_baseline_latency_over_a_day_is_refused(exported, service, owner):
    row = "[800, 2000, null, 8000.5, null]\n  ttft: [1.0e+308, null, null, null, null]"
    text = _replace_row(exported, "e2e", row)
    with pytest.raises(DossierFormatError, match=r"latency_ms\.ttft: 1e\+308 is outside"):
        import_dossier(service=service, text=text, author=owner)


def test_a_utilization_over_100_percent_is_refused(exported, service, owner):
    text, n = re.subn(r"(?m)^(\s*gpu_busy_pct: ).*$", r"\g<1>250", exported)
    assert n == 1
    with pytest.raises(DossierFormatError, match=r"gpu_busy_pct: 250 is outside 0..100 %"):
        import_dossier(service=service, text=text, author=owner)


def test_an_impossible_slo_is_refused(exported, service, owner):
    text, n = re.subn(r"(?m)^(\s*slo_p99_e2e_ms: ).*$", r"\g<1>1.0e+308", exported)
    assert n == 1
    with pytest.raises(DossierFormatError, match=r"Service: slo_p99_e2e_ms: 1e\+308 is outside"):
        import_dossier(service=service, text=text, author=owner)


def test_the_command_exits_2(exported, service, tmp_path):
    path = tmp_path / "chat.md"
    path.write_text(_replace_row(exported, "e2e", "[9000, 5000, 2000, 1000, 500]"))
    with pytest.raises(CommandError) as refused:
        call_command("import_dossier", str(path), "--service", service.slug)
    assert refused.value.returncode == 2
    assert "latency_ms.e2e" in str(refused.value)

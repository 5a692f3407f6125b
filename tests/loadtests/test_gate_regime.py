"""The gate compares by workload fingerprint, and its reference set follows the current regime."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from loadtests.gate import run_gate
from loadtests.importing import import_loadtest_file
from loadtests.models import GateRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def c16(fixtures_dir):
    return fixtures_dir / "loadtests" / "vllm-bench-serve-c16.json"


def variant(c16, day: int, *, ttft: float = 1.0, outputs=None) -> bytes:
    data = json.loads(c16.read_text())
    data["date"] = f"202611{day:02d}-101500"
    data["ttfts"] = [t * ttft for t in data["ttfts"]]
    for key in list(data):
        if key.endswith("_ttft_ms") and isinstance(data[key], float):
            data[key] *= ttft
    if outputs is not None:
        data["output_lens"] = outputs(data["output_lens"])
    return json.dumps(data).encode()


def promote(service, content: bytes, name: str) -> None:
    import_loadtest_file(service=service, content=content, filename=name, baseline=True)


def gate(service, content: bytes) -> GateRun:
    return run_gate(service=service, source=GateRun.Source.CLI, candidate_content=content)


def test_same_mean_outputs_of_another_distribution_are_refused(service, c16):
    promote(service, variant(c16, 10), "base.json")

    def spread(lens):  # the same mean, each length pushed away from it
        mean = sum(lens) / len(lens)
        return [round(mean + (x - mean) * 6) if x > 10 else x for x in lens]

    gate_run = gate(service, variant(c16, 11, outputs=spread))
    assert gate_run.verdict == GateRun.Verdict.REFUSED
    assert any("different output length P" in reason for reason in gate_run.reasons)


def test_after_a_regime_change_the_old_baselines_leave_the_set(service, c16):
    for day in (1, 2, 3):
        promote(service, variant(c16, day), f"old-{day}.json")
    promote(service, variant(c16, 4, ttft=2.0), "new.json")
    gate_run = gate(service, variant(c16, 5, ttft=2.0))
    assert [b.label for b in gate_run.baseline_set.all()] == ["vllm bench c=16"]
    assert gate_run.baseline_set.get().source_load_test.source_name == "new.json"


def test_an_identical_build_of_the_new_regime_passes(service, c16):
    for day in (1, 2, 3):
        promote(service, variant(c16, day), f"old-{day}.json")
    promote(service, variant(c16, 4, ttft=2.0), "new.json")
    assert gate(service, variant(c16, 5, ttft=2.0)).verdict == GateRun.Verdict.PASS


def test_promoting_the_new_regime_names_the_baselines_that_leave(service, c16, tmp_path):
    for day in (1, 2):
        promote(service, variant(c16, day), f"old-{day}.json")
    path = tmp_path / "new.json"
    path.write_bytes(variant(c16, 4, ttft=2.0))
    out = StringIO()
    call_command("import_loadtest", str(path), "--service", service.slug, "--baseline", stdout=out)
    assert "leaving the gate's reference set" in out.getvalue()
    assert "significantly worse in" in out.getvalue()


def test_one_regime_keeps_its_whole_history_in_the_set(service, c16):
    for day in (1, 2, 3):
        promote(service, variant(c16, day), f"old-{day}.json")
    gate_run = gate(service, variant(c16, 5))
    assert gate_run.baseline_set.count() == 3

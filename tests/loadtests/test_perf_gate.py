"""manage.py perf_gate --service S FILE: exit 0 pass, 1 regression, 2 bad input."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from loadtests.models import GateRun

pytestmark = pytest.mark.django_db

LATENCY_SUFFIX = "_ms"
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


@pytest.fixture
def c16(fixtures_dir):
    return fixtures_dir / "loadtests" / "vllm-bench-serve-c16.json"


@pytest.fixture
def with_baseline(service, c16):
    call_command("import_loadtest", str(c16), "--service", service.slug, "--baseline")
    return service


def gate(path, slug="chat-7b") -> str:
    out = StringIO()
    call_command("perf_gate", "--service", slug, str(path), stdout=out)
    return out.getvalue()


def edited(c16, tmp_path, change) -> str:
    data = json.loads(c16.read_text())
    change(data)
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(data))
    return path


def scale_ttft(data, factor):
    for key in list(data):
        if key.endswith("_ttft_ms"):
            data[key] *= factor
    data["ttfts"] = [t * factor for t in data["ttfts"]]


def test_an_identical_rerun_passes(with_baseline, c16):
    out = gate(c16)
    assert "PASS" in out
    assert GateRun.objects.get().verdict == "pass"


def test_p99_ttft_up_30_percent_fails_with_exit_1(with_baseline, c16, tmp_path):
    candidate = edited(c16, tmp_path, lambda d: scale_ttft(d, 1.3))
    out = StringIO()
    with pytest.raises(SystemExit) as caught:
        call_command("perf_gate", "--service", "chat-7b", str(candidate), stdout=out)
    assert caught.value.code == 1
    assert "FAIL" in out.getvalue() and "TTFT P50 +20.9 ms (+29.7%)" in out.getvalue()
    assert GateRun.objects.get().verdict == "regression"


def test_a_p99_resting_on_4_requests_says_not_enough_tail_data(with_baseline, c16, tmp_path):
    # 400 requests put 4 beyond the P99: no test can tell a real rise from luck, so the row
    # says so and names the run length that would decide, rather than passing it as noise.
    def tail_only(data):
        data["p99_ttft_ms"] *= 1.3
        data["p99.9_ttft_ms"] = max(data["p99.9_ttft_ms"], data["p99_ttft_ms"])  # possible
        data["ttfts"] = []

    out = gate(edited(c16, tmp_path, tail_only))
    row = next(r for r in GateRun.objects.get().result["rows"] if r["metric"] == "ttft_p99_ms")
    assert row["verdict"] == "not enough data"
    assert "not enough tail data" in row["note"] and "1,000 requests" in row["note"]
    assert "within noise" not in row["note"]
    assert "not enough tail data" in out


def _runs(c16, tmp_path, name, count, change=None) -> list[str]:
    """`count` distinct runs of the c16 file (another date each), optionally changed."""
    paths = []
    for number in range(count):
        data = json.loads(c16.read_text())
        if change:
            change(data)
        data["date"] = f"2026111{number}-10000{number}"
        path = tmp_path / f"{name}-{number}.json"
        path.write_text(json.dumps(data))
        paths.append(str(path))
    return paths


def test_repeats_of_a_build_are_judged_together(service, c16, tmp_path):
    for path in _runs(c16, tmp_path, "baseline", 3):
        call_command("import_loadtest", path, "--service", service.slug, "--baseline")
    repeats = _runs(c16, tmp_path, "candidate", 3, lambda d: scale_ttft(d, 1.3))
    out = StringIO()
    with pytest.raises(SystemExit) as caught:
        call_command("perf_gate", "--service", "chat-7b", *repeats, stdout=out)
    assert caught.value.code == 1
    gate_run = GateRun.objects.get()
    assert gate_run.candidates.count() == 3 and gate_run.baseline_set.count() == 3
    assert "3 baseline runs vs 3 candidate runs" in out.getvalue()
    # 3 x 400 requests a side put 12 beyond the P99: that row is tested now.
    row = next(r for r in gate_run.result["rows"] if r["metric"] == "ttft_p99_ms")
    assert row["test"] == "order statistics" and row["tail"] == 12


def test_the_table_shows_each_rows_test_and_minimum_detectable_effect(with_baseline, c16):
    out = gate(c16)
    header = out.splitlines()[4]
    assert "test" in header and "MDE" in header and "p (Holm)" in header
    ttft = next(line for line in out.splitlines() if line.startswith("TTFT all requests"))
    assert "Hodges-Lehmann / Mann-Whitney" in ttft and "+" in ttft


def test_a_repeat_of_another_shape_is_refused_with_one_line(with_baseline, c16, tmp_path):
    other = edited(c16, tmp_path, lambda d: d.update(max_concurrency=32))
    with pytest.raises(CommandError) as caught:
        call_command("perf_gate", "--service", "chat-7b", str(c16), str(other))
    assert caught.value.returncode == 2
    assert "\n" not in str(caught.value) and "repeats must share one shape" in str(caught.value)


def test_a_2_percent_wobble_passes(with_baseline, c16, tmp_path):
    def wobble(data):
        for key in list(data):
            if key.endswith(LATENCY_SUFFIX) and isinstance(data[key], float):
                data[key] *= 1.02
        data["ttfts"] = [t * 1.02 for t in data["ttfts"]]
        data["output_throughput"] *= 0.98
        data["request_throughput"] *= 0.98

    out = gate(edited(c16, tmp_path, wobble))
    assert "PASS" in out


def test_a_change_in_workload_shape_is_refused_with_exit_2(with_baseline, c16, tmp_path):
    def more_load(data):
        data["max_concurrency"] = 32

    with pytest.raises(CommandError, match="different concurrency: baseline 16, candidate 32") as e:
        gate(edited(c16, tmp_path, more_load))
    assert e.value.returncode == 2
    assert GateRun.objects.get().verdict == "refused"


def test_it_exits_2_without_a_baseline(service, c16):
    with pytest.raises(CommandError, match="no baseline") as caught:
        gate(c16)
    assert caught.value.returncode == 2


def test_it_exits_2_for_an_unknown_service(db, c16):
    with pytest.raises(CommandError, match="unknown service") as caught:
        gate(c16, slug="nope")
    assert caught.value.returncode == 2


def test_it_exits_2_for_a_bad_file_and_stores_nothing(with_baseline, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CommandError, match="not valid JSON") as caught:
        gate(bad)
    assert caught.value.returncode == 2
    assert not GateRun.objects.exists()


def test_a_service_override_loosens_the_threshold(with_baseline, c16, tmp_path):
    with_baseline.gate_overrides = {
        f"ttft_{p}": {"relative": 0.5} for p in ("shift", "p50_ms", "p90_ms", "p99_ms")
    }
    with_baseline.save(update_fields=["gate_overrides"])
    assert "PASS" in gate(edited(c16, tmp_path, lambda d: scale_ttft(d, 1.3)))


def test_it_judges_against_an_older_baseline_of_the_same_shape(service, c16, fixtures_dir):
    sweep = fixtures_dir / "loadtests" / "vllm-bench-concurrency-sweep.jsonl"
    call_command("import_loadtest", str(c16), "--service", service.slug, "--baseline")
    call_command(
        "import_loadtest", str(sweep), "--service", service.slug, "--baseline", "--run", "1"
    )
    gate(c16)
    gate_run = GateRun.objects.get()
    assert gate_run.baseline.concurrency == 16 and not gate_run.baseline.is_current


def test_a_results_folder_is_a_candidate(service, tmp_path):
    """evalscope's run folder, given as a folder: its two data files are one candidate run."""
    folder = REAL / "evalscope" / "e2e-evalscope-1.14.1-no-stream-c2"
    call_command("import_loadtest", str(folder), "--service", service.slug, "--baseline")
    candidate = tmp_path / "parallel_2_number_16"
    candidate.mkdir()
    for path in folder.iterdir():
        (candidate / path.name).write_bytes(path.read_bytes())
    (candidate / "benchmark.log").write_text("INFO done")
    assert "PASS" in gate(candidate)
    assert GateRun.objects.get().verdict == GateRun.Verdict.PASS

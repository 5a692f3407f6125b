"""The demo sweep, the fleet economics and gate_runs_for_service()."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from dossiers import selectors
from loadtests.demo import add_demo_loadtests
from loadtests.gate import run_gate
from loadtests.history import history_changes
from loadtests.importing import import_loadtest_file
from loadtests.models import GateRun, LoadTest
from loadtests.sweeps import sweeps_for_service, sweet_spot

pytestmark = pytest.mark.django_db

# demo/loadtests/code-review-13b/: a 7-setting sweep, and 16 nightly runs of 1,000 requests whose
# TTFT P50 steps up from run 9 on.
SWEEP_RUNS, HISTORY_RUNS, HISTORY_STEP = 7, 16, 9


@pytest.fixture
def thirteen_b(make_service):
    return make_service("code-review-13b", model_params_b=Decimal("13"), slo_p99_e2e_ms=10000)


def test_the_demo_sweep_names_16_on_the_13b_service(thirteen_b, service):
    add_demo_loadtests([service, thirteen_b])
    (sweep,) = sweeps_for_service(thirteen_b)
    assert sweet_spot(sweep, thirteen_b).run.concurrency == 16
    assert not LoadTest.objects.filter(service=service).exists()


def test_adding_the_demo_twice_imports_nothing_new(thirteen_b):
    add_demo_loadtests([thirteen_b])
    add_demo_loadtests([thirteen_b])
    assert LoadTest.objects.filter(service=thirteen_b).count() == SWEEP_RUNS + HISTORY_RUNS


def test_the_demo_history_has_one_change_point_the_ttft_step(thirteen_b):
    add_demo_loadtests([thirteen_b])
    (change,) = history_changes(service=thirteen_b)
    assert change.metric == "ttft_p50_ms" and change.position == HISTORY_STEP
    assert 0.08 < change.relative < 0.16
    assert change.title.startswith("TTFT P50 stepped +1")
    assert f"at run #{change.run.pk}" in change.title


def test_the_demo_gate_fails_the_night_of_the_ttft_step_and_passes_the_nights_before(
    thirteen_b,
):
    add_demo_loadtests([thirteen_b])
    runs = list(GateRun.objects.filter(service=thirteen_b).order_by("created_at"))
    assert len(runs) == HISTORY_RUNS - 5  # the first 5 nights are the reference set
    verdicts = [run.verdict for run in runs]
    night = HISTORY_STEP - 5 - 1  # the step's night among the gated ones
    assert verdicts[night] == GateRun.Verdict.REGRESSION
    assert "TTFT" in runs[night].table.splitlines()[-1]
    assert set(verdicts[:night]) == {GateRun.Verdict.PASS}


def test_the_demo_gate_judges_every_p99_of_a_night(thirteen_b):
    """A thousand requests a night leave ten beyond the P99 on each side (300 left three)."""
    add_demo_loadtests([thirteen_b])
    rows = GateRun.objects.filter(service=thirteen_b).earliest("created_at").result["rows"]
    p99 = {row["label"]: row["test"] for row in rows if "P99" in row["label"]}
    assert p99 == {
        "E2E P99": "t-test over runs",
        "TTFT P99": "order statistics",
        "TPOT P99": "t-test over runs",
    }


def test_the_demo_gate_runs_are_dated_after_their_nights_load_test(thirteen_b):
    add_demo_loadtests([thirteen_b])
    for run in GateRun.objects.filter(service=thirteen_b):
        assert run.created_at - run.candidate.measured_at == timedelta(minutes=10)


def test_the_demo_gate_reference_leaves_the_current_baseline_as_it_was(thirteen_b):
    before = thirteen_b.baselines.get(is_current=True)
    add_demo_loadtests([thirteen_b])
    assert thirteen_b.baselines.get(is_current=True) == before
    assert thirteen_b.baselines.filter(source_load_test__isnull=False).count() == 5


def test_adding_the_demo_twice_runs_the_gate_once(thirteen_b):
    add_demo_loadtests([thirteen_b])
    add_demo_loadtests([thirteen_b])
    assert GateRun.objects.filter(service=thirteen_b).count() == HISTORY_RUNS - 5


def test_fleet_rows_give_cost_margin_and_gpu_hours(make_service, django_assert_num_queries):
    make_service("svc-a", replicas=3)  # baseline: 2,000 output tok/s, 10/GPU-hour
    with django_assert_num_queries(2):
        [row] = selectors.fleet_rows()
    assert round(row.cost_per_mtok, 2) == 1.39 and round(row.margin * 100) == 72
    assert (row.gpu_hours_per_day, row.cost_per_day) == (72.0, 720.0)


def test_gate_runs_for_service_filters_by_time(service, fixtures_dir):
    c16 = (fixtures_dir / "loadtests" / "vllm-bench-serve-c16.json").read_bytes()
    import_loadtest_file(service=service, content=c16, baseline=True)
    old = run_gate(service=service, source="cli", candidate_content=c16)
    GateRun.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=3))
    new = run_gate(service=service, source="api", candidate_content=c16)
    since = timezone.now() - timedelta(days=1)
    assert list(selectors.gate_runs_for_service(service)) == [new, old]
    assert list(selectors.gate_runs_for_service(service, start=since)) == [new]
    assert list(selectors.gate_runs_for_service(service, end=since)) == [old]

"""loadtests.import_loadtest_file and promote_load_test."""

import pytest

from analysis import sketches
from dossiers.models import Baseline
from loadtests.importing import LoadTestImportError, import_loadtest_file, promote_load_test
from loadtests.models import LoadTest

pytestmark = pytest.mark.django_db

FILES = {
    "vllm-bench-serve-c16.json": 1,
    "vllm-bench-concurrency-sweep.jsonl": 7,
    "genai-perf-profile_export_genai_perf.json": 1,
    "guidellm-sweep-benchmarks.json": 7,
    "llmperf-summary.json": 1,
}


def load(fixtures_dir, name):
    return (fixtures_dir / "loadtests" / name).read_bytes()


@pytest.mark.parametrize(("name", "count"), FILES.items())
def test_it_imports_every_fixture_format(service, fixtures_dir, name, count):
    runs = import_loadtest_file(service=service, content=load(fixtures_dir, name), filename=name)
    assert len(runs) == count == LoadTest.objects.filter(service=service).count()


def test_missing_percentiles_stay_missing(service, fixtures_dir):
    name = "vllm-bench-concurrency-sweep.jsonl"
    run = import_loadtest_file(service=service, content=load(fixtures_dir, name))[0]
    run.refresh_from_db()
    # TPOT: the file writes its median and P99 and has no `itls` to compute the others from.
    assert run.tpot_p99_ms is not None and run.tpot_p90_ms is None


def test_per_request_arrays_are_kept_as_sketches(service, fixtures_dir):
    name = "vllm-bench-serve-c16.json"
    run = import_loadtest_file(service=service, content=load(fixtures_dir, name))[0]
    stored = run.sketches.get(family="ttft")
    sketch = sketches.loads(bytes(stored.sketch))
    assert stored.count == 400
    # The file's P99 comes from the same 400 requests: the sketch is within its 1.08% accuracy.
    assert sketch.get_quantile_value(0.99) == pytest.approx(run.ttft_p99_ms, rel=0.03)


def test_a_file_that_fails_stores_nothing(service, fixtures_dir):
    lines = load(fixtures_dir, "vllm-bench-concurrency-sweep.jsonl").decode().splitlines()
    lines[-1] = lines[-1].replace('"max_concurrency": 64', '"max_concurrency": -64')
    with pytest.raises(LoadTestImportError, match="line 7"):
        import_loadtest_file(service=service, content="\n".join(lines).encode())
    assert not LoadTest.objects.exists()


def test_the_same_file_for_another_service_is_imported_again(service, make_service, fixtures_dir):
    other = make_service("other-svc")
    content = load(fixtures_dir, "llmperf-summary.json")
    import_loadtest_file(service=service, content=content)
    runs = import_loadtest_file(service=other, content=content)
    assert runs[0].just_created and LoadTest.objects.count() == 2


def test_promoting_a_run_makes_a_linked_current_baseline(service, fixtures_dir, owner):
    run = import_loadtest_file(service=service, content=load(fixtures_dir, "llmperf-summary.json"))[
        0
    ]
    baseline = promote_load_test(load_test=run, user=owner)
    assert (baseline.is_current, baseline.source_load_test, baseline.created_by) == (
        True,
        run,
        owner,
    )
    assert baseline.output_tps == run.output_tps and baseline.e2e_p99_ms == run.e2e_p99_ms


def test_promoting_twice_reuses_the_baseline(service, fixtures_dir):
    run = import_loadtest_file(service=service, content=load(fixtures_dir, "llmperf-summary.json"))[
        0
    ]
    promote_load_test(load_test=run)
    promote_load_test(load_test=run)
    assert Baseline.objects.count() == 1


def test_baseline_true_with_a_run_number_out_of_range_is_refused(service, fixtures_dir):
    content = load(fixtures_dir, "guidellm-sweep-benchmarks.json")
    with pytest.raises(LoadTestImportError, match="run 9 does not exist"):
        import_loadtest_file(service=service, content=content, baseline=True, baseline_run=9)
    assert not LoadTest.objects.exists()

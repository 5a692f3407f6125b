"""manage.py import_loadtest FILE [FILE ...] --service S [--baseline [--run N]] [--format F]."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from dossiers.models import Baseline
from loadtests.models import LoadTest

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command("import_loadtest", *map(str, args), stdout=out)
    return out.getvalue()


@pytest.fixture
def c16(fixtures_dir):
    return fixtures_dir / "loadtests" / "vllm-bench-serve-c16.json"


@pytest.fixture
def sweep_file(fixtures_dir):
    return fixtures_dir / "loadtests" / "vllm-bench-concurrency-sweep.jsonl"


def test_it_imports_a_file_and_says_what_it_stored(service, c16):
    out = run(c16, "--service", service.slug)
    assert "1 run in" in out and "(vllm-bench), 1 new" in out
    assert LoadTest.objects.get(service=service).output_tps == pytest.approx(807.28, abs=0.01)


def test_it_promotes_the_run_with_baseline(service, c16):
    out = run(c16, "--service", service.slug, "--baseline")
    baseline = Baseline.objects.get(service=service)
    assert baseline.is_current and baseline.source_load_test == LoadTest.objects.get()
    assert "-> current baseline" in out


def _repeat(c16, tmp_path, number: int):
    data = json.loads(c16.read_text())
    data["date"] = f"2026111{number}-101500"
    path = tmp_path / f"repeat-{number}.json"
    path.write_text(json.dumps(data))
    return path


def test_several_files_are_promoted_together_as_a_baseline_set(service, c16, tmp_path):
    files = [_repeat(c16, tmp_path, n) for n in range(3)]
    run(*files, "--service", service.slug, "--baseline")
    assert Baseline.objects.filter(service=service).count() == 3
    assert Baseline.objects.get(is_current=True).source_load_test.source_name == "repeat-2.json"


def test_a_bad_file_among_several_imports_none_of_them(service, c16, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(CommandError, match=r"bad\.json") as caught:
        run(_repeat(c16, tmp_path, 0), bad, "--service", service.slug, "--baseline")
    assert caught.value.returncode == 2
    assert not LoadTest.objects.exists()


def test_a_second_import_of_the_same_file_is_a_no_op(service, c16):
    run(c16, "--service", service.slug)
    out = run(c16, "--service", service.slug)
    assert "0 new, 1 already imported" in out
    assert LoadTest.objects.count() == 1


def test_it_exits_2_for_an_unknown_service(db, c16):
    with pytest.raises(CommandError, match="unknown service 'nope'") as caught:
        run(c16, "--service", "nope")
    assert caught.value.returncode == 2


def test_it_exits_2_naming_the_line_of_a_bad_file(service, tmp_path, sweep_file):
    lines = sweep_file.read_text().splitlines()
    lines[2] = lines[2].replace('"output_throughput": ', '"output_throughput": "fast", "x": ')
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines))
    with pytest.raises(CommandError, match="line 3") as caught:
        run(bad, "--service", service.slug)
    assert caught.value.returncode == 2
    assert not LoadTest.objects.exists()


def test_baseline_from_a_file_of_several_runs_needs_a_run_number(service, sweep_file):
    with pytest.raises(CommandError, match="holds 7 runs") as caught:
        run(sweep_file, "--service", service.slug, "--baseline")
    assert caught.value.returncode == 2
    assert not LoadTest.objects.exists()


def test_run_n_promotes_that_run_of_the_file(service, sweep_file):
    run(sweep_file, "--service", service.slug, "--baseline", "--run", "5")
    assert Baseline.objects.get(is_current=True).concurrency == 16


def test_format_forces_the_parser(service, c16):
    with pytest.raises(CommandError, match="guidellm") as caught:
        run(c16, "--service", service.slug, "--format", "guidellm")
    assert caught.value.returncode == 2

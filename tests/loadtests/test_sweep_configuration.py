"""A sweep is one serving configuration at several loads: runs of another model, serving stack
or `vllm bench sweep` server parameter make another sweep (loadtests.configuration).

The sweep folder is real: `vllm bench sweep serve` (vLLM 0.32.0, CPU) starting the server with
--max-num-seqs 1 and then 4, each benchmarked three times at concurrency 1, 2 and 4
(SOURCES.md)."""

import json
import math
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from loadtests import configuration
from loadtests.formats import LoadTestFormatError, parse_loadtest
from loadtests.formats.base import arrival
from loadtests.importing import import_loadtest_files, prepare_files
from loadtests.models import LoadTest
from loadtests.sweeps import sweeps_for_service
from planning.objectives import Objective
from planning.plan import plan_for

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "vllm-bench"
FOLDER = REAL / "e2e-vllm-0.32.0-cpu-sweep-max_num_seqs.tar.gz"
RUN = REAL / "er0080-sweep-max_num_seqs4-run0.json"
PLAIN = REAL / "er0080-bench_serve_v0.25.1.json"
# `vllm bench serve --metadata tp=1 gpu=cpu` (and tp=2) at rates 4 and 8, against one server.
LABELLED = REAL / "e2e-vllm-0.32.0-cpu-metadata-rates.tar.gz"


def import_folder(service) -> list[LoadTest]:
    return import_loadtest_files(service=service, files=[(FOLDER.read_bytes(), FOLDER.name)])


# -- what a file records -------------------------------------------------------------------------


def test_a_vllm_sweep_run_records_the_server_parameter_it_set():
    (run,) = parse_loadtest(RUN.read_bytes())
    assert run.extra["overrides"] == {"max_num_seqs": 4}


def test_vllm_bench_serve_metadata_is_recorded():
    files = prepare_files([(LABELLED.read_bytes(), LABELLED.name)])
    metadata = {json.dumps(parse_loadtest(content)[0].extra["metadata"]) for content, _ in files}
    assert metadata == {'{"tp": "1", "gpu": "cpu"}', '{"tp": "2", "gpu": "cpu"}'}


def test_the_load_a_vllm_sweep_set_is_not_an_override():
    """`max_concurrency` is the swept load: runs differing in it belong on one curve."""
    data = json.loads(RUN.read_bytes())
    data["max-concurrency"] = 8  # its parameter files may spell keys with dashes
    (run,) = parse_loadtest(json.dumps(data).encode())
    assert "max-concurrency" not in run.extra["overrides"]


def test_a_sweep_file_rewritten_with_sorted_keys_records_none_of_vllms_own_keys():
    """Sorted, vLLM's `std_*`, `tokenizer_id` and `total_*` keys come after `run_number`:
    read as parameters, every run would be a configuration of its own."""
    data = json.loads(RUN.read_bytes())
    (run,) = parse_loadtest(json.dumps(data, sort_keys=True).encode())
    assert "overrides" not in run.extra


def test_a_plain_vllm_bench_file_records_no_overrides():
    (run,) = parse_loadtest(PLAIN.read_bytes())
    assert "overrides" not in run.extra


def test_a_nested_server_option_is_kept_as_its_json():
    data = json.loads(RUN.read_bytes())
    data["compilation_config"] = {"level": 0, "cudagraph": [1, 2]}
    (run,) = parse_loadtest(json.dumps(data).encode())
    assert run.extra["overrides"]["compilation_config"] == '{"cudagraph":[1,2],"level":0}'


def test_a_non_finite_override_is_refused_naming_it():
    data = json.loads(RUN.read_bytes())
    data["max_num_seqs"] = math.nan
    with pytest.raises(LoadTestFormatError, match=r"max_num_seqs.*finite"):
        parse_loadtest(json.dumps(data).encode())


def test_a_file_with_hundreds_of_overrides_is_refused():
    data = json.loads(RUN.read_bytes())
    data.update({f"option_{i}": i for i in range(200)})
    with pytest.raises(LoadTestFormatError, match="more than 64 sweep parameters"):
        parse_loadtest(json.dumps(data).encode())


# -- the rule ------------------------------------------------------------------------------------


def test_configurations_that_record_different_models_differ():
    a = configuration.configuration({"model_id": "meta-llama/Llama-3.1-8B"})
    b = configuration.configuration({"model_id": "Qwen/Qwen3-8B"})
    assert not configuration.same_configuration(a, b)


def test_a_run_naming_no_model_joins_a_sweep_of_any():
    a = configuration.configuration({"model": "m"})
    assert configuration.same_configuration(a, configuration.configuration({}))


def test_a_run_without_parameters_ran_the_defaults_not_the_parameters_of_another():
    a = configuration.configuration({"model": "m", "overrides": {"max_num_seqs": 4}})
    assert not configuration.same_configuration(a, configuration.configuration({"model": "m"}))


def test_an_llmd_stack_on_another_engine_version_differs():
    stack = [{"kind": "inference_engine", "tool": "vllm", "tool_version": "0.10.0"}]
    newer = [{**stack[0], "tool_version": "0.11.0"}]
    assert not configuration.same_configuration(
        configuration.configuration({"stack": stack}),
        configuration.configuration({"stack": newer}),
    )


def test_an_llmd_stack_gives_the_model_its_components_serve():
    stack = [{"tool": "vllm", "model": "Qwen/Qwen3-0.6B"}, {"tool": "router"}]
    assert configuration.configuration({"stack": stack})["model"] == "Qwen/Qwen3-0.6B"


# -- stored --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_two_server_configurations_of_one_folder_make_two_sweeps(service):
    assert len(import_folder(service)) == 18
    sweeps = sweeps_for_service(service)
    assert sorted(sweep.configuration["overrides"] for sweep in sweeps) == [
        "max_num_seqs=1",
        "max_num_seqs=4",
    ]
    assert all([run.concurrency for run in sweep.runs] == [1, 2, 4] for sweep in sweeps)
    assert [len(sweep.replicates) for sweep in sweeps] == [6, 6]


@pytest.mark.django_db
def test_runs_labelled_with_other_metadata_make_other_sweeps(service):
    import_loadtest_files(service=service, files=[(LABELLED.read_bytes(), LABELLED.name)])
    sweeps = sweeps_for_service(service)
    assert sorted(sweep.configuration["metadata"] for sweep in sweeps) == [
        "gpu=cpu, tp=1",
        "gpu=cpu, tp=2",
    ]


def relabelled(old: str, new: str) -> list[tuple[bytes, str]]:
    """The labelled folder's files with the `--metadata` key `old` renamed `new`."""
    files = []
    for content, name in prepare_files([(LABELLED.read_bytes(), LABELLED.name)]):
        # In place: vLLM's files say which keys are metadata by where they stand.
        data = {new if key == old else key: value for key, value in json.loads(content).items()}
        files.append((json.dumps(data).encode(), name))
    return files


@pytest.mark.django_db
@pytest.mark.parametrize("label", ["run", "Trial", "run-id", "repeat"])
def test_runs_numbered_as_repeats_are_one_sweep_measured_twice(service, label):
    """`--metadata run=1` and `run=2` number two repeats of one measurement: one sweep, each
    rate measured again (the run-to-run noise), not a sweep of one configuration per repeat."""
    import_loadtest_files(service=service, files=relabelled("tp", label))
    (sweep,) = sweeps_for_service(service)
    assert ([run.request_rate for run in sweep.runs], len(sweep.replicates)) == ([4, 8], 2)


@pytest.mark.django_db
def test_a_repeat_label_a_team_names_in_the_settings_is_one_sweep(service, settings):
    settings.PERFHUB_REPEAT_LABELS = ["Pass"]
    import_loadtest_files(service=service, files=relabelled("tp", "pass"))
    (sweep,) = sweeps_for_service(service)
    assert len(sweep.replicates) == 2


@pytest.mark.django_db
def test_a_label_no_setting_names_is_still_a_parameter(service):
    import_loadtest_files(service=service, files=relabelled("tp", "pass"))
    assert len(sweeps_for_service(service)) == 2


@pytest.mark.django_db
def test_a_label_that_only_contains_a_repeat_word_is_still_a_parameter(service):
    import_loadtest_files(service=service, files=relabelled("tp", "runtime"))
    assert len(sweeps_for_service(service)) == 2


@pytest.mark.django_db
def test_a_sweeps_title_names_its_configuration(service):
    import_folder(service)
    titles = sorted(sweep.title for sweep in sweeps_for_service(service))
    assert "tiny-llama / max_num_seqs=1" in titles[0]
    assert "tiny-llama / max_num_seqs=4" in titles[1]


@pytest.mark.django_db
def test_the_plan_reads_one_configurations_runs(service):
    import_folder(service)
    plan = plan_for(service, objectives=[Objective("e2e", "p99", 10_000.0)], load=1.0)
    used = LoadTest.objects.filter(pk__in=plan.runs)
    assert len({json.dumps(run.extra["overrides"]) for run in used}) == 1


@pytest.mark.django_db
def test_grouping_a_services_sweeps_reads_runs_in_one_query(service, django_assert_num_queries):
    import_folder(service)
    with django_assert_num_queries(1):
        sweeps_for_service(service)


@pytest.mark.django_db
def test_a_runs_page_lists_the_sweep_parameters(owner_client, service):
    run = import_folder(service)[0]
    page = owner_client.get(run.get_absolute_url()).content.decode()
    table = page.partition('id="sweep-parameters"')[2].partition("</section>")[0]
    assert "<code>max_num_seqs</code>" in table


@pytest.mark.django_db
def test_the_import_command_says_which_sweeps_the_runs_made(service):
    out = StringIO()
    call_command("import_loadtest", str(FOLDER), "--service", service.slug, stdout=out)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("sweep: ")]
    assert [("max_num_seqs=1" in line, "concurrency 1, 2, 4" in line) for line in lines] == [
        (True, True),
        (False, True),
    ]


@pytest.mark.django_db
def test_a_sweeps_page_links_to_the_plan_from_that_sweep(owner_client, service):
    import_folder(service)
    sweep = sweeps_for_service(service)[1]
    page = owner_client.get(reverse("loadtests:sweep", args=[service.slug, sweep.key]))
    assert f'planner/?sweep={sweep.key}" id="plan-from-sweep"' in page.content.decode()


# -- how the requests arrived -------------------------------------------------------------------

BURSTY = REAL / "e2e-vllm-0.32.0-cpu-rate10-burstiness-0.3.json"
APPENDED = REAL / "e2e-vllm-0.32.0-cpu-append-result.jsonl"  # line 1: 10 req/s, Poisson


def config_of(path: Path, run: int = 0) -> dict[str, str]:
    return configuration.configuration(
        parse_loadtest(path.read_bytes(), filename=path.name)[run].extra
    )


def test_a_bursty_vllm_run_records_its_gamma_arrivals():
    assert config_of(BURSTY)["arrival"] == "gamma arrivals, burstiness 0.3"


def test_a_bursty_run_is_not_a_repeat_of_a_poisson_run_at_its_rate():
    poisson = config_of(APPENDED)
    assert "arrival" not in poisson
    assert not configuration.same_configuration(config_of(BURSTY), poisson)


@pytest.mark.parametrize(
    "pattern, burstiness, expected",
    [
        ("poisson", None, None),
        ("gamma", 1.0, None),
        ("gamma", 0.5, "gamma arrivals, burstiness 0.5"),
        ("constant", None, "constant arrivals"),
    ],
)
def test_every_tools_arrival_pattern_is_named_one_way(pattern, burstiness, expected):
    assert arrival(pattern, burstiness) == expected


def test_an_aiperf_gamma_run_records_its_smoothness_as_vllms_burstiness():
    path = (
        REAL.parent / "genai-perf" / "e2e-aiperf-0.13.0-rate6-gamma-0.5-profile_export_aiperf.json"
    )
    assert config_of(path)["arrival"] == "gamma arrivals, burstiness 0.5"


# -- the client that measured the runs ----------------------------------------------------------

SGLANG = REAL.parent / "sglang-bench"
# `vllm bench serve` at concurrency 2, 4 and 8, and SGLang's bench_serving at concurrency 4, of
# the same workload (128 prompt, 32 output tokens, unlimited rate) against the same tiny model.
VLLM_C248 = REAL / "e2e-vllm-0.32.0-cpu-c2-c4-c8-append-result.jsonl"
SGLANG_C4 = SGLANG / "e2e-sglang-0.5.23-c4-details.jsonl"


def import_both_clients(service) -> None:
    import_loadtest_files(
        service=service,
        files=[(VLLM_C248.read_bytes(), VLLM_C248.name), (SGLANG_C4.read_bytes(), SGLANG_C4.name)],
    )


@pytest.mark.django_db
def test_sglang_run_at_a_vllm_sweeps_load_is_not_a_point_of_that_sweep(service):
    # Before, SGLang's c=4 run (newer: it has no date, so it is dated at the import) stood for
    # concurrency 4 in vLLM's sweep, its TTFT P50 29 ms beside vLLM's 111 ms.
    import_both_clients(service)
    (sweep,) = sweeps_for_service(service)
    assert [run.label for run in sweep.every_run] == [
        "vllm bench c=2",
        "vllm bench c=4",
        "vllm bench c=8",
    ]


@pytest.mark.django_db
def test_an_sglang_sweep_is_titled_with_its_client(service):
    path = SGLANG / "e2e-sglang-0.5.23-rate-sweep.jsonl"
    import_loadtest_files(service=service, files=[(path.read_bytes(), path.name)])
    (sweep,) = sweeps_for_service(service)
    assert sweep.title.startswith("vllm-bench rate sweep by sglang.bench_serving, ")


@pytest.mark.django_db
def test_a_vllm_sweeps_title_is_as_before(service):
    import_both_clients(service)
    (sweep,) = sweeps_for_service(service)
    assert sweep.title.startswith("vllm-bench concurrency sweep, tiny-llama, ")


# -- an llm-d report's harness is its client ------------------------------------------------------

LLMD = REAL.parent / "llm-d-report"
# guidellm 0.8.1 at concurrency 1, 4 and 8 (~128 prompt, 32 output tokens, unlimited rate), and
# `vllm bench serve` at concurrency 4 of that workload against the same tiny model, each
# converted by llm-d-benchmark's own converter (SOURCES.md).
GUIDELLM_C148 = sorted((LLMD / "e2e-guidellm-0.8.1-concurrent-sweep").glob("*_v0.2,_*"))
VLLM_C4 = LLMD / "e2e-vllm-0.32.0-c4" / "benchmark_report_v0.2,_c4.json.yaml"


def import_both_harnesses(service) -> None:
    files = [(path.read_bytes(), path.name) for path in [*GUIDELLM_C148, VLLM_C4]]
    import_loadtest_files(service=service, files=files)


@pytest.mark.django_db
def test_vllm_benchmark_report_at_a_guidellm_sweeps_load_is_not_a_point_of_that_sweep(service):
    # Before, vLLM's c=4 report (newer) stood for concurrency 4 in guidellm's sweep, its TTFT
    # P50 73 ms beside guidellm's 12 and 35 ms, and guidellm's own c=4 run was a replicate.
    import_both_harnesses(service)
    (sweep,) = sweeps_for_service(service)
    assert [run.label for run in sweep.every_run] == [
        "llm-d report (guidellm stage 0) c=1",
        "llm-d report (guidellm stage 1) c=4",
        "llm-d report (guidellm stage 2) c=8",
    ]


@pytest.mark.django_db
def test_an_llmd_report_sweep_is_titled_with_its_harness(service):
    import_both_harnesses(service)
    (sweep,) = sweeps_for_service(service)
    assert sweep.title.startswith("llm-d-report concurrency sweep by guidellm, ")


def test_an_llmd_report_naming_no_harness_has_no_client():
    assert configuration.client({"harness": "unknown"}) is None
    assert configuration.client({"harness": "inference-perf"}) == "inference-perf"


def test_a_run_served_from_a_local_path_is_not_called_another_model():
    assert (
        configuration.other_model({"model": "/models/current"}, "meta-llama/Llama-2-13b-chat-hf")
        is None
    )


def test_a_run_naming_another_hub_model_is_called_another_model():
    recorded = {"model": "meta-llama/Llama-2-13b-chat-hf"}

    assert (
        configuration.other_model(recorded, "codellama/CodeLlama-13b-Instruct-hf")
        == recorded["model"]
    )

"""Load-test pages: list, upload, one run, promotion, sweeps with the sweet spot, gate runs."""

import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from dossiers.models import Baseline
from loadtests.gate import run_gate
from loadtests.importing import MAX_UPLOAD_FILES, import_loadtest_file
from loadtests.models import LoadTest

pytestmark = pytest.mark.django_db


def content(fixtures_dir, name):
    return (fixtures_dir / "loadtests" / name).read_bytes()


@pytest.fixture
def no_slo(service):
    service.slo_p99_e2e_ms = None
    service.save(update_fields=["slo_p99_e2e_ms"])
    return service


@pytest.fixture
def vllm_sweep(no_slo, fixtures_dir):
    return import_loadtest_file(
        service=no_slo,
        content=content(fixtures_dir, "vllm-bench-concurrency-sweep.jsonl"),
        filename="vllm-bench-concurrency-sweep.jsonl",
    )


def test_the_list_shows_runs_with_cost_per_mtok(owner_client, vllm_sweep):
    response = owner_client.get(reverse("loadtests:list", args=["chat-7b"]))
    assert response.status_code == 200
    assert b"vllm bench c=64 (sweep)" in response.content
    # c=16: 794.66 output tok/s on one GPU at 10/hour -> 3.50 per million output tokens.
    assert b"3.50" in response.content


def test_the_list_shows_a_throughput_of_float_noise_as_the_whole_number_it_is(
    owner_client, vllm_sweep
):
    # 36 req/s x 48.0 tokens computes to 1727.9999999999998: it read "1,728.0" beside "1,536".
    LoadTest.objects.filter(pk=vllm_sweep[0].pk).update(output_tps=36 * 48 * (1 - 1e-16))
    page = owner_client.get(reverse("loadtests:list", args=["chat-7b"])).content.decode()
    assert '<td class="num">1,728</td>' in page
    assert "1,728.0" not in page


def test_the_list_reads_in_a_fixed_number_of_queries(
    owner_client, vllm_sweep, django_assert_max_num_queries
):
    with django_assert_max_num_queries(8):
        owner_client.get(reverse("loadtests:list", args=["chat-7b"]))


def test_the_vllm_sweep_names_concurrency_16(owner_client, vllm_sweep):
    response = owner_client.get(reverse("loadtests:sweep", args=["chat-7b", vllm_sweep[0].pk]))
    assert response.context["spot"].run.concurrency == 16
    assert b"Sweet spot: <strong>concurrency 16</strong>" in response.content
    assert "16 -&gt; 32: throughput +20% for latency x1.53; elasticity 0.43 &lt; 1" in (
        response.content.decode()
    )


def test_the_sweep_page_draws_a_plotly_chart_with_the_slo_line(owner_client, service, fixtures_dir):
    service.slo_p99_e2e_ms = 20000
    service.save(update_fields=["slo_p99_e2e_ms"])
    runs = import_loadtest_file(
        service=service, content=content(fixtures_dir, "vllm-bench-concurrency-sweep.jsonl")
    )
    body = owner_client.get(reverse("loadtests:sweep", args=["chat-7b", runs[0].pk])).content
    assert b"plotly/plotly.min.js" in body and b'data-figure-json="sweep-chart-data"' in body
    assert b"SLO P99 20,000 ms" in body and b"sweet spot: c=16" in body


def test_the_guidellm_sweep_names_rate_6(owner_client, no_slo, fixtures_dir):
    runs = import_loadtest_file(
        service=no_slo, content=content(fixtures_dir, "guidellm-sweep-benchmarks.json")
    )
    response = owner_client.get(reverse("loadtests:sweep", args=["chat-7b", runs[2].pk]))
    assert response.context["spot"].run.request_rate == 6


def test_a_single_run_has_no_sweep_page(owner_client, service, fixtures_dir):
    run = import_loadtest_file(
        service=service, content=content(fixtures_dir, "llmperf-summary.json")
    )[0]
    assert owner_client.get(reverse("loadtests:sweep", args=["chat-7b", run.pk])).status_code == 404


def test_an_owner_uploads_a_file(owner_client, service, fixtures_dir):
    upload = SimpleUploadedFile("summary.json", content(fixtures_dir, "llmperf-summary.json"))
    response = owner_client.post(reverse("loadtests:upload", args=["chat-7b"]), {"file": upload})
    run = LoadTest.objects.get()
    assert response.status_code == 302 and response["Location"] == run.get_absolute_url()
    assert (run.format, run.origin, run.source_name) == ("llmperf", "web", "summary.json")


def test_an_upload_of_a_bad_file_shows_the_parsers_message(owner_client, service):
    upload = SimpleUploadedFile("x.json", b'{"benchmarks": 3}')
    response = owner_client.post(
        reverse("loadtests:upload", args=["chat-7b"]), {"file": upload, "format": "guidellm"}
    )
    assert response.status_code == 200
    assert "guidellm: benchmarks" in str(response.context["form"].errors["file"])
    assert not LoadTest.objects.exists()


REAL_IPERF = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "inference-perf"


def stage_uploads(*stages: int) -> list[SimpleUploadedFile]:
    names = [f"e2e-inference-perf-0.7.0-rate-stage_{n}_lifecycle_metrics.json" for n in stages]
    return [SimpleUploadedFile(name, (REAL_IPERF / name).read_bytes()) for name in names]


def test_an_owner_uploads_a_sweeps_stage_files_at_once(owner_client, service):
    response = owner_client.post(
        reverse("loadtests:upload", args=["chat-7b"]), {"file": stage_uploads(0, 1, 2)}
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("loadtests:list", args=["chat-7b"])
    rates = sorted(LoadTest.objects.values_list("request_rate", flat=True))
    assert rates == [1.0, 3.0, 6.0]


def test_one_bad_file_among_several_stores_none_and_names_it(owner_client, service):
    bad = SimpleUploadedFile("stage_9_lifecycle_metrics.json", b'{"load_summary": {}}')
    response = owner_client.post(
        reverse("loadtests:upload", args=["chat-7b"]), {"file": [*stage_uploads(0, 1), bad]}
    )
    assert response.status_code == 200
    errors = str(response.context["form"].errors["file"])
    assert "stage_9_lifecycle_metrics.json: " in errors
    assert not LoadTest.objects.exists()


def test_an_upload_of_too_many_files_is_refused(owner_client, service, settings):
    uploads = [SimpleUploadedFile(f"f{n}.json", b"{}") for n in range(MAX_UPLOAD_FILES + 1)]
    response = owner_client.post(reverse("loadtests:upload", args=["chat-7b"]), {"file": uploads})
    assert f"At most {MAX_UPLOAD_FILES} files" in str(response.context["form"].errors["file"])


def test_several_files_uploaded_as_baseline_become_one_baseline_set(owner_client, service):
    response = owner_client.post(
        reverse("loadtests:upload", args=["chat-7b"]),
        {"file": stage_uploads(1, 2), "baseline": "on"},
    )
    assert response.status_code == 302
    runs = LoadTest.objects.filter(service=service)
    assert all(run.promoted_to is not None for run in runs)
    batches = {run.promotion_batch for run in runs}
    assert len(batches) == 1 and batches != {""}


def test_the_run_page_shows_what_the_parser_noted_about_its_numbers(owner_client, service):
    (upload,) = stage_uploads(1)
    (run,) = import_loadtest_file(service=service, content=upload.read(), filename=upload.name)
    page = owner_client.get(run.get_absolute_url()).content.decode()
    notes = page[page.index('id="file-notes"') :]
    assert "the server 32.62 (usage): output tokens and throughput are the server" in notes


def test_an_outsider_cannot_upload(outsider_client, service):
    assert outsider_client.get(reverse("loadtests:upload", args=["chat-7b"])).status_code == 403


def test_the_run_page_shows_both_token_bases(owner_client, service, fixtures_dir):
    run = import_loadtest_file(
        service=service, content=content(fixtures_dir, "vllm-bench-serve-c16.json")
    )[0]
    response = owner_client.get(run.get_absolute_url())
    assert response.context["economics"].output.cost_per_mtok == pytest.approx(
        10 * 1e6 / run.output_tps / 3600
    )
    assert response.context["economics"].total.cost_per_mtok < (
        response.context["economics"].output.cost_per_mtok
    )
    assert b"TTFT over 400 requests" in response.content


def test_a_run_no_gate_compared_says_so_in_words(owner_client, service, fixtures_dir):
    # A bullet reading "None." looked like a value the page failed to fill in.
    run = import_loadtest_file(
        service=service, content=content(fixtures_dir, "vllm-bench-serve-c16.json")
    )[0]
    page = owner_client.get(run.get_absolute_url()).content.decode()
    gate = page[page.index("Gate runs with this candidate") :]
    assert "No release-gate run has compared this load test" in gate
    assert "None." not in gate


def test_a_run_without_gpu_figures_says_where_they_would_come_from(
    owner_client, service, fixtures_dir
):
    # vllm bench serve measures from the client: its file has no GPU-Util, SM, DRAM or memory.
    run = import_loadtest_file(
        service=service, content=content(fixtures_dir, "vllm-bench-serve-c16.json")
    )[0]
    assert run.gpu_util is None and run.mem_kv_bytes is None
    page = owner_client.get(run.get_absolute_url()).content.decode()
    assert "No GPU figures for this run" in page


def test_an_owner_promotes_a_run(owner_client, service, fixtures_dir):
    run = import_loadtest_file(
        service=service, content=content(fixtures_dir, "llmperf-summary.json")
    )[0]
    owner_client.post(reverse("loadtests:promote", args=["chat-7b", run.pk]))
    assert Baseline.objects.get(is_current=True).source_load_test == run


def test_an_outsider_cannot_promote(outsider_client, service, fixtures_dir):
    run = import_loadtest_file(
        service=service, content=content(fixtures_dir, "llmperf-summary.json")
    )[0]
    response = outsider_client.post(reverse("loadtests:promote", args=["chat-7b", run.pk]))
    assert response.status_code == 403 and not Baseline.objects.exists()


def test_the_gate_runs_page_lists_each_run(owner_client, service, fixtures_dir):
    c16 = content(fixtures_dir, "vllm-bench-serve-c16.json")
    import_loadtest_file(service=service, content=c16, baseline=True)
    gate_run = run_gate(service=service, source="web", candidate_content=c16)
    response = owner_client.get(reverse("loadtests:gate_runs", args=["chat-7b"]))
    assert list(response.context["gate_runs"]) == [gate_run]
    assert b"PASS: " in response.content and b"no regression" in response.content
    detail = owner_client.get(gate_run.get_absolute_url())
    assert b"TTFT P99" in detail.content
    assert b"Hodges-Lehmann / Mann-Whitney" in detail.content  # each row names its test
    assert b"not enough tail data" in detail.content  # a P99 on 400 requests


@pytest.fixture
def c16_gate_run(service, fixtures_dir):
    """A gate run of the c16 file against itself promoted: every kind of row, one of each."""
    c16 = content(fixtures_dir, "vllm-bench-serve-c16.json")
    import_loadtest_file(service=service, content=c16, baseline=True)
    return run_gate(service=service, source="web", candidate_content=c16)


def _row(gate_run, label: str) -> dict:
    return next(r for r in gate_run.result["rows"] if r["label"] == label)


def _row_html(client, gate_run, label: str) -> str:
    page = client.get(gate_run.get_absolute_url()).content.decode()
    return re.search(rf'<th scope="row">{re.escape(label)}</th>(.*?)</tr>', page, re.S).group(1)


def test_a_gate_run_page_signs_a_throughput_rows_mde_as_a_drop(owner_client, c16_gate_run):
    mde = _row(c16_gate_run, "QPS")["mde"]
    row = _row_html(owner_client, c16_gate_run, "QPS")
    assert f"-{mde * 100:.1f}%" in row  # as the CI table prints it: a drop catches
    assert f"+{mde * 100:.1f}%" not in row


def test_a_gate_run_page_prints_latencies_as_the_dossier_does(owner_client, c16_gate_run):
    baseline = _row(c16_gate_run, "E2E P90")["baseline"]
    row = _row_html(owner_client, c16_gate_run, "E2E P90")
    assert f"{baseline:,.0f} ms" in row  # "2,591 ms", not "2,590.95 ms"
    assert f"{baseline:,.2f}" not in row


def test_a_gate_run_page_prints_an_interval_end_that_rounds_to_zero_without_a_sign(
    owner_client, c16_gate_run
):
    # A lower end of -0.0004 read "-0.0%..+14.1%", a negative zero.
    _row(c16_gate_run, "E2E P99")["interval"] = [-0.0004, 0.141]
    c16_gate_run.save(update_fields=["result"])
    row = _row_html(owner_client, c16_gate_run, "E2E P99")
    assert "±0.0%..+14.1%" in row


def test_a_gate_run_page_gives_each_verdict_its_reason_in_the_same_cell(owner_client, c16_gate_run):
    row = _row_html(owner_client, c16_gate_run, "E2E P99")
    verdict = re.search(r'<td class="verdict">(.*?)</td>', row, re.S).group(1)
    assert verdict.startswith("not enough data") and "not enough tail data" in verdict


def test_the_gate_pages_count_the_reference_set_and_date_its_runs(
    owner_client, service, fixtures_dir
):
    c16 = json.loads(content(fixtures_dir, "vllm-bench-serve-c16.json"))
    for night in ("20261110-101500", "20261111-101500"):  # two nights promoted, then a third
        night_run = json.dumps(c16 | {"date": night}).encode()
        import_loadtest_file(service=service, content=night_run, baseline=True)
    gate_run = run_gate(service=service, source="web", candidate_content=json.dumps(c16).encode())
    assert gate_run.baseline_set.count() == 2
    page = owner_client.get(reverse("loadtests:gate_runs", args=["chat-7b"])).content.decode()
    assert "and 1 more" in page
    assert f"measured {gate_run.candidate.measured_at:%Y-%m-%d %H:%M}" in page
    detail = owner_client.get(gate_run.get_absolute_url()).content.decode()
    for baseline in gate_run.baseline_set.all():  # alike labels, told apart by their dates
        assert f"(measured {baseline.measured_at:%Y-%m-%d %H:%M})" in detail


def test_the_gate_runs_page_lists_the_newest_first(owner_client, service, fixtures_dir):
    c16 = content(fixtures_dir, "vllm-bench-serve-c16.json")
    import_loadtest_file(service=service, content=c16, baseline=True)
    runs = [run_gate(service=service, source="cli", candidate_content=c16) for _ in range(3)]
    response = owner_client.get(reverse("loadtests:gate_runs", args=["chat-7b"]))
    assert list(response.context["gate_runs"]) == runs[::-1]


def test_a_refused_gate_run_shows_its_reasons(owner_client, service, fixtures_dir):
    gate_run = run_gate(
        service=service,
        source="web",
        candidate_content=content(fixtures_dir, "llmperf-summary.json"),
    )
    response = owner_client.get(gate_run.get_absolute_url())
    assert gate_run.verdict == "refused"
    assert b"the service has no baseline to compare with" in response.content


def test_the_gate_runs_page_reads_in_a_fixed_number_of_queries(
    owner_client, service, fixtures_dir, django_assert_max_num_queries
):
    c16 = content(fixtures_dir, "vllm-bench-serve-c16.json")
    import_loadtest_file(service=service, content=c16, baseline=True)
    for _ in range(3):
        run_gate(service=service, source="cli", candidate_content=c16)
    with django_assert_max_num_queries(5):
        owner_client.get(reverse("loadtests:gate_runs", args=["chat-7b"]))


@pytest.mark.parametrize("view", ["loadtests:list", "loadtests:gate_runs", "loadtests:ci_tokens"])
def test_a_load_test_page_reaches_every_other_view_of_the_service(owner_client, service, view):
    page = owner_client.get(reverse(view, args=[service.slug])).content.decode()
    for other in ("dossiers:dossier", "dossiers:onboarding", "planning:planner"):
        assert f'href="{reverse(other, args=[service.slug])}"' in page, other


def test_a_run_no_scrape_overlaps_says_so_instead_of_an_empty_engine_table(
    owner_client, vllm_sweep
):
    run = vllm_sweep[0]
    page = owner_client.get(reverse("loadtests:detail", args=["chat-7b", run.pk])).content
    assert b"Client-side figures only: " in page
    assert b'data-side="engine"' not in page


def test_the_list_marks_a_run_of_another_model_than_the_service(owner_client, vllm_sweep):
    # The demo's Code Review service (CodeLlama-13b on TGI) listed vllm bench runs of
    # Llama-2-13b-chat: margins of 75-85% and E2E P99 5.4 s against the dossier's 38.9% and
    # 10.3 s, with nothing saying the file measured another model.
    page = owner_client.get(reverse("loadtests:list", args=["chat-7b"])).content.decode()
    assert page.count("data-other-model") == len(vllm_sweep)
    assert (
        "The file names meta-llama/Llama-3.1-8B-Instruct; the service serves Llama-2-7b-chat"
        in (page)
    )


def test_a_run_of_the_services_model_named_with_its_organisation_is_not_marked(
    owner_client, vllm_sweep, no_slo
):
    no_slo.model_name = "Llama-3.1-8B-Instruct"
    no_slo.save(update_fields=["model_name"])
    page = owner_client.get(reverse("loadtests:list", args=["chat-7b"])).content.decode()
    assert "data-other-model" not in page


def test_the_run_page_warns_that_it_measured_another_model(owner_client, vllm_sweep):
    url = reverse("loadtests:detail", args=["chat-7b", vllm_sweep[0].pk])
    page = owner_client.get(url).content.decode()
    assert "<strong>Another model:</strong> the file names <code>meta-llama/Llama-3.1-8B" in page

"""A results folder uploaded as an archive: its files are the upload's, read in memory and
bounded (loadtests.formats.archives, importing.prepare_files)."""

import gzip
import posixpath
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from loadtests.formats import archives
from loadtests.importing import LoadTestImportError, import_loadtest_files, prepare_files
from tests.support import tarred, zipped

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
STAGE = REAL / "inference-perf" / "e2e-inference-perf-0.7.0-rate-stage_0_lifecycle_metrics.json"


def names(files) -> list[str]:
    return [name for _, name in files]


@pytest.mark.parametrize("pack", [zipped, tarred, lambda m: tarred(m, gz=True)])
def test_each_kind_of_archive_is_its_files_named_by_path(pack):
    content = pack({"run/stage_0_lifecycle_metrics.json": STAGE.read_bytes()})
    files = prepare_files([(content, "results.archive")])
    assert names(files) == ["results.archive/run/stage_0_lifecycle_metrics.json"]
    assert files[0][0] == STAGE.read_bytes()


def test_logs_pages_images_and_hidden_files_are_skipped():
    content = zipped(
        {
            "run/stage_0_lifecycle_metrics.json": STAGE.read_bytes(),
            "run/server.log": b"INFO started",
            "run/report.html": b"<html></html>",
            "run/.DS_Store": b"\x00",
            "__MACOSX/run/._stage_0_lifecycle_metrics.json": b"\x00",
        }
    )
    assert names(prepare_files([(content, "r.zip")])) == [
        "r.zip/run/stage_0_lifecycle_metrics.json"
    ]


def test_a_small_archive_expanding_past_the_limit_is_refused(monkeypatch):
    monkeypatch.setattr("loadtests.importing.MAX_FILE_BYTES", 1_000_000)
    content = zipped({"big.json": b" " * 2_000_000})
    assert len(content) < 10_000
    with pytest.raises(LoadTestImportError, match=r"^bomb\.zip: its files expand past 1,000,000"):
        prepare_files([(content, "bomb.zip")])


def test_a_tar_whose_members_pass_the_limit_together_is_refused(monkeypatch):
    monkeypatch.setattr("loadtests.importing.MAX_FILE_BYTES", 1_000_000)
    content = tarred({f"part{i}.json": b" " * 400_000 for i in range(3)})
    with pytest.raises(LoadTestImportError, match=r"^parts\.tar: its files expand past"):
        prepare_files([(content, "parts.tar")])


def test_a_gzipped_tar_expanding_past_the_limit_is_refused_naming_it(monkeypatch):
    monkeypatch.setattr("loadtests.importing.MAX_FILE_BYTES", 1_000_000)
    content = tarred({"big.json": b" " * 2_000_000}, gz=True)
    with pytest.raises(LoadTestImportError, match=r"^big\.tar\.gz: the gzip file holds more"):
        prepare_files([(content, "big.tar.gz")])


def test_an_archive_of_too_many_files_is_refused(monkeypatch):
    monkeypatch.setattr(archives, "MAX_MEMBERS", 3)
    content = zipped({f"{i}.json": b"{}" for i in range(4)})
    with pytest.raises(LoadTestImportError, match=r"more than 3 files"):
        prepare_files([(content, "many.zip")])


def test_a_damaged_zip_is_refused_naming_it():
    content = zipped({"a.json": STAGE.read_bytes()})
    with pytest.raises(LoadTestImportError, match=r"^broken\.zip: "):
        prepare_files([(content[: len(content) // 2], "broken.zip")])


def test_an_archive_with_only_side_files_is_refused():
    content = zipped({"run/server.log": b"INFO", "run/report.html": b"<html/>"})
    with pytest.raises(LoadTestImportError, match=r"^logs\.zip: holds no load-test file"):
        prepare_files([(content, "logs.zip")])


def test_a_plain_file_is_not_taken_for_an_archive():
    assert not archives.is_archive(STAGE.read_bytes())
    assert not archives.is_archive(gzip.compress(STAGE.read_bytes()))


IPERF = REAL / "inference-perf"


def iperf_folder(run: str, stages: int) -> dict[str, bytes]:
    """An inference-perf results folder as the tool leaves it: the run's real reports under
    their own names, beside its config and the reports PerfHub does not import."""
    prefix = f"e2e-inference-perf-0.7.0-{run}-"
    folder = {
        f"out/stage_{n}_lifecycle_metrics.json": (
            IPERF / f"{prefix}stage_{n}_lifecycle_metrics.json"
        ).read_bytes()
        for n in range(stages)
    }
    folder["out/summary_lifecycle_metrics.json"] = (
        IPERF / f"{prefix}summary_lifecycle_metrics.json"
    ).read_bytes()
    folder["out/config.yaml"] = b"load:\n  type: constant\n"
    folder["out/per_request_lifecycle_metrics.json"] = b"[]"
    folder["out/summary_prometheus_metrics.json"] = b"{}"
    return folder


def test_an_inference_perf_folder_imports_its_stages_without_their_summary():
    files = prepare_files([(zipped(iperf_folder("rate", 3)), "iperf.zip")])
    assert names(files) == [f"iperf.zip/out/stage_{n}_lifecycle_metrics.json" for n in range(3)]


@pytest.mark.django_db
def test_a_one_stage_inference_perf_folder_stores_its_run_once(service):
    """Its summary holds the stage's requests: imported beside it, it would be refused as the
    run already stored, and the whole folder with it."""
    archive = tarred(iperf_folder("no-stream-context-errors", 1), gz=True)
    (run,) = import_loadtest_files(service=service, files=[(archive, "one.tar.gz")])
    assert run.source_name == "one.tar.gz/out/stage_0_lifecycle_metrics.json"


SWEEP = REAL / "vllm-bench" / "er0080-sweep-v0.25.1-folder.tar.gz"


@pytest.mark.django_db
def test_a_vllm_bench_sweep_folder_stores_each_repeat_once(service):
    """Its `summary.json` lists the `run=<N>.json` beside it again; imported too, each repeat
    would be refused as the run already stored, and the whole folder with it."""
    runs = import_loadtest_files(service=service, files=[(SWEEP.read_bytes(), SWEEP.name)])
    names = sorted(posixpath.basename(run.source_name) for run in runs)
    assert names == ["run=0.json", "run=0.json", "run=1.json", "run=1.json"]


@pytest.mark.django_db
def test_a_member_deep_in_an_archive_keeps_its_file_name(service):
    deep = "/".join(["level"] * 60) + "/stage_0_lifecycle_metrics.json"
    (run,) = import_loadtest_files(
        service=service, files=[(zipped({deep: STAGE.read_bytes()}), "r.zip")]
    )
    assert len(run.source_name) == 255
    assert run.source_name.endswith("/stage_0_lifecycle_metrics.json")


GENAI = REAL / "genai-perf"


@pytest.mark.django_db
def test_an_aiperf_artifacts_folder_stores_its_run_once(service):
    """The JSON and CSV exports are one run, and so is the per-request file they summarize;
    the prompts sent and the raw payloads are not runs."""
    folder = {
        f"artifacts/profile_export_aiperf.{ext}": (
            GENAI / f"e2e-aiperf-0.13.0-c2-profile_export_aiperf.{ext}"
        ).read_bytes()
        for ext in ("json", "csv")
    }
    folder["artifacts/profile_export.jsonl"] = b'{"metadata": {}, "metrics": {}, "error": null}\n'
    folder["artifacts/profile_export_raw.jsonl"] = b"{}\n"
    folder["artifacts/inputs.json"] = b'{"data": []}'
    folder["artifacts/logs/aiperf.log"] = b"INFO done"
    (run,) = import_loadtest_files(service=service, files=[(zipped(folder), "aiperf.zip")])
    assert run.source_name == "aiperf.zip/artifacts/profile_export_aiperf.json"


def test_a_genai_perf_csv_without_its_json_is_kept():
    name = "e2e-genai-perf-0.0.8-c2-profile_export_genai_perf.csv"
    content = zipped({f"c2/{name}": (GENAI / name).read_bytes()})
    assert names(prepare_files([(content, "gp.zip")])) == [f"gp.zip/c2/{name}"]


def test_a_genai_perf_folder_keeps_the_summary_of_its_per_request_file():
    stem = "e2e-genai-perf-0.0.8-c1-profile_export"
    folder = {
        f"run/{stem}_genai_perf.json": (GENAI / f"{stem}_genai_perf.json").read_bytes(),
        f"run/{stem}.json": gzip.decompress((GENAI / f"{stem}.json.gz").read_bytes()),
        "run/llm_inputs.json": b"{}",
    }
    assert names(prepare_files([(zipped(folder), "gp.zip")])) == [
        f"gp.zip/run/{stem}_genai_perf.json"
    ]


def test_an_llmperf_results_folder_imports_its_summary_only():
    summary = (REAL / "llmperf" / "leaderboard-bedrock_70b.json").read_bytes()
    folder = {"results/x_summary.json": summary, "results/x_individual_responses.json": b"[{}]"}
    assert names(prepare_files([(zipped(folder), "l.zip")])) == ["l.zip/results/x_summary.json"]


def test_a_guidellm_folder_imports_its_json_report_not_its_copies():
    report = (REAL / "guidellm" / "guidellm-repo-0.2-benchmarks_stripped.json").read_bytes()
    folder = {
        "out/benchmarks.json": report,
        "out/benchmarks.yaml": b"benchmarks: []\n",
        "out/benchmarks.csv": b"a,b\n1,2\n",
        "out/benchmarks.html": b"<html/>",
    }
    assert names(prepare_files([(zipped(folder), "g.zip")])) == ["g.zip/out/benchmarks.json"]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_damaged_archive_is_refused_saying_why_never_crashes(data):
    """Any bytes cut from or flipped in a real archive: files, or LoadTestImportError."""
    original = data.draw(
        st.sampled_from(
            [
                zipped({"run/a.json": STAGE.read_bytes()}),
                tarred({"run/a.json": STAGE.read_bytes()}),
                tarred({"run/a.json": STAGE.read_bytes()}, gz=True),
            ]
        )
    )
    content = bytearray(original)
    for _ in range(data.draw(st.integers(0, 4))):
        # Half the time in the first member's header and compressed data.
        end = data.draw(st.sampled_from([len(content), min(len(content), 300)]))
        index = data.draw(st.integers(0, end - 1))
        content[index] = data.draw(st.integers(0, 255))
    content = bytes(content[: data.draw(st.integers(1, len(content)))])
    try:
        prepare_files([(content, "fuzzed")])
    except LoadTestImportError as exc:
        assert str(exc)


def test_a_zip_whose_compressed_data_is_damaged_is_refused_naming_the_member():
    content = bytearray(zipped({"run/a.json": STAGE.read_bytes()}))
    data_start = 30 + len("run/a.json")  # after the local file header
    content[data_start : data_start + 8] = b"\xff" * 8
    with pytest.raises(LoadTestImportError, match=r"^d\.zip: run/a\.json: cannot be read"):
        prepare_files([(bytes(content), "d.zip")])


@pytest.mark.django_db
def test_an_error_in_an_archive_of_one_file_names_that_file(service):
    content = zipped({"run/stage_9_lifecycle_metrics.json": b'{"load_summary": {}}'})
    with pytest.raises(
        LoadTestImportError, match=r"^one\.zip/run/stage_9_lifecycle_metrics\.json: "
    ):
        import_loadtest_files(service=service, files=[(content, "one.zip")])


def test_the_files_left_out_are_named_and_hidden_ones_are_not():
    folder = iperf_folder("rate", 3)
    folder["out/.DS_Store"] = b"\x00"
    files = prepare_files([(zipped(folder), "iperf.zip")])
    assert sorted(files.skipped) == [
        "iperf.zip/out/config.yaml",
        "iperf.zip/out/per_request_lifecycle_metrics.json",
        "iperf.zip/out/summary_lifecycle_metrics.json",  # its stages are beside it
        "iperf.zip/out/summary_prometheus_metrics.json",
    ]


@pytest.mark.django_db
def test_an_upload_says_which_files_it_left_out(owner_client, service):
    upload = SimpleUploadedFile("iperf.zip", zipped(iperf_folder("rate", 3)))
    response = owner_client.post(
        reverse("loadtests:upload", args=["chat-7b"]), {"file": upload}, follow=True
    )
    (message,) = [str(m) for m in response.context["messages"]]
    assert message.startswith("Imported 3 new runs from iperf.zip. Skipped 4 files that are not")
    assert "iperf.zip/out/config.yaml" in message


def test_text_holding_the_tar_magic_where_a_header_has_it_is_not_an_archive():
    text = b'{"notes": "' + b"x" * 246 + b'ustar and more", "load_summary": {}}'
    assert text[257:262] == b"ustar"
    assert not archives.is_archive(text)
    assert archives.is_archive(tarred({"a.json": b"{}"}))


AIPERF_WARMUP = GENAI / "e2e-aiperf-0.13.0-rate4-poisson-warmup-folder.tar.gz"
AIPERF_SWEEP = GENAI / "e2e-aiperf-0.13.0-rate-sweep-3-6-folder.tar.gz"


@pytest.mark.django_db
def test_an_aiperf_013_folder_with_a_warm_up_stores_the_profiling_run_once(service):
    """With a warm-up AIPerf 0.13 writes each phase's export again under `phases/` (listed in
    `phase_manifest.json`), beside server scrapes and its console tables: one run, 40 requests."""
    (run,) = import_loadtest_files(
        service=service, files=[(AIPERF_WARMUP.read_bytes(), AIPERF_WARMUP.name)]
    )
    assert run.source_name.endswith("/r4/profile_export_aiperf.json")
    assert run.request_count == 40


@pytest.mark.django_db
def test_an_aiperf_013_rate_sweep_folder_is_a_run_per_rate(service):
    """`--request-rate 3,6`: a folder per rate, and aggregates per rate and over the sweep."""
    runs = import_loadtest_files(
        service=service, files=[(AIPERF_SWEEP.read_bytes(), AIPERF_SWEEP.name)]
    )
    assert sorted(run.request_rate for run in runs) == [3.0, 6.0]


IPERF_07_FOLDER = REAL / "inference-perf" / "e2e-inference-perf-0.7.0-constant-folder.tar.gz"


@pytest.mark.django_db
def test_an_inference_perf_07_folder_stores_its_stages_beside_its_own_validation(service):
    """0.7 writes `validation.json` (its check of its reports) beside the stages: not a run."""
    runs = import_loadtest_files(
        service=service, files=[(IPERF_07_FOLDER.read_bytes(), IPERF_07_FOLDER.name)]
    )
    assert sorted(run.request_rate for run in runs) == [3.0, 6.0]


APPENDED = REAL / "vllm-bench" / "e2e-vllm-0.32.0-cpu-append-result.jsonl"


@pytest.mark.django_db
def test_a_file_the_tool_appended_to_imports_its_new_run_beside_the_one_stored(service):
    """vLLM's --append-result: the file held one run when first imported, two now."""
    first_line = APPENDED.read_bytes().split(b"\n")[0]
    (first,) = import_loadtest_files(service=service, files=[(first_line, "result.json")])
    runs = import_loadtest_files(service=service, files=[(APPENDED.read_bytes(), "result.json")])
    assert [run.pk == first.pk for run in runs] == [True, False]


@pytest.mark.django_db
def test_another_file_holding_a_stored_run_is_still_refused(service):
    first_line = APPENDED.read_bytes().split(b"\n")[0]
    import_loadtest_files(service=service, files=[(first_line, "result.json")])
    with pytest.raises(LoadTestImportError, match="run 1 is the measurement already stored"):
        import_loadtest_files(service=service, files=[(APPENDED.read_bytes(), "copy.json")])

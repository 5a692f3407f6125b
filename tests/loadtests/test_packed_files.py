"""Load-test files as people keep them: gzip-compressed (large per-request exports), and UTF-16
(PowerShell's `>`). Each reads as the file it holds; a damaged or oversized one is refused with
a sentence saying so, and nothing is stored."""

import gzip
from pathlib import Path

import pytest

from loadtests import importing
from loadtests.importing import LoadTestImportError, import_loadtest_file
from loadtests.models import LoadTest

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
C16 = FIXTURES / "loadtests" / "vllm-bench-serve-c16.json"
# A real per-request export, kept compressed in the repository as a user would keep it.
GENAI_PERF_REQUESTS = (
    FIXTURES / "real" / "genai-perf" / "e2e-genai-perf-0.0.8-c1-profile_export.json.gz"
)


def test_a_gzip_file_imports_the_run_it_holds(service):
    (plain,) = import_loadtest_file(service=service, content=C16.read_bytes(), filename=C16.name)
    (packed,) = import_loadtest_file(
        service=service, content=gzip.compress(C16.read_bytes()), filename=C16.name + ".gz"
    )
    assert packed == plain and not packed.just_created  # one file, whichever way it came


def test_a_real_per_request_export_imports_compressed(service):
    (run,) = import_loadtest_file(
        service=service, content=GENAI_PERF_REQUESTS.read_bytes(), filename=GENAI_PERF_REQUESTS.name
    )
    assert (run.format, run.source_name) == ("genai-perf-requests", GENAI_PERF_REQUESTS.name)


def test_a_gzip_file_expanding_past_the_limit_is_refused_and_stores_nothing(service, monkeypatch):
    monkeypatch.setattr(importing, "MAX_FILE_BYTES", 1_000_000)
    bomb = gzip.compress(b" " * 2_000_000)  # 2 kB that would be 2 MB
    with pytest.raises(LoadTestImportError, match="holds more than 1,000,000 bytes"):
        import_loadtest_file(service=service, content=bomb, filename="x.json.gz")
    assert not LoadTest.objects.exists()


def test_a_truncated_gzip_file_is_refused_as_such(service):
    packed = gzip.compress(C16.read_bytes())
    with pytest.raises(LoadTestImportError, match="gzip file is truncated"):
        import_loadtest_file(service=service, content=packed[: len(packed) // 2])


def test_a_damaged_gzip_file_is_refused_as_such(service):
    packed = bytearray(gzip.compress(C16.read_bytes()))
    packed[20:40] = b"\xff" * 20
    with pytest.raises(LoadTestImportError, match="not a valid gzip file"):
        import_loadtest_file(service=service, content=bytes(packed))


def test_a_utf16_file_with_its_bom_imports(service):
    content = C16.read_bytes().decode().encode("utf-16")
    (run,) = import_loadtest_file(service=service, content=content, filename=C16.name)
    assert run.format == "vllm-bench" and run.e2e_p99_ms is not None


def test_a_gzip_file_of_two_members_with_zero_padding_reads_whole(service):
    # `cat a.gz b.gz` and tape-style zero padding are both valid gzip files.
    text = C16.read_bytes()
    half = len(text) // 2
    packed = gzip.compress(text[:half]) + gzip.compress(text[half:]) + b"\x00" * 512
    (run,) = import_loadtest_file(service=service, content=packed, filename="c16.json.gz")
    assert run.format == "vllm-bench"

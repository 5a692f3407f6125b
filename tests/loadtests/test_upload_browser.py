"""In headless Chromium: upload a sweep's stage files at once and find the sweep they make."""

from pathlib import Path

import pytest

from tests.support import browser_login

pytestmark = pytest.mark.browser

IPERF = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "inference-perf"


@pytest.mark.django_db(transaction=True)
def test_an_owner_picks_three_stage_files_and_gets_their_sweep(
    live_server, browser_page, owner, service
):
    service.slo_p99_e2e_ms = None
    service.save(update_fields=["slo_p99_e2e_ms"])
    stages = [
        IPERF / f"e2e-inference-perf-0.7.0-rate-stage_{n}_lifecycle_metrics.json" for n in (0, 1, 2)
    ]
    page = browser_page
    browser_login(page, live_server.url, "alice", "pw-alice-123")

    page.goto(f"{live_server.url}/services/{service.slug}/loadtests/upload/")
    page.set_input_files("#id_file", [str(path) for path in stages])
    page.click("button:has-text('Import')")

    assert "Imported 3 new runs" in page.locator(".messages").inner_text()
    page.click("text=inference-perf rate sweep")
    assert page.locator("h1").inner_text().startswith("inference-perf rate sweep")
    assert page.problems == []


EVALSCOPE = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "evalscope"


@pytest.mark.django_db(transaction=True)
def test_an_owner_uploads_a_zipped_results_folder_and_reads_what_the_tool_got_wrong(
    live_server, browser_page, owner, service
):
    """evalscope's open-loop folder, zipped as it was written: two runs, one per rate, and on
    a run's page the note on the TTFTs evalscope wrote as 0."""
    page = browser_page
    browser_login(page, live_server.url, "alice", "pw-alice-123")

    page.goto(f"{live_server.url}/services/{service.slug}/loadtests/upload/")
    page.set_input_files("#id_file", str(EVALSCOPE / "e2e-evalscope-1.14.1-open-loop.zip"))
    page.click("button:has-text('Import')")

    assert "Imported 2 new runs" in page.locator(".messages").inner_text()
    page.click("text=evalscope 20 req/s")
    assert "TTFT of 0" in page.locator("#file-notes").inner_text()
    assert page.problems == []


SWEEP_FOLDER = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "real"
    / "vllm-bench"
    / "e2e-vllm-0.32.0-cpu-sweep-max_num_seqs.tar.gz"
)


@pytest.mark.django_db(transaction=True)
def test_an_owner_records_two_sweeps_one_parameter_apart_as_an_experiment(
    live_server, browser_page, owner, service
):
    """`vllm bench sweep serve`'s folder (max_num_seqs 1 and 4): from the second sweep's page,
    one click on concurrency 4 records the experiment and opens it for its hypothesis."""
    page = browser_page
    browser_login(page, live_server.url, "alice", "pw-alice-123")

    page.goto(f"{live_server.url}/services/{service.slug}/loadtests/upload/")
    page.set_input_files("#id_file", str(SWEEP_FOLDER))
    page.click("button:has-text('Import')")
    page.click("a:has-text('max_num_seqs=4')")
    page.locator(
        "[data-change='max_num_seqs'] tr:has-text('4') >> text=Record as experiment"
    ).last.click()

    assert (
        "Recorded “max_num_seqs 1 → 4 at concurrency 4”" in page.locator(".messages").inner_text()
    )
    assert page.input_value("#id_variable_key") == "max_num_seqs"
    assert page.problems == []

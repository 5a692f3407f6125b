import logging

from collectors.agent.config import ScrapeTarget
from collectors.agent.scrape import Scraper

from .contract import SCRAPE


def test_it_sends_the_vllm_page_exactly_as_scraped(metrics_server, vllm_text):
    url, pages = metrics_server
    pages.pages["/metrics"] = (200, vllm_text)
    target = ScrapeTarget("vllm", "chat-7b", f"{url}/metrics")

    row = Scraper(timeout=2).scrape(target)

    assert row is not None
    assert set(row) == set(SCRAPE)
    assert (row["service"], row["source"]) == ("chat-7b", "vllm")
    assert row["exposition"] == vllm_text
    assert row["ts"].endswith("Z")


def test_it_skips_a_failed_scrape_and_keeps_the_others(
    metrics_server, vllm_text, closed_port_url, caplog
):
    url, pages = metrics_server
    pages.pages["/metrics"] = (200, vllm_text)
    pages.pages["/broken"] = (500, "boom")
    targets = [
        ScrapeTarget("tgi", "chat-7b", f"{closed_port_url}/metrics"),
        ScrapeTarget("sglang", "chat-7b", f"{url}/broken"),
        ScrapeTarget("vllm", "chat-7b", f"{url}/metrics"),
    ]

    with caplog.at_level(logging.WARNING, logger="collectors.agent"):
        rows = Scraper(timeout=2).scrape_all(targets)

    assert [r["source"] for r in rows] == ["vllm"]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert messages[0] == (
        f"scrape tgi for chat-7b at {closed_port_url}/metrics failed: "
        "connection failed: Connection refused; skipped this round"
    )
    assert messages[1].startswith("scrape sglang for chat-7b at") and "HTTP 500" in messages[1]


def test_it_gives_up_on_a_slow_endpoint_after_the_timeout(metrics_server, caplog):
    url, pages = metrics_server
    pages.pages["/metrics"] = (200, "up 1\n")
    pages.delay_s = 0.5

    with caplog.at_level(logging.WARNING, logger="collectors.agent"):
        row = Scraper(timeout=0.1).scrape(ScrapeTarget("vllm", "chat-7b", f"{url}/metrics"))

    assert row is None
    assert "timed out after 0.1 s" in caplog.records[0].getMessage()


def test_it_logs_a_persistent_failure_loudly_only_once(closed_port_url, caplog):
    scraper = Scraper(timeout=1)
    target = ScrapeTarget("vllm", "chat-7b", f"{closed_port_url}/metrics")

    with caplog.at_level(logging.WARNING, logger="collectors.agent"):
        scraper.scrape(target)
        scraper.scrape(target)
        scraper.scrape(target)

    assert len(caplog.records) == 1

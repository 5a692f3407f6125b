"""The dossier's experiment cards lead with the figure the experiment was about and say where
that target came from (demo fleet)."""

import re

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(demo_fleet, client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-1"))
    return client


@pytest.fixture
def page(reader):
    return reader.get("/services/support-chat-7b/").content.decode()


def headline(page: str, title: str) -> str:
    card = re.search(
        r'<summary class="card-head"><h4>' + re.escape(title) + r"</h4>.*?</summary>", page, re.S
    )
    span = re.search(
        r"<span class=\"sub\" data-headline[^>]*>.*?</span></summary>", card.group(0), re.S
    )
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", span.group(0))).strip()


def test_chunked_prefill_leads_with_the_ttft_p99_it_states_as_its_target(page):
    text = headline(page, "Chunked prefill")
    assert text == "TTFT P99 (ms) -160 ms (-38.1%) (stated target)"


def test_a_stated_throughput_target_leads_its_card(reader):
    page = reader.get("/services/code-review-13b/").content.decode()
    text = headline(page, "Batch at the sweet spot (16)")
    assert text.startswith("Output tokens/s +") and text.endswith("(stated target)")


def test_a_card_whose_p99_had_too_few_requests_shows_p90_and_says_why(page):
    text = headline(page, "max_num_seqs (default) → 512 at 16 req/s")
    assert text.startswith("E2E P90 (ms) +245 ms (+34.6%)")
    assert "P99: too few requests to judge" in text


def test_a_card_without_a_target_stated_or_named_says_the_headline_is_the_default(page):
    # Recorded from two sweeps: no target stated, and the generated hypothesis names no figure.
    text = headline(page, "max_num_seqs (default) → 512 at 16 req/s")
    assert text.endswith("(no target figure named)")

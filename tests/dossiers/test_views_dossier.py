"""The dossier page, its onboarding view, baseline detail, revision and config history."""

import re
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dossiers import services
from dossiers.models import Bottleneck
from tests.factories.catalog import baseline_values, make_baseline


def dossier_url(service):
    return reverse("dossiers:dossier", args=[service.slug])


def test_it_shows_the_summary_header_with_slo_status_and_economics(owner_client, full_dossier):
    page = owner_client.get(dossier_url(full_dossier["service"])).content.decode()
    assert "Llama-2-7b-chat" in page
    assert "vLLM 0.6.3" in page
    assert "SLO missed" in page  # e2e P99 2,250 ms against 2,000
    assert "SLO met" in page  # TTFT P99 300 ms against 500
    assert "1.39" in page  # 10/h, 1 GPU, 2,000 output tokens/s
    assert "72.2%" in page


def test_it_renders_the_narrative_markdown_with_tables(owner_client, full_dossier):
    page = owner_client.get(dossier_url(full_dossier["service"])).content.decode()
    assert "<h1>Chat 7B</h1>" in page
    assert "<td>1</td>" in page


def test_it_never_lets_a_script_in_the_narrative_through(owner_client, service, owner):
    services.narrative_revise(
        service=service, body='<script>alert("x")</script>\n\n<b onclick="evil()">hi</b>'
    )
    page = owner_client.get(dossier_url(service)).content.decode()
    assert 'alert("x")' not in page
    assert "evil()" not in page


def test_it_shows_the_full_latency_table_and_utilization_note(owner_client, full_dossier):
    page = owner_client.get(dossier_url(full_dossier["service"])).content.decode()
    for label in ("P50", "P90", "P95", "P99", "P999", "TTFT", "TPOT", "End-to-end"):
        assert label in page
    assert "GPU-Util alone lies" in page
    assert "SM active" in page and "DRAM active" in page
    assert "21.5 GB" in page


def test_it_warns_when_an_experiment_changed_more_than_one_variable(owner_client, full_dossier):
    page = owner_client.get(dossier_url(full_dossier["service"])).content.decode()
    assert "More than one variable changed:" in page
    assert "gpu_memory_utilization" in page


def test_it_shows_measured_deltas_of_an_experiment(owner_client, full_dossier):
    page = owner_client.get(dossier_url(full_dossier["service"])).content.decode()
    assert "Output tokens/s" in page
    assert "+100.0%" in page  # output tokens/s 1,000 -> 2,000


def test_experiment_changes_are_shown_in_real_units_beside_the_percent(owner_client, full_dossier):
    page = owner_client.get(dossier_url(full_dossier["service"])).content.decode()
    assert "+1,000 tok/s (+100.0%)" in page  # output tokens/s 1,000 -> 2,000
    assert "-750 ms" in page  # e2e P99 3,000 -> 2,250 ms


def test_open_bottlenecks_are_listed_before_mitigated_ones(owner_client, full_dossier):
    service = full_dossier["service"]
    newer_but_mitigated = Bottleneck.objects.create(
        service=service,
        title="Old queueing problem",
        layer=Bottleneck.Layer.SCHEDULING,
        kind=Bottleneck.Kind.QUEUEING,
        symptom="s",
        status=Bottleneck.Status.MITIGATED,
        identified_on=full_dossier["bottleneck"].identified_on.replace(day=28),
    )
    for name in ("dossier", "onboarding"):
        page = owner_client.get(reverse(f"dossiers:{name}", args=[service.slug])).content.decode()
        assert page.index(full_dossier["bottleneck"].title) < page.index(newer_but_mitigated.title)


def test_it_shows_the_current_config_and_its_diff_to_the_previous(owner_client, full_dossier):
    page = owner_client.get(dossier_url(full_dossier["service"])).content.decode()
    assert "Changes from v1" in page
    assert '<span class="d-add">+  &quot;max_num_seqs&quot;: 16' in page


def test_it_lists_narrative_revisions(owner_client, full_dossier):
    page = owner_client.get(dossier_url(full_dossier["service"])).content.decode()
    assert "say who uses it" in page


def test_it_leaves_a_place_for_live_panels(owner_client, full_dossier):
    page = owner_client.get(dossier_url(full_dossier["service"])).content.decode()
    assert 'id="live-panels"' in page


def test_it_shows_edit_links_to_owners_only(client, owner, outsider, full_dossier):
    url = dossier_url(full_dossier["service"])
    client.force_login(owner)
    assert "Edit narrative" in client.get(url).content.decode()
    client.force_login(outsider)
    page = client.get(url).content.decode()
    assert "Edit narrative" not in page
    assert "Import" not in page


def test_it_answers_404_for_an_unknown_service(owner_client):
    assert owner_client.get("/services/no-such-service/").status_code == 404


def test_the_dossier_page_reads_in_a_constant_number_of_queries(owner_client, owner, full_dossier):
    service = full_dossier["service"]
    url = dossier_url(service)
    owner_client.get(url)  # warm up: the first request of a session reads more
    with CaptureQueriesContext(connection) as few:
        assert owner_client.get(url).status_code == 200
    before = full_dossier["before"]
    for i in range(8):
        extra = services.baseline_record(
            service=service, label=f"extra {i}", **baseline_values(qps=i + 1)
        )
        b = Bottleneck.objects.create(
            service=service,
            title=f"b{i}",
            layer=Bottleneck.Layer.HARDWARE,
            kind=Bottleneck.Kind.COMPUTE,
            symptom="s",
            identified_on=before.measured_at.date(),
        )
        b.evidence_baselines.set([before, extra])
        full_dossier["experiment"].pk = None  # a copy per round
        full_dossier["experiment"].after = extra
        full_dossier["experiment"].save()
        services.narrative_revise(service=service, body=f"r{i}", summary=f"s{i}", author=owner)
        services.config_version_create(service=service, config={"max_num_seqs": i}, author=owner)
    with CaptureQueriesContext(connection) as many:
        assert owner_client.get(url).status_code == 200
    assert len(many) == len(few)


def test_the_onboarding_view_is_ordered_for_a_new_hire(owner_client, full_dossier):
    service = full_dossier["service"]
    page = owner_client.get(reverse("dossiers:onboarding", args=[service.slug])).content.decode()
    headings = [
        "Whom to call",
        "What changed this week",
        "What the service is",
        "How it performs",
        "Where it hurts",
        "What was tried",
        "What is configured now",
        "Glossary",
    ]
    positions = [page.index(f"</span> {h}</h2>") for h in headings]
    assert positions == sorted(positions)


def test_the_onboarding_view_says_whom_to_call_first(owner_client, full_dossier):
    service = full_dossier["service"]
    service.owner, service.on_call, service.channel = "Alice Martin", "chat-oncall", "#chat"
    service.save()
    page = owner_client.get(reverse("dossiers:onboarding", args=[service.slug])).content.decode()
    assert page.index("Alice Martin") < page.index("What the service is</h2>")
    assert "chat-oncall" in page and "#chat" in page


def test_the_onboarding_glossary_explains_the_metrics(owner_client, full_dossier):
    service = full_dossier["service"]
    page = owner_client.get(reverse("dossiers:onboarding", args=[service.slug])).content.decode()
    for term in (
        "TTFT",
        "TPOT",
        "QPS",
        "Tokens/s",
        "KV cache",
        "SM active",
        "allocation",
        "Margin",
    ):
        assert f"<dt>{term}" in page or term in page.split('id="glossary"')[1]


def test_the_onboarding_glossary_explains_the_words_of_its_right_now_box(
    owner_client, full_dossier
):
    # The first box a new hire reads says "Budget left", "Burn, last hour", a range of
    # compliance, "holds" and "client-side"; the glossary explained none of them.
    service = full_dossier["service"]
    page = owner_client.get(reverse("dossiers:onboarding", args=[service.slug])).content.decode()
    glossary = page.split('id="glossary"')[1]
    for term in ("<dt>SLO, error budget, burn rate", "<dt>Baseline; holds, drifted",
                 "<dt>Client-side vs server-side"):  # fmt: skip
        assert term in glossary


def test_the_baseline_page_shows_workload_results_and_citations(owner_client, full_dossier):
    service, before = full_dossier["service"], full_dossier["before"]
    page = owner_client.get(reverse("dossiers:baseline", args=[service.slug, before.pk]))
    text = page.content.decode()
    assert "batch 8" in text
    assert "concurrency 16" in text
    assert "Tokenizer runs serially on the CPU" in text
    assert "Make current" in text


def test_a_former_baselines_page_calls_its_claim_its_own_not_the_current_ones(
    owner_client, full_dossier
):
    service, before = full_dossier["service"], full_dossier["before"]
    page = owner_client.get(reverse("dossiers:baseline", args=[service.slug, before.pk]))
    caption = page.content.decode().split("The baseline's claim")[1].split("</caption>")[0]
    assert "this baseline's P99" in caption and "current" not in caption


def test_the_baseline_of_another_service_is_not_found_here(
    owner_client, full_dossier, make_service
):
    other = make_service("other-svc")
    run = other.baselines.get()
    url = reverse("dossiers:baseline", args=[full_dossier["service"].slug, run.pk])
    assert owner_client.get(url).status_code == 404


def test_the_revision_history_diffs_any_two_revisions(owner_client, full_dossier):
    url = reverse("dossiers:revisions", args=[full_dossier["service"].slug])
    page = owner_client.get(url, {"a": 1, "b": 2}).content.decode()
    assert "r1 → r2" in page
    assert '<tr class="d-replace">' in page
    assert "Serves chat for the support bot." in page


def test_the_revision_history_defaults_to_the_newest_two(owner_client, full_dossier):
    url = reverse("dossiers:revisions", args=[full_dossier["service"].slug])
    assert "r1 → r2" in owner_client.get(url).content.decode()


def test_the_revision_history_says_when_a_revision_does_not_exist(owner_client, full_dossier):
    url = reverse("dossiers:revisions", args=[full_dossier["service"].slug])
    assert "No such revision." in owner_client.get(url, {"a": 1, "b": 99}).content.decode()


def test_the_config_versions_page_diffs_any_two(owner_client, full_dossier):
    url = reverse("dossiers:configs", args=[full_dossier["service"].slug])
    page = owner_client.get(url, {"a": 2, "b": 1}).content.decode()
    assert "v2 → v1" in page
    assert '<span class="d-remove">-  &quot;gpu_memory_utilization&quot;: 0.95,</span>' in page


@pytest.mark.parametrize(
    "name", ["dossier", "onboarding", "revisions", "configs", "export_markdown"]
)
def test_anonymous_visitors_are_sent_to_login(client, service, name):
    response = client.get(reverse(f"dossiers:{name}", args=[service.slug]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_it_points_placeholders_at_fragment_urls_from_settings(
    owner_client, full_dossier, settings
):
    settings.PERFHUB_DOSSIER_FRAGMENTS = {
        "live_panels": "/dashboards/services/{slug}/live/",
        "timeline": "/dashboards/services/{slug}/timeline/",
    }
    page = owner_client.get(dossier_url(full_dossier["service"])).content.decode()
    assert (
        'id="live-panels" class="live-panels" data-fragment="/dashboards/services/chat-7b/live/"'
        in page
    )
    assert 'data-fragment="/dashboards/services/chat-7b/timeline/"' in page


@pytest.mark.parametrize(
    ("requests", "said", "unsaid"),
    [
        # 600 requests: P99 rests on enough; the P999 is withheld, and the page says why.
        (600, ["P999 needs at least 1,000 requests; this run has 600"], ["P99 needs"]),
        (50, ["P99 needs at least 100 requests; this run has 50", "P999 needs"], []),
        (5000, [], ["Insufficient data"]),
    ],
)
def test_the_insufficient_data_note_says_which_percentile_needs_how_many(
    owner_client, service, requests, said, unsaid
):
    baseline = make_baseline(service, request_count=requests)
    page = owner_client.get(reverse("dossiers:baseline", args=[service.slug, baseline.pk]))
    html = page.content.decode()
    for text in said:
        assert text in html
    for text in unsaid:
        assert text not in html


def test_a_confounded_experiment_says_so_on_its_closed_card(owner_client, full_dossier):
    # The onboarding page said "each experiment changed one variable" while the demo's chunked
    # prefill trial moved three; the warning sat inside the card, closed by default.
    url = reverse("dossiers:onboarding", args=[full_dossier["service"].slug])
    page = owner_client.get(url).content.decode()
    summary = re.search(r'<summary class="card-head">(.*?)</summary>', page, re.S).group(1)
    assert "2 variables changed" in summary
    assert "gpu_memory_utilization changed too" in summary


def test_the_baseline_history_shows_a_latency_column_at_one_precision(owner_client, service):
    # A new hire read "5,200" above "61.0" in one column as two kinds of figure.
    make_baseline(service, label="replay", ttft_p99_ms=5200.0)
    make_baseline(service, label="dev box", ttft_p99_ms=61.0, is_current=False,
                  measured_at=datetime(2026, 10, 1, tzinfo=UTC))  # fmt: skip
    page = owner_client.get(dossier_url(service)).content.decode()
    history = re.search(r'<section id="baselines".*?</section>', page, re.S).group(0)
    rows = re.findall(r"<tr(?: class=\"current\")?>\s*<td><a.*?</tr>", history, re.S)
    ttft = [re.findall(r'<td class="num">([^<]*)</td>', row)[3] for row in rows]
    assert ttft == ["5,200", "61"], ttft

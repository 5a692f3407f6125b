"""The fleet index: every service, sortable and searchable, in a constant number of queries."""

from decimal import Decimal

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dossiers import services
from dossiers.models import Bottleneck, Team
from tests.factories.catalog import baseline_values, make_bottleneck

FLEET = reverse("home")


def names(response) -> list[str]:
    return [row.service.name for row in response.context["rows"]]


def test_it_lists_every_service_with_its_p99_against_the_slo(owner_client, make_service):
    make_service("chat-8b", slo_p99_e2e_ms=3000)
    make_service("code-8b", slo_p99_e2e_ms=1000)
    page = owner_client.get(FLEET).content.decode()
    assert "Chat 8B" in page and "Code 8B" in page
    assert "2,250" in page  # P99 e2e of both
    assert "SLO met" in page and "SLO missed" in page


def test_it_shows_cost_per_mtok_margin_and_open_bottlenecks(owner_client, make_service):
    make_service("chat-8b")
    response = owner_client.get(FLEET)
    row = response.context["rows"][0]
    assert round(row.base.cost_per_mtok, 2) == 1.39
    assert round(row.base.margin, 3) == 0.722
    assert row.base.open_bottlenecks == 1
    assert "72.2%" in response.content.decode()


def test_the_open_count_links_to_an_open_bottleneck(owner_client, make_service):
    service = make_service("chat-8b")
    open_one = service.bottlenecks.get()
    make_bottleneck(
        service,
        title="Fixed long ago",
        layer=Bottleneck.Layer.SCHEDULING,
        kind=Bottleneck.Kind.CPU,
        symptom="s",
        status=Bottleneck.Status.MITIGATED,
        identified_on=open_one.identified_on.replace(year=2027),
    )
    page = owner_client.get(FLEET).content.decode()
    assert f'href="/services/chat-8b/#bottleneck-{open_one.pk}">1</a>' in page


def test_it_marks_a_service_without_a_baseline_as_no_data(owner_client, team):
    services.service_create(
        team=team,
        slug="fresh",
        name="Fresh",
        model_name="m",
        model_params_b=Decimal("1"),
        engine="tgi",
        gpu_model="L4",
        gpu_hour_price=Decimal("1"),
    )
    assert "no data" in owner_client.get(FLEET).content.decode()


def test_it_searches_by_name_slug_model_engine_and_team(owner_client, make_service):
    make_service("chat-8b", model_name="Llama-3-8B")
    make_service("embed", model_name="bge-large", engine="triton")
    assert names(owner_client.get(FLEET, {"q": "bge"})) == ["Embed"]
    assert names(owner_client.get(FLEET, {"q": "triton"})) == ["Embed"]
    assert names(owner_client.get(FLEET, {"q": "chat-8"})) == ["Chat 8B"]
    assert len(names(owner_client.get(FLEET, {"q": "inference platform"}))) == 2


def test_it_says_when_nothing_matches(owner_client, make_service):
    make_service("chat-8b")
    assert "No service matches" in owner_client.get(FLEET, {"q": "zzz"}).content.decode()


def test_it_sorts_by_p99_both_ways_with_missing_values_last(owner_client, make_service, team):
    slow = make_service("slow")
    services.baseline_record(
        service=slow,
        label="slower",
        make_current=True,
        **baseline_values(e2e_p99_ms=9000, e2e_p999_ms=9500),
    )
    make_service("fast")
    services.service_create(
        team=team,
        slug="empty",
        name="Empty",
        model_name="m",
        model_params_b=Decimal("1"),
        engine="tgi",
        gpu_model="L4",
        gpu_hour_price=Decimal("1"),
    )
    assert names(owner_client.get(FLEET, {"sort": "p99"})) == ["Fast", "Slow", "Empty"]
    assert names(owner_client.get(FLEET, {"sort": "-p99"})) == ["Slow", "Fast", "Empty"]


def test_it_sorts_by_cost_and_margin(owner_client, make_service):
    make_service("cheap", gpu_hour_price=Decimal("2"))
    make_service("dear", gpu_hour_price=Decimal("20"))
    assert names(owner_client.get(FLEET, {"sort": "cost"})) == ["Cheap", "Dear"]
    assert names(owner_client.get(FLEET, {"sort": "-margin"})) == ["Cheap", "Dear"]


def test_it_falls_back_to_name_order_for_an_unknown_sort(owner_client, make_service):
    make_service("b-svc")
    make_service("a-svc")
    assert names(owner_client.get(FLEET, {"sort": "password"})) == ["A Svc", "B Svc"]


def test_it_reads_in_a_constant_number_of_queries(owner_client, make_service):
    for i in range(3):
        make_service(f"svc-{i}")
    owner_client.get(FLEET)
    with CaptureQueriesContext(connection) as three:
        owner_client.get(FLEET, {"sort": "-margin"})
    other = Team.objects.create(slug="other", name="Other")
    for i in range(3, 10):
        make_service(f"svc-{i}", team=other)
    with CaptureQueriesContext(connection) as ten:
        response = owner_client.get(FLEET, {"sort": "-margin"})
    assert len(response.context["rows"]) == 10
    assert len(ten) == len(three)


def test_it_sends_anonymous_visitors_to_login(client):
    response = client.get(FLEET)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next=/"


def test_it_shows_gpu_hours_per_day_for_every_reserved_gpu(owner_client, make_service):
    make_service("chat-8b", replicas=3, gpus_per_replica=2)
    response = owner_client.get(FLEET)
    assert response.context["rows"][0].base.gpu_hours_per_day == 144
    assert ">144</td>" in response.content.decode()


def test_gpu_hours_per_day_in_the_thousands_carry_a_thousands_separator(owner_client, make_service):
    make_service("chat-70b", replicas=32, gpus_per_replica=2)
    assert ">1,536</td>" in owner_client.get(FLEET).content.decode()


def test_the_bottleneck_count_is_headed_as_bottlenecks_not_alerts(owner_client, make_service):
    # Beside "Right now" (alerts), a bare "Open" read as open alerts: a new hire saw "1 info
    # pending" next to "0" and "1" next to no alert at all.
    make_service("chat-8b")
    page = owner_client.get(FLEET).content.decode()
    assert ">Open bottlenecks</a></th>" in page


def test_each_cost_says_which_tokens_it_counts(owner_client, make_service):
    # One service bills output tokens, another input + output: 1.83 and 0.0989 side by side
    # only compare once each row names its tokens.
    make_service("chat-8b", token_basis="output")
    make_service("rag-8b", token_basis="total")
    page = owner_client.get(FLEET).content.decode()
    assert '<div class="sub" data-token-basis="output">per M output tokens</div>' in page
    assert '<div class="sub" data-token-basis="total">per M input + output tokens</div>' in page

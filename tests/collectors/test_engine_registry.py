"""One registry of serving engines: a new entry needs no edit anywhere else."""

import json

import pytest

from collectors.agent.config import parse_engine_spec
from collectors.exposition import engines
from collectors.exposition.engines import Engine, Rule
from collectors.models import Host, ScrapeWindow
from dossiers.forms import ServiceSettingsForm
from tests.factories.batches import INGEST_URL, make_batch, post_batch, scrape_batch

pytestmark = pytest.mark.django_db

TOY_EXPOSITION = """# TYPE toy_requests_done counter
toy_requests_done_total{model="m"} %d
# TYPE toy_latency_seconds histogram
toy_latency_seconds_bucket{model="m",le="0.5"} %d
toy_latency_seconds_bucket{model="m",le="+Inf"} %d
toy_latency_seconds_sum{model="m"} 1.0
toy_latency_seconds_count{model="m"} %d
"""


@pytest.fixture
def toy_engine():
    engine = engines.register(
        Engine(
            "toyserve",
            "ToyServe",
            (
                Rule("requests_finished", "counter", ("toy_requests_done",)),
                Rule("e2e_seconds", "histogram", ("toy_latency_seconds",)),
            ),
        )
    )
    yield engine
    engines.unregister("toyserve")


def test_a_registered_engine_is_accepted_by_ingest(agent_client, service, toy_engine):
    texts = [TOY_EXPOSITION % (n, n, n, n) for n in (10, 25)]
    response = post_batch(agent_client, scrape_batch(service.slug, "toyserve", texts))
    assert response.status_code == 202, response.json()
    assert ScrapeWindow.objects.get().source == "toyserve"


def test_an_unknown_engine_is_refused_naming_the_source(agent_client, service):
    batch = make_batch(requests=[])
    batch["scrapes"] = [
        {"ts": batch["sent_at"], "service": service.slug, "source": "toyserve", "exposition": ""}
    ]
    response = agent_client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
    assert response.status_code == 400
    assert "toyserve" in json.dumps(response.json())


def test_a_registered_engine_is_a_service_engine_choice(toy_engine, owner):
    form = ServiceSettingsForm(user=owner)
    assert ("toyserve", "ToyServe") in form.fields["engine"].choices


def test_a_registered_engine_is_a_pull_kind(toy_engine):
    assert "toyserve" in dict(Host._meta.get_field("pull_kind").choices)


def test_the_agent_takes_any_engine_name_and_leaves_the_check_to_the_server():
    target = parse_engine_spec("toyserve:chat=http://127.0.0.1:9/metrics", ["chat"])
    assert (target.source, target.service) == ("toyserve", "chat")


@pytest.mark.postgres
def test_an_engine_with_a_long_name_is_stored_on_postgresql(agent_client, service):
    # "tensorrt-llm" is 12 characters: the scrape-window column used to hold 10 (an HTTP 500).
    engines.register(
        Engine(
            "tensorrt-llm",
            "TensorRT-LLM",
            (Rule("e2e_seconds", "histogram", ("toy_latency_seconds",)),),
        )
    )
    try:
        texts = [TOY_EXPOSITION % (n, n, n, n) for n in (10, 25)]
        response = post_batch(agent_client, scrape_batch(service.slug, "tensorrt-llm", texts))
    finally:
        engines.unregister("tensorrt-llm")
    assert response.status_code == 202, response.json()
    assert ScrapeWindow.objects.get().source == "tensorrt-llm"


def test_an_engine_name_longer_than_its_columns_is_refused_at_registration():
    with pytest.raises(ValueError, match="holds 20"):
        engines.register(Engine("a-very-long-engine-name", "Long", ()))
    assert "a-very-long-engine-name" not in engines.engine_names()

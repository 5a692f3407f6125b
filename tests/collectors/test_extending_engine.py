"""docs/extending.md, "A serving engine", followed literally: the block as a module, discovered."""

import pytest

from collectors.exposition import engines
from collectors.models import ScrapeWindow
from dossiers.forms import ServiceSettingsForm
from tests.extending_doc import module_from_doc
from tests.factories.batches import post_batch, scrape_batch

pytestmark = pytest.mark.django_db

EXPOSITION = """# TYPE myengine_requests_completed counter
myengine_requests_completed_total %d
# TYPE myengine_request_latency_seconds histogram
myengine_request_latency_seconds_bucket{le="0.5"} %d
myengine_request_latency_seconds_bucket{le="+Inf"} %d
myengine_request_latency_seconds_sum 1.0
myengine_request_latency_seconds_count %d
# TYPE myengine_queue_size gauge
myengine_queue_size 3
"""


@pytest.fixture
def myengine(tmp_path):
    with module_from_doc("A serving engine", tmp_path, lambda: engines.unregister("myengine")):
        yield engines.ENGINES["myengine"]


def test_the_documented_engine_is_discovered(myengine):
    assert myengine.label == "MyEngine"


def test_a_push_from_the_documented_engine_yields_its_canonical_series(
    agent_client, service, myengine
):
    texts = [EXPOSITION % (n, n, n, n) for n in (10, 25)]
    response = post_batch(agent_client, scrape_batch(service.slug, "myengine", texts))
    assert response.status_code == 202, response.json()
    window = ScrapeWindow.objects.get()
    assert (window.counters["requests_finished"], window.gauges["requests_waiting"]) == (15, 3)


def test_the_documented_engine_is_a_service_engine_choice(myengine, owner):
    assert ("myengine", "MyEngine") in ServiceSettingsForm(user=owner).fields["engine"].choices

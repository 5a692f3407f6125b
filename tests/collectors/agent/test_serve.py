import json
import urllib.error
import urllib.request

import pytest

from collectors.agent.agent import Agent
from collectors.agent.batch import new_batch
from collectors.agent.config import build_config
from collectors.agent.serve import BatchServer, LatestBatch
from tests.factories.agent import simulated


@pytest.fixture
def served():
    latest = LatestBatch()
    server = BatchServer(("127.0.0.1", 0), latest).start()
    host, port = server.address
    yield f"http://{host}:{port}", latest
    server.stop()


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_it_answers_503_before_the_first_batch(served):
    url, _ = served

    assert get(f"{url}/batch") == (503, {"detail": "no batch collected yet"})


def test_it_serves_the_latest_batch_document(served):
    url, latest = served
    latest.set(new_batch(host="gpu-01"))
    newest = new_batch(host="gpu-01")
    latest.set(newest)

    assert get(f"{url}/batch") == (200, newest)


def test_it_answers_404_elsewhere(served):
    url, _ = served

    assert get(f"{url}/metrics")[0] == 404


def test_an_agent_with_serve_and_no_server_serves_what_it_collects():
    config = build_config(
        {"host": "demo-gpu-01", "serve": "127.0.0.1:0", "services": ["chat-7b"]}, {}
    )
    agent = Agent(config, source=simulated(config))
    assert agent.delivery is None
    server = agent.start_server()
    try:
        batch, outcome = agent.tick()
        host, port = server.address
        status, served = get(f"http://{host}:{port}/batch")
    finally:
        agent.close()

    assert outcome is None
    assert (status, served["batch_id"]) == (200, batch["batch_id"])

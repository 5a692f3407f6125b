import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(client, owner):
    client.force_login(owner)
    return client


def test_the_schema_lists_the_ingest_path_with_its_request_shape(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    post = schema["paths"]["/api/v1/ingest/"]["post"]
    assert set(post["responses"]) >= {"200", "202", "400", "401", "403", "413"}
    ref = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    batch = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert {"batch_id", "host", "gpus", "scrapes", "requests"} <= set(batch["properties"])


def test_the_schema_lists_the_metrics_path(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "/api/v1/services/{slug}/metrics/" in schema["paths"]


def test_the_schema_documents_404_413_and_429_and_minimum_lengths(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    assert {"413", "429"} <= set(paths["/api/v1/ingest/"]["post"]["responses"])
    assert "404" in paths["/api/v1/services/{slug}/metrics/"]["get"]["responses"]
    assert {"404", "413"} <= set(paths["/api/v1/services/{slug}/gate/"]["post"]["responses"])
    components = schema["components"]["schemas"]
    assert components["IngestBatch"]["properties"]["host"]["minLength"] == 1
    assert components["RequestSample"]["properties"]["service"]["minLength"] == 1

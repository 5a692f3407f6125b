"""POST /api/v1/services/<slug>/experiments/: a CI job records two stored runs as an experiment.

The runs are the real `vllm bench sweep serve` folder (--max-num-seqs 1, then 4, each at
concurrency 1, 2 and 4, three times: SOURCES.md), imported as the load-test API would."""

from pathlib import Path

import pytest
from rest_framework.test import APIClient

from collectors.services.tokens import token_issue_for_host_name
from dossiers.models import Baseline, Experiment
from loadtests.importing import import_loadtest_files
from loadtests.one_change import changes_into
from loadtests.sweeps import sweeps_for_service
from loadtests.tokens import ci_token_issue

pytestmark = pytest.mark.django_db

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "vllm-bench"
FOLDER = REAL / "e2e-vllm-0.32.0-cpu-sweep-max_num_seqs.tar.gz"
URL = "/api/v1/services/chat-7b/experiments/"


def client_with(plaintext: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {plaintext}")
    return client


def max_num_seqs_1_to_4(service):
    """The folder's change, max_num_seqs 1 -> 4, with its pairs of runs at one load."""
    import_loadtest_files(service=service, files=[(FOLDER.read_bytes(), FOLDER.name)])
    sweeps = sweeps_for_service(service)
    after_sweep = next(s for s in sweeps if s.parameters.get("max_num_seqs") == "4")
    (change,) = changes_into(after_sweep, sweeps)
    return change


@pytest.fixture
def pair(service):
    """The before and after runs at concurrency 4."""
    return max_num_seqs_1_to_4(service).pairs[-1]


@pytest.fixture
def promoter(service):
    _, plaintext = ci_token_issue(service=service, can_promote=True, label="tuning job")
    return client_with(plaintext)


def record(client: APIClient, before: int, after: int):
    return client.post(URL, {"before": before, "after": after}, format="json")


def test_a_ci_token_records_the_runs_as_a_pending_experiment(promoter, pair):
    answer = record(promoter, pair.before.pk, pair.after.pk)
    assert (answer.status_code, answer.json()["verdict"], answer.json()["variable_key"]) == (
        201,
        "pending",
        "max_num_seqs",
    )


def test_the_experiment_links_its_baselines_to_the_two_runs(promoter, pair):
    record(promoter, pair.before.pk, pair.after.pk)
    experiment = Experiment.objects.get()
    assert (experiment.before.source_load_test, experiment.after.source_load_test) == (
        pair.before,
        pair.after,
    )


def test_its_notes_name_the_token_and_keep_the_gates_reading(promoter, pair):
    notes = record(promoter, pair.before.pk, pair.after.pk).json()["notes"]
    assert "through the API by CI token phc_" in notes and "“tuning job”" in notes
    assert "The release gate, 3 runs before and 3 after" in notes


def test_the_answer_links_to_the_experiment_on_the_dossier(promoter, pair):
    body = record(promoter, pair.before.pk, pair.after.pk).json()
    assert body["url"] == f"http://testserver/services/chat-7b/#experiment-{body['id']}"


def test_a_retry_answers_200_with_the_same_experiment(promoter, pair):
    first = record(promoter, pair.before.pk, pair.after.pk)
    again = record(promoter, pair.before.pk, pair.after.pk)
    assert (again.status_code, again.json()["id"], Experiment.objects.count()) == (
        200,
        first.json()["id"],
        1,
    )


def test_recording_leaves_the_current_baseline_alone(make_service):
    service = make_service("chat-8b")
    current = Baseline.objects.get(service=service, is_current=True)
    change = max_num_seqs_1_to_4(service)
    _, plaintext = ci_token_issue(service=service, can_promote=True)
    answer = client_with(plaintext).post(
        "/api/v1/services/chat-8b/experiments/",
        {"before": change.pairs[0].before.pk, "after": change.pairs[0].after.pk},
        format="json",
    )
    assert answer.status_code == 201
    assert Baseline.objects.get(service=service, is_current=True) == current


def test_runs_of_two_loads_are_refused_with_422_saying_why(promoter, service):
    change = max_num_seqs_1_to_4(service)
    answer = record(promoter, change.pairs[0].before.pk, change.pairs[-1].after.pk)
    assert answer.status_code == 422
    assert "not measured at the same load" in answer.json()["detail"]
    assert not Experiment.objects.exists()


def test_a_run_of_another_service_is_refused_naming_the_field(promoter, pair, make_service):
    other = make_service("chat-8b")
    import_loadtest_files(service=other, files=[(FOLDER.read_bytes(), FOLDER.name)])
    foreign = other.load_tests.order_by("pk").first()
    answer = record(promoter, foreign.pk, pair.after.pk)
    assert answer.status_code == 400
    assert f"no run {foreign.pk} of service chat-7b" in str(answer.json()["before"])


def test_the_same_run_twice_is_refused_naming_the_after(promoter, pair):
    answer = record(promoter, pair.after.pk, pair.after.pk)
    assert (answer.status_code, "same run" in str(answer.json()["after"])) == (400, True)


@pytest.mark.parametrize(
    "body",
    [{}, {"before": "x", "after": 2}, {"before": -1, "after": 2}, {"before": 10**30, "after": 2}],
)
def test_a_malformed_body_gets_400_not_a_server_error(promoter, body):
    assert promoter.post(URL, body, format="json").status_code == 400


def test_a_token_without_the_promote_permission_gets_403_saying_what_it_needs(service, pair):
    _, plaintext = ci_token_issue(service=service, label="gate only")
    answer = record(client_with(plaintext), pair.before.pk, pair.after.pk)
    assert answer.status_code == 403
    assert "makes its two runs baselines" in answer.json()["detail"]
    assert not Experiment.objects.exists()


def test_an_agent_token_gets_403(pair):
    _, plaintext = token_issue_for_host_name(host_name="gpu-host-1")
    assert record(client_with(plaintext), pair.before.pk, pair.after.pk).status_code == 403


def test_a_team_member_records_through_a_session(client, owner, pair):
    client.force_login(owner)
    answer = client.post(
        URL, {"before": pair.before.pk, "after": pair.after.pk}, content_type="application/json"
    )
    assert (answer.status_code, Experiment.objects.get().created_by) == (201, owner)


def test_an_unknown_service_gets_404(promoter):
    answer = promoter.post(
        "/api/v1/services/nope/experiments/", {"before": 1, "after": 2}, format="json"
    )
    assert answer.status_code == 404

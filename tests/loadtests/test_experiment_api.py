"""/api/v1/services/<slug>/experiments/: a CI job records two stored runs as an experiment (POST)
and finds what the team judged of it (GET).

The runs are the real `vllm bench sweep serve` folder (--max-num-seqs 1, then 4, each at
concurrency 1, 2 and 4, three times: SOURCES.md), imported as the load-test API would."""

from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from collectors.services.tokens import token_issue_for_host_name
from dossiers.models import Baseline, Experiment
from dossiers.services import experiment_update
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


def test_the_answer_names_the_two_runs_it_was_given(promoter, pair):
    body = record(promoter, pair.before.pk, pair.after.pk).json()
    assert (body["before_run"], body["after_run"]) == (pair.before.pk, pair.after.pk)


def test_a_stated_target_is_recorded_and_leads_the_cards_headline(promoter, pair):
    body = {"before": pair.before.pk, "after": pair.after.pk, "target": "output_tps"}
    answer = promoter.post(URL, body, format="json")
    assert (answer.status_code, answer.json()["target"]) == (201, "output_tps")
    assert Experiment.objects.get().headline().metric == "output_tps"


def test_without_a_target_the_answer_says_none_was_stated(promoter, pair):
    assert record(promoter, pair.before.pk, pair.after.pk).json()["target"] is None


def test_an_unknown_target_gets_400_naming_the_field(promoter, pair):
    body = {"before": pair.before.pk, "after": pair.after.pk, "target": "throughput"}
    answer = promoter.post(URL, body, format="json")
    assert answer.status_code == 400
    assert "“throughput” is not a figure an experiment can target" in answer.json()["target"][0]
    assert not Experiment.objects.exists()


def test_a_target_the_runs_did_not_measure_gets_400_naming_the_field(promoter, pair):
    # vLLM's bench files carry no GPU figures: the runs' baselines have no GPU-Util.
    body = {"before": pair.before.pk, "after": pair.after.pk, "target": "gpu_util"}
    answer = promoter.post(URL, body, format="json")
    assert answer.status_code == 400
    assert "GPU-Util was not measured" in answer.json()["target"][0]
    assert (
        Experiment.objects.count(),
        Baseline.objects.filter(source_load_test__isnull=False).count(),
    ) == (0, 0)


# GET: the list.


@pytest.fixture
def two_recorded(promoter, service):
    """Two experiments of the max_num_seqs change (concurrency 1 and 4); the first adopted."""
    change = max_num_seqs_1_to_4(service)
    first, last = change.pairs[0], change.pairs[-1]
    adopted = record(promoter, first.before.pk, first.after.pk).json()["id"]
    Experiment.objects.filter(pk=adopted).update(verdict=Experiment.Verdict.ADOPTED)
    record(promoter, last.before.pk, last.after.pk)
    return first, last


def listed(client: APIClient, query: str = "") -> list[tuple]:
    answer = client.get(URL + query)
    assert answer.status_code == 200, answer.content
    return [(e["before_run"], e["after_run"]) for e in answer.json()["results"]]


def test_a_token_that_may_only_run_the_gate_reads_the_list(service, two_recorded):
    _, plaintext = ci_token_issue(service=service, can_import=False, can_gate=True)
    first, last = two_recorded
    assert sorted(listed(client_with(plaintext))) == sorted(
        [(first.before.pk, first.after.pk), (last.before.pk, last.after.pk)]
    )


def test_the_list_filters_by_verdict(promoter, two_recorded):
    first, _ = two_recorded
    assert listed(promoter, "?verdict=adopted") == [(first.before.pk, first.after.pk)]


def test_the_list_filters_by_a_run_on_either_side(promoter, two_recorded):
    _, last = two_recorded
    assert listed(promoter, f"?run={last.after.pk}") == [(last.before.pk, last.after.pk)]


def test_the_list_filters_by_when_they_were_recorded(promoter, two_recorded):
    first, last = two_recorded
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Experiment.objects.filter(before__source_load_test=first.before).update(created_at=an_hour_ago)
    since = (an_hour_ago + timedelta(minutes=1)).astimezone(ZoneInfo("Asia/Kolkata"))
    answer = promoter.get(URL, {"created_after": since.isoformat()})
    assert [(e["before_run"], e["after_run"]) for e in answer.json()["results"]] == [
        (last.before.pk, last.after.pk)
    ]


def test_the_list_finds_a_verdict_given_since_a_poll(promoter, two_recorded):
    first, _ = two_recorded
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Experiment.objects.update(created_at=an_hour_ago, updated_at=an_hour_ago)
    judged = Experiment.objects.get(before__source_load_test=first.before)
    experiment_update(experiment=judged, verdict=Experiment.Verdict.REVERTED)  # as the page does
    since = (an_hour_ago + timedelta(minutes=1)).isoformat()
    answer = promoter.get(URL, {"changed_after": since}).json()["results"]
    assert [(e["before_run"], e["verdict"]) for e in answer] == [(first.before.pk, "reverted")]


def test_a_time_without_its_zone_gets_400_naming_the_field(promoter, two_recorded):
    answer = promoter.get(URL, {"created_after": "2026-12-01T12:00:00"})
    assert (answer.status_code, "zone offset" in answer.json()["created_after"][0]) == (400, True)


@pytest.mark.parametrize(
    "sent",
    ["yesterday", "2026-12-01", "2026-12-01T12:00Z", "9999-12-31T23:59:59-23:59"],
    ids=["words", "a-date-alone", "no-seconds", "past-the-last-utc-day"],
)
def test_a_time_that_is_not_rfc_3339_gets_400_naming_the_field(promoter, two_recorded, sent):
    answer = promoter.get(URL, {"changed_after": sent})
    assert (answer.status_code, list(answer.json())) == (400, ["changed_after"])


def test_an_unknown_verdict_gets_400_naming_the_field(promoter, two_recorded):
    answer = promoter.get(URL + "?verdict=kept")
    assert (answer.status_code, "verdict" in answer.json()) == (400, True)


def test_the_list_comes_in_pages_with_the_total(promoter, two_recorded):
    body = promoter.get(URL + "?limit=1").json()
    assert (body["count"], len(body["results"]), body["next"] is not None) == (2, 1, True)


def test_any_logged_in_user_reads_the_list_as_the_dossier_page(outsider_client, two_recorded):
    assert outsider_client.get(URL).status_code == 200


def test_a_token_of_another_service_may_not_read_the_list(make_service, two_recorded):
    other = make_service("chat-8b")
    _, plaintext = ci_token_issue(service=other)
    answer = client_with(plaintext).get(URL)
    assert (answer.status_code, "scoped to chat-8b" in answer.json()["detail"]) == (403, True)


def test_an_agent_token_may_not_read_the_list(two_recorded):
    _, plaintext = token_issue_for_host_name(host_name="gpu-host-1")
    assert client_with(plaintext).get(URL).status_code == 403


def test_reading_the_list_does_not_spend_the_tokens_recording_budget(promoter, pair, monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"loadtests": "2/min"})
    polls = [promoter.get(URL).status_code for _ in range(3)]
    assert polls == [200, 200, 200]
    assert record(promoter, pair.before.pk, pair.after.pk).status_code == 201

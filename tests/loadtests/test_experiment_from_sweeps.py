"""Two sweeps one parameter apart are an experiment already measured (loadtests.one_change).

The folder is real: `vllm bench sweep serve` (vLLM 0.32.0, CPU) starting the server with
--max-num-seqs 1 and then 4, each benchmarked three times at concurrency 1, 2 and 4
(SOURCES.md); the labelled runs are `vllm bench serve --metadata tp=1 gpu=cpu` and tp=2."""

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dossiers.models import Baseline, Experiment
from loadtests import configuration
from loadtests.formats import parse_loadtest
from loadtests.importing import baseline_of_run, import_loadtest_files
from loadtests.one_change import (
    ExperimentFromRunsError,
    changes_into,
    compare,
    record_experiment,
)
from loadtests.sweeps import sweeps_for_service

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "vllm-bench"
FOLDER = REAL / "e2e-vllm-0.32.0-cpu-sweep-max_num_seqs.tar.gz"
LABELLED = REAL / "e2e-vllm-0.32.0-cpu-metadata-rates.tar.gz"


def import_file(service, path: Path) -> None:
    import_loadtest_files(service=service, files=[(path.read_bytes(), path.name)])


def sweep_with(service, parameter: str):
    """The service's sweep whose parameters include `parameter` (`key=value`)."""
    key, value = parameter.split("=")
    return next(s for s in sweeps_for_service(service) if s.parameters.get(key) == value)


def change_into(service, parameter: str):
    sweeps = sweeps_for_service(service)
    (change,) = changes_into(sweep_with(service, parameter), sweeps)
    return change


def record_url(service, after) -> str:
    return reverse("loadtests:experiment_from_runs", args=[service.slug, after.pk])


# -- which parameter changed -------------------------------------------------------------------


def test_parameter_sets_differing_in_one_value_are_one_change():
    assert configuration.one_change({"a": "1", "b": "x"}, {"a": "4", "b": "x"}) == ("a", "1", "4")


def test_parameter_sets_differing_in_two_values_are_not_one_change():
    assert configuration.one_change({"a": "1", "b": "x"}, {"a": "4", "b": "y"}) is None


def test_a_parameter_set_against_the_default_is_one_change():
    assert configuration.one_change({}, {"a": "4"}) == ("a", configuration.DEFAULT, "4")


def test_a_metadata_label_named_like_an_override_is_kept_apart():
    params = configuration.parameters({"overrides": {"tp": 1}, "metadata": {"tp": "2"}})
    assert params == {"tp": "1", "metadata.tp": "2"}


def test_a_sweep_runs_label_names_the_parameter_it_ran_with():
    """Otherwise the runs at one load of `vllm bench sweep`'s servers all read "c=4"."""
    (run,) = parse_loadtest((REAL / "er0080-sweep-max_num_seqs4-run0.json").read_bytes())
    assert run.label.endswith("[max_num_seqs=4]")


def test_a_long_parameter_is_cut_in_the_label_and_kept_whole_in_the_run():
    data = json.loads((REAL / "er0080-sweep-max_num_seqs4-run0.json").read_bytes())
    data["compilation_config"] = "x" * 300
    (run,) = parse_loadtest(json.dumps(data).encode())
    assert run.label.endswith("xx…]")
    assert run.extra["overrides"]["compilation_config"] == "x" * 300


# -- the sweep page ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "after", "expected"),
    [
        (FOLDER, "max_num_seqs=4", ("max_num_seqs", "1", "4")),  # `vllm bench sweep serve`
        (LABELLED, "tp=2", ("tp", "1", "2")),  # `vllm bench serve --metadata`
    ],
)
def test_the_parameter_two_sweeps_differ_in_is_found(service, path, after, expected):
    import_file(service, path)
    change = change_into(service, after)
    assert (change.key, change.before_value, change.after_value) == expected


def test_each_load_both_sweeps_measured_is_a_pair(service):
    import_file(service, FOLDER)
    assert [p.x for p in change_into(service, "max_num_seqs=4").pairs] == [1, 2, 4]


def test_sweeps_of_another_workload_are_not_one_parameter_apart(service):
    import_file(service, FOLDER)
    import_file(service, LABELLED)  # rate sweeps, another prompt set: not comparable
    sweeps = sweeps_for_service(service)
    assert {c.key for s in sweeps for c in changes_into(s, sweeps)} == {"max_num_seqs", "tp"}


def test_the_sweep_page_offers_the_measured_experiment(owner_client, service):
    import_file(service, FOLDER)
    sweep = sweep_with(service, "max_num_seqs=4")
    page = owner_client.get(reverse("loadtests:sweep", args=[service.slug, sweep.key]))
    html = page.content.decode()
    assert 'data-change="max_num_seqs"' in html
    assert html.count("Record as experiment") == 3


def test_the_sweep_chart_draws_the_sweep_one_parameter_apart_beside_it(owner_client, service):
    import_file(service, FOLDER)
    sweep = sweep_with(service, "max_num_seqs=4")
    page = owner_client.get(reverse("loadtests:sweep", args=[service.slug, sweep.key]))
    figure = json.loads(
        re.search(r'id="sweep-chart-data"[^>]*>(.*?)</script>', page.content.decode(), re.S)[1]
    )
    assert [trace["name"] for trace in figure["data"]][:2] == ["max_num_seqs=1", "max_num_seqs=4"]


def test_a_reader_outside_the_team_sees_the_change_but_no_record_button(outsider_client, service):
    import_file(service, FOLDER)
    sweep = sweep_with(service, "max_num_seqs=4")
    html = outsider_client.get(reverse("loadtests:sweep", args=[service.slug, sweep.key]))
    html = html.content.decode()
    assert 'data-change="max_num_seqs"' in html and "Record as experiment" not in html


# -- recording ---------------------------------------------------------------------------------


def test_recording_makes_an_experiment_of_the_changed_parameter(owner_client, service):
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[-1]
    owner_client.post(record_url(service, pair.after), {"before": pair.before.pk})
    experiment = Experiment.objects.get(service=service)
    assert (experiment.variable_key, experiment.value_from, experiment.value_to) == (
        "max_num_seqs",
        "1",
        "4",
    )


def test_recording_links_the_two_runs_as_before_and_after(owner_client, service):
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[-1]
    owner_client.post(record_url(service, pair.after), {"before": pair.before.pk})
    experiment = Experiment.objects.get(service=service)
    assert (experiment.before.source_load_test, experiment.after.source_load_test) == (
        pair.before,
        pair.after,
    )


def test_recording_leaves_the_current_baseline_alone(owner_client, make_service):
    service = make_service("chat-8b")
    current = Baseline.objects.get(service=service, is_current=True)
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[0]
    owner_client.post(record_url(service, pair.after), {"before": pair.before.pk})
    assert Baseline.objects.get(service=service, is_current=True) == current


def test_the_recorded_experiment_shows_the_measured_throughput_change(owner_client, service):
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[-1]
    owner_client.post(record_url(service, pair.after), {"before": pair.before.pk})
    deltas = {d.metric: d for d in Experiment.objects.get(service=service).deltas()}
    assert (deltas["output_tps"].before, deltas["output_tps"].after) == (
        pytest.approx(pair.before.output_tps),
        pytest.approx(pair.after.output_tps),
    )


def test_recording_keeps_what_the_gate_said_of_the_runs_in_the_notes(owner_client, service):
    """Batching four requests: more throughput, and each token slower (TPOT P50 +118%)."""
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[-1]
    owner_client.post(record_url(service, pair.after), {"before": pair.before.pk})
    notes = Experiment.objects.get(service=service).notes
    better, _, worse = notes.partition("The release gate, 3 runs before and 3 after")[2].partition(
        "Worse:"
    )
    assert "output tokens/s +180 tok/s" in better and worse.startswith(" TPOT P50 +3.65 ms")


def test_recording_a_pair_twice_keeps_one_experiment(owner_client, service):
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[1]
    for _ in range(2):
        owner_client.post(record_url(service, pair.after), {"before": pair.before.pk})
    assert Experiment.objects.filter(service=service).count() == 1


def test_recording_opens_the_experiment_to_write_its_hypothesis(owner_client, service):
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[0]
    answer = owner_client.post(record_url(service, pair.after), {"before": pair.before.pk})
    experiment = Experiment.objects.get(service=service)
    assert answer.url == reverse("dossiers:experiment_edit", args=[service.slug, experiment.pk])


def test_runs_at_two_loads_are_refused_and_nothing_is_stored(service):
    import_file(service, FOLDER)
    change = change_into(service, "max_num_seqs=4")
    with pytest.raises(ExperimentFromRunsError, match="same load"):
        record_experiment(before=change.pairs[0].before, after=change.pairs[1].after)
    assert not Experiment.objects.filter(service=service).exists()


def test_two_runs_of_one_sweep_are_refused(service):
    import_file(service, FOLDER)
    pairs = change_into(service, "max_num_seqs=4").pairs
    with pytest.raises(ExperimentFromRunsError, match="one parameter"):
        record_experiment(before=pairs[0].after, after=pairs[1].after)


def test_a_refused_pair_says_why_on_the_runs_page(owner_client, service):
    import_file(service, FOLDER)
    pairs = change_into(service, "max_num_seqs=4").pairs
    answer = owner_client.post(
        record_url(service, pairs[1].after), {"before": pairs[0].before.pk}, follow=True
    )
    assert "were not measured at the same load" in answer.content.decode()


def test_a_post_without_the_before_run_is_refused_with_a_message(owner_client, service):
    import_file(service, FOLDER)
    after = change_into(service, "max_num_seqs=4").pairs[0].after
    answer = owner_client.post(record_url(service, after), {"before": "x"}, follow=True)
    assert answer.status_code == 200 and "“before” is missing" in answer.content.decode()


def test_someone_outside_the_team_cannot_record(outsider_client, service):
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[0]
    answer = outsider_client.post(record_url(service, pair.after), {"before": pair.before.pk})
    assert answer.status_code == 403 and not Experiment.objects.exists()


def test_the_demos_second_configuration_is_offered_as_an_experiment(demo_fleet, db):
    """support-chat-7b's rate sweep labelled max_num_seqs=512 against its default one, at the
    four rates both measured."""
    sweeps = sweeps_for_service(demo_fleet.services["support-chat-7b"])
    labelled = next(s for s in sweeps if s.parameters)
    changes = [
        (c.key, c.before_value, c.after_value, len(c.pairs)) for c in changes_into(labelled, sweeps)
    ]
    assert changes == [("max_num_seqs", configuration.DEFAULT, "512", 4)]


def test_the_demo_records_the_512_slots_experiment_judged(demo_fleet, db):
    experiment = demo_fleet.services["support-chat-7b"].experiments.get(variable_key="max_num_seqs")
    assert (experiment.value_from, experiment.value_to, experiment.verdict) == (
        configuration.DEFAULT,
        "512",
        Experiment.Verdict.REVERTED,
    )


def test_the_demo_experiments_verdict_is_what_the_gate_measured(demo_fleet, db):
    """Its notes say 512 slots are slower at 16 req/s, one run a side: the gate agrees."""
    service = demo_fleet.services["support-chat-7b"]
    sweeps = sweeps_for_service(service)
    (change,) = changes_into(next(s for s in sweeps if s.parameters), sweeps)
    pair = next(p for p in change.pairs if p.x == 16)
    rows = gate_rows(pair)
    assert [rows[m] for m in ("e2e_p50_ms", "ttft_p50_ms", "tpot_p50_ms")] == ["regression"] * 3
    assert (len(pair.before_runs), len(pair.after_runs)) == (1, 1)


def test_the_demo_experiments_card_links_to_its_comparison(demo_fleet, client, db):
    client.force_login(demo_fleet.demo_user)
    html = client.get(demo_fleet.services["support-chat-7b"].get_absolute_url()).content.decode()
    (link,) = provenance_links(html)
    assert client.get(link.replace("&amp;", "&")).status_code == 200


def test_the_import_command_names_the_experiment_a_sweep_folder_measured(service):
    out = StringIO()
    call_command("import_loadtest", str(FOLDER), "--service", service.slug, stdout=out)
    lines = [line.strip() for line in out.getvalue().splitlines() if "one parameter apart" in line]
    assert [line.split(";")[0] for line in lines] == [
        "one parameter apart: max_num_seqs 1 → 4 at concurrency 1, 2, 4"
    ]


# -- compared through the gate -----------------------------------------------------------------


def compare_url(service, pair) -> str:
    return reverse("loadtests:compare_runs", args=[service.slug, pair.after.pk, pair.before.pk])


def gate_rows(pair) -> dict[str, str]:
    return {row.metric: row.verdict for row in compare(pair).rows}


def test_each_load_pair_carries_every_run_measured_there(service):
    import_file(service, FOLDER)
    pairs = change_into(service, "max_num_seqs=4").pairs
    assert [(len(p.before_runs), len(p.after_runs)) for p in pairs] == [(3, 3)] * 3


def test_batching_four_requests_is_more_throughput_beyond_the_noise(service):
    """max_num_seqs 1 -> 4 at concurrency 4, three runs a side: +69% output tokens/s."""
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[-1]
    assert gate_rows(pair)["output_tps"] == "improved"


def test_batching_four_requests_makes_each_token_slower_and_the_gate_says_so(service):
    """The same change's price: TPOT P50 +118%, a regression beyond the run-to-run noise."""
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[-1]
    assert gate_rows(pair)["tpot_p50_ms"] == "regression"


def test_the_compare_page_shows_the_gates_table_for_the_load(outsider_client, service):
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[-1]
    html = outsider_client.get(compare_url(service, pair)).content.decode()
    assert 'id="compare-table"' in html and "REGRESSION" in html
    assert "Record as experiment" not in html  # readers compare; team members record


def test_comparing_runs_not_one_parameter_apart_is_not_found(owner_client, service):
    import_file(service, FOLDER)
    pairs = change_into(service, "max_num_seqs=4").pairs
    mixed = reverse(
        "loadtests:compare_runs", args=[service.slug, pairs[1].after.pk, pairs[0].before.pk]
    )
    assert owner_client.get(mixed).status_code == 404


def test_the_sweep_page_links_each_load_to_its_comparison(owner_client, service):
    import_file(service, FOLDER)
    sweep = sweep_with(service, "max_num_seqs=4")
    html = owner_client.get(reverse("loadtests:sweep", args=[service.slug, sweep.key]))
    pair = change_into(service, "max_num_seqs=4").pairs[0]
    assert compare_url(service, pair) in html.content.decode()


# -- from the dossier back to the runs ----------------------------------------------------------


def provenance_links(html: str) -> list[str]:
    return re.findall(r'<a href="([^"]+)" data-provenance>', html)


def test_a_recorded_experiments_card_links_to_its_comparison(owner_client, service):
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[-1]
    owner_client.post(record_url(service, pair.after), {"before": pair.before.pk})
    html = owner_client.get(service.get_absolute_url()).content.decode()
    assert provenance_links(html) == [compare_url(service, pair)]


def test_an_experiment_of_runs_not_one_parameter_apart_has_no_comparison_link(
    owner_client, service
):
    """Two baselines promoted from runs at different loads: the gate page would refuse them."""
    import_file(service, FOLDER)
    pairs = change_into(service, "max_num_seqs=4").pairs
    owner_client.post(record_url(service, pairs[0].after), {"before": pairs[0].before.pk})
    experiment = Experiment.objects.get(service=service)
    experiment.after = baseline_of_run(load_test=pairs[1].after)
    experiment.save()
    html = owner_client.get(service.get_absolute_url()).content.decode()
    assert provenance_links(html) == []


def test_a_baseline_from_a_load_test_links_to_the_run(owner_client, service):
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[0]
    owner_client.post(record_url(service, pair.after), {"before": pair.before.pk})
    baseline = Experiment.objects.get(service=service).after
    html = owner_client.get(baseline.get_absolute_url()).content.decode()
    assert provenance_links(html) == [pair.after.get_absolute_url()]


def test_a_baseline_entered_by_hand_links_to_no_run(owner_client, make_service):
    baseline = Baseline.objects.get(service=make_service("chat-8b"), is_current=True)
    html = owner_client.get(baseline.get_absolute_url()).content.decode()
    assert provenance_links(html) == []


def test_the_dossier_groups_the_sweeps_once_for_every_experiment(owner_client, service):
    """The comparison links of a dossier cost the same queries for one experiment or three."""
    import_file(service, FOLDER)
    pairs = change_into(service, "max_num_seqs=4").pairs
    owner_client.post(record_url(service, pairs[0].after), {"before": pairs[0].before.pk})
    owner_client.get(service.get_absolute_url())  # warm the session and caches
    with CaptureQueriesContext(connection) as one:
        owner_client.get(service.get_absolute_url())
    for pair in pairs[1:]:
        owner_client.post(record_url(service, pair.after), {"before": pair.before.pk})
    with CaptureQueriesContext(connection) as three:
        html = owner_client.get(service.get_absolute_url()).content.decode()
    assert (len(provenance_links(html)), len(three)) == (3, len(one))


def test_the_compare_page_of_a_recorded_pair_links_to_its_experiment(owner_client, service):
    import_file(service, FOLDER)
    pair = change_into(service, "max_num_seqs=4").pairs[-1]
    owner_client.post(record_url(service, pair.after), {"before": pair.before.pk})
    experiment = Experiment.objects.get(service=service)
    html = owner_client.get(compare_url(service, pair)).content.decode()
    assert f"#experiment-{experiment.pk}" in html and "Record as experiment" not in html

"""The dossier as one Markdown file (format v2): a readable export, an explicit import that
refuses what is not a dossier naming the line, a preview, the round trip; and the commands."""

import datetime as dt
import re

import pytest
from django.core.management import CommandError, call_command

from dossiers import selectors, services
from dossiers.markdown import (
    DossierFormatError,
    OtherServiceError,
    export_dossier,
    import_dossier,
    plan_import,
)
from dossiers.models import Bottleneck, Experiment
from tests.factories.catalog import as_blank

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)

NARRATIVE = """# Chat 7B

## What it serves
Support | billing answers.

```python
## not a section: a comment in code
```
"""


@pytest.fixture
def dossier(service, owner):
    """The shared service with every part of a dossier filled in."""
    services.service_update(
        service=service, owner="Alice Martin", on_call="chat-oncall", channel="#chat-perf"
    )
    services.narrative_revise(service=service, body="draft", author=owner)
    services.narrative_revise(service=service, body=NARRATIVE, author=owner)
    v1 = services.config_version_create(
        service=service, config={"max_num_seqs": 8, "dtype": "fp16"}, note="launch | v1"
    )
    v2 = services.config_version_create(
        service=service,
        config={"max_num_seqs": 16, "dtype": "fp16", "sched": {"steps": 8}},
        note="bigger batch",
    )
    before = services.baseline_record(
        service=service,
        label="batch 8",
        config_version=v1,
        measured_at=T0 - dt.timedelta(days=7),
        concurrency=8,
        output_tps=1000.0,
        gpu_util=0.31,
        e2e_p50_ms=800.0,
        e2e_p99_ms=8000.5,
        ttft_p99_ms=2500.0,
        notes="Replay of a production hour.",
    )
    after = services.baseline_record(
        service=service,
        label="batch 16",
        config_version=v2,
        make_current=True,
        measured_at=T0,
        concurrency=16,
        output_tps=2000.0,
        input_tps=4000.0,
        e2e_p50_ms=700.0,
        e2e_p99_ms=1200.0,
        mem_kv_bytes=21_474_836_480,
    )
    services.bottleneck_record(
        service=service,
        title="Tokenizer runs serially on the CPU",
        layer=Bottleneck.Layer.FRAMEWORK,
        kind=Bottleneck.Kind.CPU,
        status=Bottleneck.Status.MITIGATED,
        symptom="GPU 30% busy while requests queue.",
        evidence="Gaps between kernels.\n\nSecond paragraph.",
        identified_on=dt.date(2026, 2, 20),
        resolved_on=dt.date(2026, 3, 1),
        evidence_baselines=[before],
    )
    services.bottleneck_record(
        service=service,
        title="Long prompts stall short ones",
        layer=Bottleneck.Layer.SCHEDULING,
        kind=Bottleneck.Kind.QUEUEING,
        status=Bottleneck.Status.SUSPECTED,
        symptom="TTFT P99 is 5x its P50.",
        identified_on=dt.date(2026, 3, 2),
    )
    services.experiment_record(
        service=service,
        title="Double the batch",
        hypothesis="Throughput grows with batch size.",
        variable_key="max_num_seqs",
        value_from="8",
        value_to="16",
        before=before,
        after=after,
        verdict=Experiment.Verdict.ADOPTED,
        run_on=dt.date(2026, 3, 1),
    )
    return service


def counts(service):
    return (
        service.revisions.count(),
        service.config_versions.count(),
        service.baselines.count(),
        service.bottlenecks.count(),
        service.experiments.count(),
    )


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if needle in line)


# --- The export is a document -------------------------------------------------------------


def test_the_export_says_whom_to_call_before_anything_else(dossier):
    text = export_dossier(dossier)
    assert text.index("\n## ") == text.index("\n## Who to call")
    assert text.index("## Who to call") < text.index("## Open bottlenecks")
    assert "owner: Alice Martin" in text and "channel: '#chat-perf'" in text


def test_the_export_puts_the_open_bottleneck_before_the_mitigated_one(dossier):
    text = export_dossier(dossier)
    assert text.index("### Long prompts stall") < text.index("## Narrative")
    assert text.index("## Past bottlenecks") < text.index("### Tokenizer runs serially")


def test_the_export_states_memory_in_gb_and_utilization_in_percent(dossier):
    text = export_dossier(dossier)
    assert "kv_cache_gb: 21.47483648" in text and "21474836480" not in text
    assert "gpu_busy_pct: 31" in text
    assert "GPU memory: weights —, KV cache 21.5 GB." in text


def test_the_export_shows_experiment_changes_in_units_beside_the_percent(dossier):
    text = export_dossier(dossier)
    assert "| E2E P99 | 8,000 ms | 1,200 ms | -6,800 ms (-85.0%) |" in text
    assert "| Output tokens/s | 1,000 tok/s | 2,000 tok/s | +1,000 tok/s (+100.0%) |" in text


def test_the_export_links_to_the_services_live_pages_at_the_site_url(dossier, settings):
    settings.SITE_URL = "https://perfhub.example.com/"
    (line,) = [line for line in export_dossier(dossier).splitlines() if line.startswith("Live")]
    assert "[Dossier](https://perfhub.example.com/services/chat-7b/)" in line
    assert "[Capacity planner](https://perfhub.example.com/services/chat-7b/planner/)" in line


def test_the_export_ends_with_a_glossary(dossier):
    text = export_dossier(dossier)
    assert text.index("## Glossary") > text.index("## Config versions")
    assert "**TTFT**: time to first token" in text


# --- Round trip ------------------------------------------------------------------------------


def test_export_then_import_into_an_empty_service_exports_the_same_text(dossier, blank, owner):
    text = export_dossier(dossier)
    import_dossier(service=blank, text=text, author=owner, rename=True)
    assert export_dossier(blank) == as_blank(text)


def test_import_copies_every_part_of_the_dossier(dossier, blank, owner):
    import_dossier(service=blank, text=as_blank(export_dossier(dossier)), author=owner)
    blank.refresh_from_db()
    assert (blank.name, blank.price_per_mtok, blank.slo_p99_e2e_ms) == ("Chat 7B", 5, 2000)
    people = (blank.owner, blank.on_call, blank.channel)
    assert people == ("Alice Martin", "chat-oncall", "#chat-perf")
    assert selectors.current_narrative(blank).body == NARRATIVE.strip()
    assert selectors.current_baseline(blank).label == "batch 16"
    assert selectors.current_baseline(blank).mem_kv_bytes == 21_474_836_480
    assert blank.baselines.get(label="batch 8").gpu_util == 0.31
    assert selectors.current_config(blank).config["sched"] == {"steps": 8}
    assert blank.config_versions.get(version=1).note == "launch | v1"
    mitigated = blank.bottlenecks.get(status="mitigated")
    assert list(mitigated.evidence_baselines.values_list("label", flat=True)) == ["batch 8"]
    assert blank.experiments.get().after.label == "batch 16"


def test_config_versions_keep_their_dates(dossier, blank, owner):
    dossier.config_versions.update(created_at=T0 - dt.timedelta(days=30))
    import_dossier(service=blank, text=as_blank(export_dossier(dossier)), author=owner)
    assert set(blank.config_versions.values_list("created_at", flat=True)) == {
        T0 - dt.timedelta(days=30)
    }


def test_the_imported_current_baseline_is_dated_by_its_measurement_not_the_import(
    dossier, blank, owner
):
    import_dossier(service=blank, text=as_blank(export_dossier(dossier)), author=owner)
    current = selectors.current_baseline(blank)
    assert current.promoted_at == current.measured_at
    assert current.promoted_via == "dossier import"


def test_importing_the_same_file_twice_adds_nothing_the_second_time(dossier, blank, owner):
    text = as_blank(export_dossier(dossier))
    import_dossier(service=blank, text=text, author=owner)
    first = counts(blank)
    plan = import_dossier(service=blank, text=text, author=owner)
    assert counts(blank) == first
    assert not plan.changes_anything


def test_an_edited_narrative_becomes_a_new_revision(dossier, owner):
    text = export_dossier(dossier).replace("Support | billing answers.", "Billing only.")
    import_dossier(service=dossier, text=text, author=owner)
    current = selectors.current_narrative(dossier)
    assert (current.number, current.author) == (3, owner)
    assert "Billing only." in current.body


# --- Preview ---------------------------------------------------------------------------------


def test_the_preview_lists_what_the_import_would_change_and_changes_nothing(dossier, blank):
    plan = plan_import(service=blank, text=export_dossier(dossier))
    assert plan.renames
    assert {c.name for c in plan.field_changes} >= {"name", "engine", "owner"}
    assert plan.new_baselines == ["B1: batch 8", "B2: batch 16"]
    assert plan.current_baseline == "batch 16"
    assert plan.new_experiments == ["Double the batch"]
    assert counts(blank) == (0, 0, 0, 0, 0)


# --- Refusals --------------------------------------------------------------------------------


def test_another_services_file_is_refused_unless_renaming_is_asked_for(dossier, blank, owner):
    with pytest.raises(OtherServiceError, match="dossier of 'chat-7b', not 'blank'"):
        import_dossier(service=blank, text=export_dossier(dossier), author=owner)
    blank.refresh_from_db()
    assert (blank.name, counts(blank)) == ("Blank", (0, 0, 0, 0, 0))


def test_a_file_without_the_header_is_not_a_dossier(blank, owner):
    with pytest.raises(DossierFormatError, match="line 1: not a PerfHub dossier"):
        import_dossier(service=blank, text="# notes\n\n## Service\n", author=owner)


def test_an_unknown_format_version_is_refused_naming_its_line(dossier, owner):
    text = export_dossier(dossier).replace("version: 2", "version: 9", 1)
    with pytest.raises(DossierFormatError, match="line 3: header: format version 9"):
        import_dossier(service=dossier, text=text, author=owner)


def test_a_version_1_file_is_refused_with_what_to_do(blank, owner):
    text = "# Performance dossier: x\n\n<!-- perfhub-dossier v1 -->\n\n## Service\n"
    with pytest.raises(DossierFormatError, match=r"line 3: this is a version 1 dossier.*export"):
        import_dossier(service=blank, text=text, author=owner)


def test_a_header_that_is_never_closed_is_refused_naming_its_line(dossier, owner):
    text = export_dossier(dossier).replace("team: inference\n---\n", "team: inference\n", 1)
    with pytest.raises(DossierFormatError, match=r"line 1: the header block .* never closed"):
        import_dossier(service=dossier, text=text, author=owner)


def test_a_malformed_header_line_is_refused_naming_it(dossier, owner):
    text = export_dossier(dossier).replace("service: chat-7b", "service: [chat-7b", 1)
    with pytest.raises(DossierFormatError, match=r"line \d: header: not valid YAML"):
        import_dossier(service=dossier, text=text, author=owner)


def test_an_unknown_header_key_is_refused_naming_its_line(dossier, owner):
    text = export_dossier(dossier).replace("team: inference", "team: inference\nowner: x", 1)
    with pytest.raises(DossierFormatError, match="line 6: header: unknown key 'owner'"):
        import_dossier(service=dossier, text=text, author=owner)


def test_a_file_without_a_narrative_section_is_rejected_naming_it(dossier, owner):
    text = export_dossier(dossier).replace("## Narrative", "## Story")
    with pytest.raises(DossierFormatError, match="unknown section '## Story'"):
        import_dossier(service=dossier, text=text, author=owner)


def test_a_config_that_is_not_json_is_rejected_naming_its_line(dossier, blank, owner):
    text = as_blank(export_dossier(dossier)).replace('"max_num_seqs": 16,', '"max_num_seqs": 16,,')
    bad_line = line_of(text, '"max_num_seqs": 16,,')
    expected = rf"line {bad_line}: Config versions > v2: the config is not valid JSON"
    with pytest.raises(DossierFormatError, match=expected):
        import_dossier(service=blank, text=text, author=owner)


def test_nothing_is_changed_when_a_file_is_rejected(dossier, blank, owner):
    # The bad value comes last (the experiment), after everything else was written.
    text = as_blank(export_dossier(dossier)).replace("verdict: adopted", "verdict: great")
    with pytest.raises(DossierFormatError, match=r"Experiments > Double the batch: verdict"):
        import_dossier(service=blank, text=text, author=owner)
    assert counts(blank) == (0, 0, 0, 0, 0)
    blank.refresh_from_db()
    assert blank.name == "Blank"


def test_a_negative_price_is_rejected_and_the_service_keeps_its_price(dossier, owner):
    text = export_dossier(dossier).replace("gpu_hour_price: 10", "gpu_hour_price: -3")
    with pytest.raises(DossierFormatError, match="Service: gpu_hour_price"):
        import_dossier(service=dossier, text=text, author=owner)
    dossier.refresh_from_db()
    assert dossier.gpu_hour_price == 10


def test_a_value_of_the_wrong_type_is_rejected_naming_field_and_line(dossier, blank, owner):
    text = as_blank(export_dossier(dossier)).replace("concurrency: 16", "concurrency: sixteen")
    line = line_of(text, "concurrency: sixteen")
    with pytest.raises(DossierFormatError, match=rf"line {line}: Baselines > B2: concurrency"):
        import_dossier(service=blank, text=text, author=owner)


def test_an_experiment_naming_an_unknown_baseline_is_rejected(dossier, blank, owner):
    text = as_blank(export_dossier(dossier)).replace("after: B2", "after: B9")
    with pytest.raises(DossierFormatError, match="after: no baseline 'B9'"):
        import_dossier(service=blank, text=text, author=owner)


def test_a_stated_target_is_exported_and_imported_back(dossier, blank, owner):
    Experiment.objects.filter(service=dossier).update(target="output_tps")
    text = export_dossier(dossier)
    assert "target: output_tps" in text and "· target Output tokens/s ·" in text
    import_dossier(service=blank, text=as_blank(text), author=owner)
    assert blank.experiments.get().target == "output_tps"


def test_the_export_shows_the_stated_targets_change_though_it_is_not_a_usual_row(dossier):
    dossier.baselines.update(e2e_p90_ms=900.0)
    Experiment.objects.filter(service=dossier).update(target="e2e_p90_ms")
    assert "| E2E P90 | 900 ms | 900 ms |" in export_dossier(dossier)


def test_an_unknown_target_is_rejected_naming_its_line(dossier, blank, owner):
    text = as_blank(export_dossier(dossier)).replace(
        "verdict: adopted", "verdict: adopted\ntarget: throughput"
    )
    line = line_of(text, "target: throughput")
    with pytest.raises(
        DossierFormatError, match=rf"line {line}: Experiments > Double the batch: target: expected"
    ):
        import_dossier(service=blank, text=text, author=owner)


def test_a_target_the_baselines_did_not_measure_is_rejected_naming_the_experiment(
    dossier, blank, owner
):
    # The fixture's after baseline has no GPU-Util.
    text = as_blank(export_dossier(dossier)).replace(
        "verdict: adopted", "verdict: adopted\ntarget: gpu_util"
    )
    with pytest.raises(
        DossierFormatError,
        match="Experiments > Double the batch: target: GPU-Util was not measured by the after",
    ):
        import_dossier(service=blank, text=text, author=owner)
    assert not blank.experiments.exists()


# --- Commands --------------------------------------------------------------------------------


def test_export_command_writes_the_file(dossier, tmp_path):
    out = tmp_path / "chat.md"
    call_command("export_dossier", "chat-7b", "-o", str(out))
    assert out.read_text() == export_dossier(dossier)


def test_export_command_exits_2_naming_an_unwritable_output(dossier, tmp_path):
    with pytest.raises(CommandError, match="--output: No such file") as refused:
        call_command("export_dossier", "chat-7b", "-o", str(tmp_path / "missing" / "chat.md"))
    assert refused.value.returncode == 2


def test_import_command_merges_a_file(dossier, blank, tmp_path):
    path = tmp_path / "chat.md"
    path.write_text(as_blank(export_dossier(dossier)))
    call_command("import_dossier", str(path), "--service", "blank")
    assert counts(blank) == (1, 2, 2, 2, 1)


def test_import_command_refuses_another_services_file_without_rename(dossier, blank, tmp_path):
    path = tmp_path / "chat.md"
    path.write_text(export_dossier(dossier))
    with pytest.raises(CommandError, match="Pass --rename") as excinfo:
        call_command("import_dossier", str(path), "--service", "blank")
    assert excinfo.value.returncode == 2
    call_command("import_dossier", str(path), "--service", "blank", "--rename")
    blank.refresh_from_db()
    assert blank.name == "Chat 7B"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("# nothing here\n", "not a PerfHub dossier"),
        ("---\nformat: perfhub-dossier\nversion: 9\nservice: chat-7b\n---\n", "version 9"),
        ("---\nformat: perfhub-dossier\nservice: chat-7b\n---\n", "'version' is required"),
    ],
)
def test_import_command_exits_2_with_a_one_line_reason(dossier, tmp_path, text, reason):
    path = tmp_path / "bad.md"
    path.write_text(text)
    with pytest.raises(CommandError, match=reason) as excinfo:
        call_command("import_dossier", str(path), "--service", "chat-7b")
    assert excinfo.value.returncode == 2
    assert "\n" not in str(excinfo.value)


def test_import_command_exits_2_for_an_unknown_service(tmp_path, db):
    path = tmp_path / "x.md"
    path.write_text("")
    with pytest.raises(CommandError, match="Unknown service slug: 'nope'") as excinfo:
        call_command("import_dossier", str(path), "--service", "nope")
    assert excinfo.value.returncode == 2


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("identified_on: 2026-03-02", "identified_on: 2026-13-45", "month must be in 1..12"),
        ("identified_on: 2026-03-02", "identified_on: 0001-01-01", "between 1990 and 2100"),
        ("2026-02-22 12:00:00+00:00", "0001-01-01 00:00:00+05:00", "between 1990 and 2100"),
        ("concurrency: 16", "concurrency: " + "[" * 5000, "nests too deeply"),
        ("concurrency: 16", "a: &a [1, 2]\nconcurrency: *a", "aliases"),
        ("gpu_busy_pct: 31", "gpu_busy_pct: .inf", "expected a number"),
        ("name: Chat 7B", "name: Chat\x007B", "control character U+0000"),
        ("concurrency: 16", "concurrency: !!python/object:os.system x", "not valid YAML"),
    ],
)
def test_hostile_values_are_refused_naming_the_line(dossier, owner, old, new, reason):
    text = export_dossier(dossier).replace(old, new, 1)
    with pytest.raises(DossierFormatError, match=rf"^line \d+: .*{re.escape(reason)}"):
        import_dossier(service=dossier, text=text, author=owner)

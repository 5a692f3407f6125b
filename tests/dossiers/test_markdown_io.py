"""The dossier as one Markdown file: export, import, round trip, rejection; and the commands."""

import datetime as dt
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from dossiers import selectors, services
from dossiers.markdown_io import MarkdownImportError, export_dossier, import_dossier
from dossiers.models import Bottleneck, Experiment, Service

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


@pytest.fixture
def blank(team):
    return Service.objects.create(
        slug="blank",
        name="Blank",
        team=team,
        model_name="m",
        model_params_b=Decimal("1"),
        engine="tgi",
        gpu_model="L40S",
        gpu_hour_price=Decimal("1"),
    )


def counts(service):
    return (
        service.revisions.count(),
        service.config_versions.count(),
        service.baselines.count(),
        service.bottlenecks.count(),
        service.experiments.count(),
    )


def test_export_then_import_into_a_fresh_service_exports_the_same_text(dossier, blank, owner):
    text = export_dossier(dossier)
    import_dossier(service=blank, text=text, author=owner)
    again = export_dossier(blank)
    assert again.replace("| slug | blank |", "| slug | chat-7b |") == text


def test_import_copies_every_part_of_the_dossier(dossier, blank, owner):
    import_dossier(service=blank, text=export_dossier(dossier), author=owner)
    blank.refresh_from_db()
    assert (blank.name, blank.price_per_mtok, blank.slo_p99_e2e_ms) == ("Chat 7B", 5, 2000)
    assert selectors.current_narrative(blank).body == NARRATIVE.strip()
    assert selectors.current_baseline(blank).label == "batch 16"
    assert selectors.current_config(blank).config["sched"] == {"steps": 8}
    assert blank.config_versions.get(version=1).note == "launch | v1"
    assert list(blank.bottlenecks.get().evidence_baselines.values_list("label", flat=True)) == [
        "batch 8"
    ]
    assert blank.experiments.get().after.label == "batch 16"


def test_importing_the_same_file_twice_adds_nothing_the_second_time(dossier, blank, owner):
    text = export_dossier(dossier)
    import_dossier(service=blank, text=text, author=owner)
    first = counts(blank)
    summary = import_dossier(service=blank, text=text, author=owner)
    assert counts(blank) == first
    assert summary.narrative_revised is False
    assert summary.baselines == summary.experiments == summary.config_versions == 0


def test_reimporting_a_service_own_export_changes_nothing(dossier, owner):
    before = counts(dossier)
    import_dossier(service=dossier, text=export_dossier(dossier), author=owner)
    assert counts(dossier) == before


def test_an_edited_narrative_becomes_a_new_revision(dossier, owner):
    text = export_dossier(dossier).replace("Support | billing answers.", "Billing only.")
    import_dossier(service=dossier, text=text, author=owner)
    current = selectors.current_narrative(dossier)
    assert (current.number, current.author) == (3, owner)
    assert "Billing only." in current.body


def test_a_file_without_a_narrative_section_is_rejected_naming_it(dossier, owner):
    text = export_dossier(dossier).replace("## Narrative", "## Story")
    with pytest.raises(MarkdownImportError, match="'## Narrative'"):
        import_dossier(service=dossier, text=text, author=owner)


def test_a_file_without_a_service_section_is_rejected_naming_it(blank, owner):
    with pytest.raises(MarkdownImportError, match="'## Service'"):
        import_dossier(service=blank, text="# x\n\n## Narrative\n\nhello\n", author=owner)


def test_a_config_that_is_not_json_is_rejected_naming_its_line(dossier, blank, owner):
    text = export_dossier(dossier).replace('"max_num_seqs": 16,', '"max_num_seqs": 16,,')
    bad_line = text.splitlines().index('  "max_num_seqs": 16,,') + 1
    expected = rf"line {bad_line}: Config > v2 .*not valid JSON"
    with pytest.raises(MarkdownImportError, match=expected):
        import_dossier(service=blank, text=text, author=owner)


def test_nothing_is_changed_when_a_file_is_rejected(dossier, blank, owner):
    # The bad value comes last (the experiment), after everything else was written.
    text = export_dossier(dossier).replace("| verdict | adopted |", "| verdict | great |")
    with pytest.raises(MarkdownImportError, match=r"Experiments > Double the batch.*verdict"):
        import_dossier(service=blank, text=text, author=owner)
    assert counts(blank) == (0, 0, 0, 0, 0)
    blank.refresh_from_db()
    assert blank.name == "Blank"


def test_a_negative_price_is_rejected_and_the_service_keeps_its_price(dossier, owner):
    text = export_dossier(dossier).replace("| gpu_hour_price | 10 |", "| gpu_hour_price | -3 |")
    with pytest.raises(MarkdownImportError, match="Service: gpu_hour_price"):
        import_dossier(service=dossier, text=text, author=owner)
    assert dossier.gpu_hour_price == 10
    dossier.refresh_from_db()
    assert dossier.gpu_hour_price == 10


def test_a_value_that_is_not_a_number_is_rejected_naming_field_and_line(dossier, blank, owner):
    text = export_dossier(dossier).replace("| concurrency | 16 |", "| concurrency | sixteen |")
    line = text.splitlines().index("| concurrency | sixteen |") + 1
    with pytest.raises(MarkdownImportError, match=rf"line {line}: Baselines > B2: concurrency"):
        import_dossier(service=blank, text=text, author=owner)


def test_an_experiment_naming_an_unknown_baseline_is_rejected(dossier, blank, owner):
    text = export_dossier(dossier).replace("| after | B2 |", "| after | B9 |")
    with pytest.raises(MarkdownImportError, match="after: no baseline 'B9'"):
        import_dossier(service=blank, text=text, author=owner)


def test_a_narrative_without_markers_keeps_its_own_headings(blank, owner):
    text = (
        "## Service\n\n| field | value |\n|---|---|\n| name | Hand written |\n"
        "| model_name | m |\n| model_params_b | 7 |\n| engine | vllm |\n| gpu_model | A10G |\n"
        "| gpu_hour_price | 1.1 |\n\n## Narrative\n\nIntro.\n\n## Traffic\n\n40 req/s.\n"
    )
    import_dossier(service=blank, text=text, author=owner)
    assert selectors.current_narrative(blank).body == "Intro.\n\n## Traffic\n\n40 req/s."
    blank.refresh_from_db()
    assert blank.engine == "vllm"


def test_export_command_writes_the_file(dossier, tmp_path):
    out = tmp_path / "chat.md"
    call_command("export_dossier", "chat-7b", "-o", str(out))
    assert out.read_text() == export_dossier(dossier)


def test_import_command_merges_a_file(dossier, blank, tmp_path, capsys):
    path = tmp_path / "chat.md"
    path.write_text(export_dossier(dossier))
    call_command("import_dossier", str(path), "--service", "blank")
    assert counts(blank) == (1, 2, 2, 1, 1)


def test_import_command_exits_2_naming_the_problem(dossier, tmp_path):
    path = tmp_path / "bad.md"
    path.write_text("# nothing here\n")
    with pytest.raises(CommandError, match="Missing required section") as excinfo:
        call_command("import_dossier", str(path), "--service", "chat-7b")
    assert excinfo.value.returncode == 2


def test_import_command_exits_2_for_an_unknown_service(tmp_path, db):
    path = tmp_path / "x.md"
    path.write_text("")
    with pytest.raises(CommandError, match="Unknown service slug: 'nope'") as excinfo:
        call_command("import_dossier", str(path), "--service", "nope")
    assert excinfo.value.returncode == 2

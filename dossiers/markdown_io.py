"""A whole dossier as one Markdown file (the seed's "performance profile"), and back.

The file reads well anywhere (GitHub, an editor, a wiki) and parses back exactly. Layout::

    # Performance dossier: <name>

    ## Service            required: a `| field | value |` table of the service's fields
    ## Narrative          required: the narrative, verbatim, between
                          <!-- narrative:start --> and <!-- narrative:end --> (without the
                          markers, the whole section body is the narrative)
    ## Current baseline   derived summary (latencies against the SLO, cost, margin); ignored
                          on import: the current baseline is the one marked `current | yes`
    ## Baselines          one `### B<n>: <label>` per baseline: a field table, a latency table
                          (`| latency (ms) | P50 | P90 | P95 | P99 | P999 |`), `#### Notes`
    ## Bottlenecks        one `### <title>` each: a field table, `#### Symptom`, `#### Evidence`
    ## Experiments        one `### <title>` each: a field table (before/after name B<n>),
                          `#### Hypothesis`, `#### Notes`
    ## Config             one `### v<n>` each: a field table (version, current, note) and a
                          ```json block with the config

Only the sections above are recognised as `## ` headings, so the narrative may use its own
`##` headings. Lines that are neither a table, a `####` text block nor a ```json block are
commentary (computed costs, deltas, diffs) and are ignored on import.

Import (`import_dossier`) is one transaction. It updates the service's fields (except its slug
and team: the target service decides those), adds a narrative revision when the text differs
from the current one, and adds the config versions, baselines, bottlenecks and experiments not
already there. Identity: a config version by (config, note), a baseline by (label, measured_at),
a bottleneck by (title, identified_on), an experiment by (title, run_on). So importing the same
file twice adds nothing the second time. Any bad section, line or value raises
`MarkdownImportError` naming it, and nothing is changed.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction

from dossiers import selectors, services
from dossiers.models import (
    LATENCY_METRICS,
    PERCENTILES,
    RUN_FIELD_NAMES,
    Baseline,
    Bottleneck,
    ConfigVersion,
    Experiment,
    Service,
)

FORMAT_MARKER = "<!-- perfhub-dossier v1 -->"
NARRATIVE_START = "<!-- narrative:start -->"
NARRATIVE_END = "<!-- narrative:end -->"

SECTIONS = (
    "Service",
    "Narrative",
    "Current baseline",
    "Baselines",
    "Bottlenecks",
    "Experiments",
    "Config",
)
REQUIRED_SECTIONS = ("Service", "Narrative")

# Service fields in file order. slug and team are written for the reader, never imported.
SERVICE_FIELDS = ("slug", "team", *Service.EDITABLE_FIELDS, "gate_overrides")
SERVICE_READ_ONLY = {"slug", "team"}

BASELINE_FIELDS = RUN_FIELD_NAMES
BOTTLENECK_FIELDS = ("layer", "kind", "status", "identified_on", "resolved_on")
EXPERIMENT_FIELDS = ("run_on", "variable_key", "value_from", "value_to", "verdict")

LATENCY_HEADER = "latency (ms)"
_PERCENTILE_TITLES = {p: p.upper() for p in PERCENTILES}


class MarkdownImportError(ValueError):
    """The file cannot be imported; the message names the section, item, line or field."""


@dataclass
class ImportSummary:
    narrative_revised: bool = False
    config_versions: int = 0
    baselines: int = 0
    bottlenecks: int = 0
    experiments: int = 0

    def __str__(self) -> str:
        return (
            f"narrative {'revised' if self.narrative_revised else 'unchanged'}, "
            f"{self.config_versions} config version(s), {self.baselines} baseline(s), "
            f"{self.bottlenecks} bottleneck(s), {self.experiments} experiment(s) added"
        )


# --------------------------------------------------------------------------------------------
# Export


def export_dossier(service: Service) -> str:
    """The whole dossier as one Markdown document (deterministic: same data, same text)."""
    configs = list(service.config_versions.order_by("version"))
    baselines = list(
        service.baselines.select_related("config_version").order_by("measured_at", "pk")
    )
    refs = {b.pk: f"B{i}" for i, b in enumerate(baselines, start=1)}
    narrative = selectors.current_narrative(service)

    out: list[str] = [f"# Performance dossier: {service.name}", "", FORMAT_MARKER, ""]
    if service.summary:
        out += [f"> {service.summary}", ""]

    out += ["## Service", ""]
    rows = []
    for name in SERVICE_FIELDS:
        value = service.team.slug if name == "team" else getattr(service, name)
        if value is None or (name == "gate_overrides" and not value):
            continue
        if name == "gate_overrides":
            value = json.dumps(value, sort_keys=True)
        rows.append((name, _fmt(value)))
    out += [*_table(("field", "value"), rows), ""]

    out += ["## Narrative", "", NARRATIVE_START]
    if narrative and narrative.body.strip():
        out.append(narrative.body.strip())
    out += [NARRATIVE_END, ""]

    out += ["## Current baseline", ""]
    current = next((b for b in baselines if b.is_current), None)
    if current is None:
        out += ["No current baseline yet.", ""]
    else:
        out += _current_baseline_summary(service, current, refs[current.pk])

    out += ["## Baselines", ""]
    for baseline in baselines:
        out += _baseline_block(service, baseline, refs[baseline.pk])

    out += ["## Bottlenecks", ""]
    for bottleneck in service.bottlenecks.prefetch_related("evidence_baselines").order_by(
        "identified_on", "pk"
    ):
        out += _bottleneck_block(bottleneck, refs)

    out += ["## Experiments", ""]
    for experiment in service.experiments.select_related(
        "before__config_version", "after__config_version"
    ).order_by("run_on", "pk"):
        out += _experiment_block(experiment, refs)

    out += ["## Config", ""]
    previous = None
    for config in configs:
        out += _config_block(config, previous)
        previous = config
    return "\n".join(out).rstrip("\n") + "\n"


def _current_baseline_summary(service: Service, baseline: Baseline, ref: str) -> list[str]:
    out = [f"**{ref}: {baseline.label}**, measured {_fmt(baseline.measured_at)}.", ""]
    slos = {m: service.slo_for(m) for m in LATENCY_METRICS}
    rows = []
    for metric in LATENCY_METRICS:
        values = [baseline.latency(metric, p) for p in PERCENTILES]
        if all(v is None for v in values):
            continue
        slo = slos[metric]
        name = "end-to-end" if metric == "e2e" else metric.upper()
        cells = [_fmt(v) if v is not None else "-" for v in values]
        rows.append((name, *cells, _fmt(slo) if slo is not None else "-"))
    if rows:
        header = (LATENCY_HEADER, *_PERCENTILE_TITLES.values(), "SLO P99")
        out += [*_table(header, rows), ""]
    out += _economics_lines(service, baseline)
    return out


def _economics_lines(service: Service, baseline: Baseline) -> list[str]:
    lines = []
    for basis, label in Service.TokenBasis.choices:
        economics = baseline.economics(service, basis)
        if economics is None:
            continue
        text = (
            f"- Cost per million {label} (allocation basis, {service.gpus_per_replica} GPU(s) "
            f"per replica): **{economics.cost_per_mtok:.2f} {service.currency}**"
        )
        if economics.margin_percent is not None and basis == service.token_basis:
            text += (
                f"; margin at {_fmt(service.price_per_mtok)}: **{economics.margin_percent:.0f}%**"
            )
        lines.append(text)
    return [*lines, ""] if lines else []


def _baseline_block(service: Service, baseline: Baseline, ref: str) -> list[str]:
    rows = [("current", "yes" if baseline.is_current else "no")]
    if baseline.config_version is not None:
        rows.append(("config_version", f"v{baseline.config_version.version}"))
    for name in BASELINE_FIELDS:
        value = getattr(baseline, name)
        if value is None or value == "":
            continue
        rows.append((name, _fmt(value)))
    out = [f"### {ref}: {baseline.label}", "", *_table(("field", "value"), rows), ""]
    latency_rows = []
    for metric in LATENCY_METRICS:
        values = [baseline.latency(metric, p) for p in PERCENTILES]
        if all(v is None for v in values):
            continue
        latency_rows.append((metric, *(_fmt(v) if v is not None else "" for v in values)))
    if latency_rows:
        header = (LATENCY_HEADER, *_PERCENTILE_TITLES.values())
        out += [*_table(header, latency_rows), ""]
    out += _economics_lines(service, baseline)
    if baseline.notes.strip():
        out += ["#### Notes", "", baseline.notes.strip(), ""]
    return out


def _bottleneck_block(bottleneck: Bottleneck, refs: dict[int, str]) -> list[str]:
    rows = [(name, _fmt(getattr(bottleneck, name))) for name in BOTTLENECK_FIELDS]
    rows = [(k, v) for k, v in rows if v != ""]
    evidence = sorted(
        (refs[b.pk] for b in bottleneck.evidence_baselines.all() if b.pk in refs),
        key=lambda r: int(r[1:]),
    )
    if evidence:
        rows.append(("evidence_baselines", ", ".join(evidence)))
    out = [f"### {bottleneck.title}", "", *_table(("field", "value"), rows), ""]
    out += ["#### Symptom", "", bottleneck.symptom.strip(), ""]
    if bottleneck.evidence.strip():
        out += ["#### Evidence", "", bottleneck.evidence.strip(), ""]
    return out


def _experiment_block(experiment: Experiment, refs: dict[int, str]) -> list[str]:
    rows = [(name, _fmt(getattr(experiment, name))) for name in EXPERIMENT_FIELDS]
    rows.append(("before", refs[experiment.before_id]))
    if experiment.after_id:
        rows.append(("after", refs[experiment.after_id]))
    out = [f"### {experiment.title}", "", *_table(("field", "value"), rows), ""]
    others = experiment.other_changed_keys() if experiment.after_id else None
    if others:
        out += [
            "**More than one variable changed**: besides `"
            + experiment.variable_key
            + "`, the configs also differ in "
            + ", ".join(f"`{k}`" for k in others)
            + ".",
            "",
        ]
    out += ["#### Hypothesis", "", experiment.hypothesis.strip(), ""]
    # The page shows every percentile; the file keeps to what a reader compares first.
    deltas = [d for d in experiment.deltas() if not re.search(r"_p(90|95|999)_ms$", d.metric)]
    if deltas:
        out += ["#### Measured deltas (computed)", ""]
        out += _table(
            ("metric", "before", "after", "change"),
            [
                (
                    d.metric,
                    _fmt(d.before),
                    _fmt(d.after),
                    "-" if d.relative is None else f"{d.relative * 100:+.1f}%",
                )
                for d in deltas
            ],
        )
        out.append("")
    if experiment.notes.strip():
        out += ["#### Notes", "", experiment.notes.strip(), ""]
    return out


def _config_block(config: ConfigVersion, previous: ConfigVersion | None) -> list[str]:
    rows = [
        ("version", str(config.version)),
        ("current", "yes" if config.is_current else "no"),
        ("note", config.note),
    ]
    title = f"### v{config.version}" + (" (current)" if config.is_current else "")
    out = [title, "", *_table(("field", "value"), rows), ""]
    out += ["```json", json.dumps(config.config, indent=2, sort_keys=True), "```", ""]
    if previous is not None:
        diff = config.diff_from(previous)
        if diff:
            out += [f"#### Diff from v{previous.version}", "", "```diff", *diff, "```", ""]
    return out


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    header = list(header)
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |"]
    lines.append("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return lines


def _cell(value: str) -> str:
    # One line per cell; a literal pipe is escaped so the row still splits right.
    return str(value).replace("\r", " ").replace("\n", " ").replace("|", "\\|")


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, float):
        # Shortest text that reads back to the same float; whole numbers without ".0".
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


# --------------------------------------------------------------------------------------------
# Parsing (pure: text -> plain data; errors name the line)

Line = tuple[int, str]  # (1-based line number, text)


@dataclass
class _Block:
    title: str
    line: int
    lines: list[Line] = field(default_factory=list)


@dataclass
class _Table:
    line: int
    header: list[str]
    rows: list[tuple[int, list[str]]]


_FENCE = re.compile(r"^\s*(```|~~~)")
_ROW_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _split_sections(text: str) -> dict[str, _Block]:
    known = {s.lower(): s for s in SECTIONS}
    sections: dict[str, _Block] = {}
    current: _Block | None = None
    in_fence = in_narrative = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped == NARRATIVE_START:
            in_narrative = True
        elif stripped == NARRATIVE_END:
            in_narrative = False
        elif not in_narrative and _FENCE.match(line):
            in_fence = not in_fence
        elif not (in_fence or in_narrative) and line.startswith("## "):
            name = known.get(line[3:].strip().lower())
            if name is not None:
                if name in sections:
                    raise MarkdownImportError(
                        f"line {number}: section '## {name}' appears twice "
                        f"(first at line {sections[name].line})."
                    )
                current = sections[name] = _Block(name, number)
                continue
        if current is not None:
            current.lines.append((number, line))
    missing = [name for name in REQUIRED_SECTIONS if name not in sections]
    if missing:
        raise MarkdownImportError(
            "Missing required section(s): " + ", ".join(f"'## {name}'" for name in missing) + "."
        )
    return sections


def _split_items(section: _Block) -> list[_Block]:
    items: list[_Block] = []
    in_fence = False
    for number, line in section.lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and line.startswith("### "):
            items.append(_Block(line[4:].strip(), number))
            continue
        if items:
            items[-1].lines.append((number, line))
    return items


def _tables(lines: list[Line]) -> list[_Table]:
    """Markdown tables found in `lines`, up to the first `####` text block."""
    tables: list[_Table] = []
    group: list[Line] = []
    in_fence = False
    for number, line in [*lines, (0, "")]:
        if _FENCE.match(line):
            in_fence = not in_fence
        if line.startswith("#### ") and not in_fence:
            break
        if not in_fence and line.strip().startswith("|"):
            group.append((number, line))
            continue
        if group:
            tables.append(_table_from(group))
            group = []
    if group:
        tables.append(_table_from(group))
    return tables


def _table_from(group: list[Line]) -> _Table:
    first_line, header_text = group[0]
    if len(group) < 2 or not _SEPARATOR.match(group[1][1].strip()):
        raise MarkdownImportError(
            f"line {first_line}: a table needs a header row and a '|---|' separator row."
        )
    return _Table(
        first_line, _cells(header_text), [(number, _cells(text)) for number, text in group[2:]]
    )


def _cells(row: str) -> list[str]:
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [cell.strip().replace("\\|", "|") for cell in _ROW_SPLIT.split(row)]


def _key_values(item: _Block, where: str) -> tuple[dict[str, str], dict[str, int]]:
    """The item's `| field | value |` table as {field: text} and {field: line}."""
    tables = [t for t in _tables(item.lines) if t.header[:1] == ["field"]]
    if not tables:
        raise MarkdownImportError(
            f"line {item.line}: {where}: missing the '| field | value |' table."
        )
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, cells in tables[0].rows:
        if len(cells) != 2:
            raise MarkdownImportError(
                f"line {number}: {where}: expected 2 cells (field, value), found {len(cells)}."
            )
        key = cells[0].strip("`").strip()
        if key in values:
            raise MarkdownImportError(f"line {number}: {where}: field '{key}' appears twice.")
        values[key], lines[key] = cells[1], number
    return values, lines


def _texts(item: _Block) -> dict[str, str]:
    """`#### Heading` text blocks of an item, by lower-cased heading."""
    texts: dict[str, list[str]] = {}
    current: list[str] | None = None
    in_fence = False
    for _number, line in item.lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        if not in_fence and line.startswith("#### "):
            current = texts.setdefault(line[5:].strip().lower(), [])
            continue
        if current is not None:
            current.append(line)
    return {key: "\n".join(lines).strip() for key, lines in texts.items()}


def _parse_value(model: type[models.Model], name: str, text: str, where: str, line: int) -> Any:
    """Text from the file -> the Python value the model field stores."""
    model_field = model._meta.get_field(name)
    kind = model_field.get_internal_type()
    text = text.strip()
    if text == "":
        if kind in {"CharField", "TextField"}:
            return ""
        return None
    try:
        if kind == "FloatField":
            return float(text.replace(",", ""))
        if kind in {"PositiveIntegerField", "IntegerField", "BigIntegerField"}:
            return int(text.replace(",", ""))
        if kind == "DecimalField":
            return Decimal(text.replace(",", ""))
        if kind == "DateTimeField":
            value = dt.datetime.fromisoformat(text)
            if value.tzinfo is None:
                raise ValueError("a time zone is required, e.g. +00:00")
            return value
        if kind == "DateField":
            return dt.date.fromisoformat(text)
        if kind == "JSONField":
            return json.loads(text)
    except (ValueError, InvalidOperation) as exc:
        detail = str(exc) if "time zone" in str(exc) else f"'{text}' is not a valid {kind}"
        raise MarkdownImportError(f"line {line}: {where}: {name}: {detail}.") from None
    return text


def _parse_flag(text: str, where: str, name: str, line: int) -> bool:
    value = text.strip().lower()
    if value in {"yes", "true"}:
        return True
    if value in {"no", "false", ""}:
        return False
    raise MarkdownImportError(f"line {line}: {where}: {name}: expected yes or no, got '{text}'.")


def _unknown_fields(values: dict[str, str], lines: dict[str, int], allowed, where: str) -> None:
    for key in values:
        if key not in allowed:
            raise MarkdownImportError(f"line {lines[key]}: {where}: unknown field '{key}'.")


@dataclass
class _ParsedConfig:
    version: int
    is_current: bool
    note: str
    config: dict


@dataclass
class _ParsedBaseline:
    ref: str
    label: str
    line: int
    is_current: bool
    config_ref: int | None
    fields: dict[str, Any]


@dataclass
class _ParsedBottleneck:
    title: str
    line: int
    fields: dict[str, Any]
    evidence_refs: list[str]


@dataclass
class _ParsedExperiment:
    title: str
    line: int
    fields: dict[str, Any]
    before_ref: str
    after_ref: str | None


@dataclass
class _Parsed:
    service_fields: dict[str, Any]
    service_line: int
    narrative: str
    configs: list[_ParsedConfig]
    baselines: list[_ParsedBaseline]
    bottlenecks: list[_ParsedBottleneck]
    experiments: list[_ParsedExperiment]


def _parse(text: str) -> _Parsed:
    sections = _split_sections(text)
    service_fields = _parse_service(sections["Service"])
    narrative = _parse_narrative(sections["Narrative"])
    configs = _parse_configs(sections.get("Config"))
    baselines = _parse_baselines(sections.get("Baselines"), {c.version for c in configs})
    refs = {b.ref for b in baselines}
    bottlenecks = _parse_bottlenecks(sections.get("Bottlenecks"), refs)
    experiments = _parse_experiments(sections.get("Experiments"), refs)
    return _Parsed(
        service_fields,
        sections["Service"].line,
        narrative,
        configs,
        baselines,
        bottlenecks,
        experiments,
    )


def _parse_service(section: _Block) -> dict[str, Any]:
    where = "Service"
    values, lines = _key_values(section, where)
    _unknown_fields(values, lines, SERVICE_FIELDS, where)
    parsed: dict[str, Any] = {}
    for name in SERVICE_FIELDS:
        if name in SERVICE_READ_ONLY:
            continue
        model_field = Service._meta.get_field(name)
        if name not in values:
            if model_field.null:
                parsed[name] = None
            elif model_field.has_default():
                parsed[name] = model_field.get_default()
            elif model_field.blank:
                parsed[name] = ""
            else:
                raise MarkdownImportError(
                    f"line {section.line}: Service: required field '{name}' is missing."
                )
            continue
        parsed[name] = _parse_value(Service, name, values[name], where, lines[name])
    return parsed


def _parse_narrative(section: _Block) -> str:
    texts = [line for _, line in section.lines]
    stripped = [t.strip() for t in texts]
    if NARRATIVE_START in stripped:
        start = stripped.index(NARRATIVE_START)
        if NARRATIVE_END not in stripped[start:]:
            raise MarkdownImportError(
                f"line {section.lines[start][0]}: Narrative: '{NARRATIVE_START}' "
                f"has no matching '{NARRATIVE_END}'."
            )
        end = start + stripped[start:].index(NARRATIVE_END)
        texts = texts[start + 1 : end]
    return "\n".join(texts).strip()


def _parse_configs(section: _Block | None) -> list[_ParsedConfig]:
    if section is None:
        return []
    configs: list[_ParsedConfig] = []
    seen: set[int] = set()
    for item in _split_items(section):
        where = f"Config > {item.title}"
        values, lines = _key_values(item, where)
        _unknown_fields(values, lines, {"version", "current", "note"}, where)
        if "version" not in values:
            raise MarkdownImportError(f"line {item.line}: {where}: missing field 'version'.")
        try:
            version = int(values["version"])
        except ValueError:
            raise MarkdownImportError(
                f"line {lines['version']}: {where}: version: '{values['version']}' "
                "is not a whole number."
            ) from None
        if version in seen:
            raise MarkdownImportError(f"line {item.line}: {where}: version {version} twice.")
        seen.add(version)
        configs.append(
            _ParsedConfig(
                version=version,
                is_current=_parse_flag(values.get("current", ""), where, "current", item.line),
                note=values.get("note", ""),
                config=_parse_json_block(item, where),
            )
        )
    if sum(c.is_current for c in configs) > 1:
        raise MarkdownImportError("Config: more than one version is marked current.")
    return sorted(configs, key=lambda c: c.version)


def _parse_json_block(item: _Block, where: str) -> dict:
    body: list[str] | None = None
    start = item.line
    for number, line in item.lines:
        if body is None:
            if line.strip().lower() == "```json":
                body, start = [], number
            continue
        if line.strip() == "```":
            break
        body.append(line)
    else:
        if body is not None:
            raise MarkdownImportError(f"line {start}: {where}: the ```json block is not closed.")
    if body is None:
        raise MarkdownImportError(f"line {item.line}: {where}: missing the ```json block.")
    try:
        config = json.loads("\n".join(body))
    except json.JSONDecodeError as exc:
        raise MarkdownImportError(
            f"line {start + exc.lineno}: {where}: the config is not valid JSON: {exc.msg}."
        ) from None
    if not isinstance(config, dict):
        raise MarkdownImportError(f"line {start}: {where}: the config must be a JSON object.")
    return config


_BASELINE_TITLE = re.compile(r"^(B\d+)\s*:\s*(.+)$")
_LATENCY_ROWS = {metric: metric for metric in LATENCY_METRICS}


def _parse_baselines(section: _Block | None, config_versions: set[int]) -> list[_ParsedBaseline]:
    if section is None:
        return []
    baselines: list[_ParsedBaseline] = []
    for item in _split_items(section):
        match = _BASELINE_TITLE.match(item.title)
        if not match:
            raise MarkdownImportError(
                f"line {item.line}: Baselines: expected a heading '### B<n>: <label>', "
                f"got '### {item.title}'."
            )
        ref, label = match.groups()
        where = f"Baselines > {ref}"
        if any(b.ref == ref for b in baselines):
            raise MarkdownImportError(f"line {item.line}: {where}: {ref} is used twice.")
        values, lines = _key_values(item, where)
        _unknown_fields(values, lines, {"current", "config_version", *BASELINE_FIELDS}, where)
        if "measured_at" not in values:
            raise MarkdownImportError(f"line {item.line}: {where}: missing field 'measured_at'.")
        fields = {
            name: _parse_value(Baseline, name, values[name], where, lines[name])
            for name in BASELINE_FIELDS
            if name in values
        }
        fields.update(_parse_latencies(item, where))
        fields["notes"] = _texts(item).get("notes", "")
        config_ref = None
        if values.get("config_version", "").strip():
            text = values["config_version"].strip()
            number = text[1:] if text.lower().startswith("v") else text
            if not number.isdigit() or int(number) not in config_versions:
                raise MarkdownImportError(
                    f"line {lines['config_version']}: {where}: config_version: "
                    f"no config '{text}' in the '## Config' section."
                )
            config_ref = int(number)
        baselines.append(
            _ParsedBaseline(
                ref=ref,
                label=label.strip(),
                line=item.line,
                is_current=_parse_flag(values.get("current", ""), where, "current", item.line),
                config_ref=config_ref,
                fields=fields,
            )
        )
    if sum(b.is_current for b in baselines) > 1:
        raise MarkdownImportError("Baselines: more than one baseline is marked current.")
    return baselines


def _parse_latencies(item: _Block, where: str) -> dict[str, float | None]:
    tables = [t for t in _tables(item.lines) if t.header[:1] == [LATENCY_HEADER]]
    if not tables:
        return {}
    table = tables[0]
    columns = [h.lower() for h in table.header[1:]]
    unknown = [c for c in columns if c not in PERCENTILES]
    if unknown:
        raise MarkdownImportError(
            f"line {table.line}: {where}: unknown percentile column '{unknown[0]}' "
            f"(expected {', '.join(_PERCENTILE_TITLES.values())})."
        )
    fields: dict[str, float | None] = {}
    for number, cells in table.rows:
        metric = cells[0].lower()
        if metric not in _LATENCY_ROWS:
            raise MarkdownImportError(
                f"line {number}: {where}: unknown latency row '{cells[0]}' "
                f"(expected {', '.join(LATENCY_METRICS)})."
            )
        if len(cells) - 1 != len(columns):
            raise MarkdownImportError(
                f"line {number}: {where}: expected {len(columns)} latency values, "
                f"found {len(cells) - 1}."
            )
        for percentile, text in zip(columns, cells[1:], strict=True):
            name = f"{metric}_{percentile}_ms"
            fields[name] = _parse_value(Baseline, name, text, where, number)
    return fields


def _parse_refs(text: str, known: set[str], where: str, name: str, line: int) -> list[str]:
    refs = [r.strip() for r in text.split(",") if r.strip()]
    for ref in refs:
        if ref not in known:
            raise MarkdownImportError(
                f"line {line}: {where}: {name}: no baseline '{ref}' in the '## Baselines' section."
            )
    return refs


def _parse_bottlenecks(section: _Block | None, refs: set[str]) -> list[_ParsedBottleneck]:
    if section is None:
        return []
    parsed = []
    for item in _split_items(section):
        where = f"Bottlenecks > {item.title}"
        values, lines = _key_values(item, where)
        _unknown_fields(values, lines, {*BOTTLENECK_FIELDS, "evidence_baselines"}, where)
        for required in ("layer", "kind", "identified_on"):
            if not values.get(required, "").strip():
                raise MarkdownImportError(f"line {item.line}: {where}: missing field '{required}'.")
        fields = {
            name: _parse_value(Bottleneck, name, values[name], where, lines[name])
            for name in BOTTLENECK_FIELDS
            if name in values
        }
        texts = _texts(item)
        fields["symptom"] = texts.get("symptom", "")
        fields["evidence"] = texts.get("evidence", "")
        evidence = _parse_refs(
            values.get("evidence_baselines", ""),
            refs,
            where,
            "evidence_baselines",
            lines.get("evidence_baselines", item.line),
        )
        parsed.append(_ParsedBottleneck(item.title, item.line, fields, evidence))
    return parsed


def _parse_experiments(section: _Block | None, refs: set[str]) -> list[_ParsedExperiment]:
    if section is None:
        return []
    parsed = []
    for item in _split_items(section):
        where = f"Experiments > {item.title}"
        values, lines = _key_values(item, where)
        _unknown_fields(values, lines, {*EXPERIMENT_FIELDS, "before", "after"}, where)
        for required in ("run_on", "variable_key", "before"):
            if not values.get(required, "").strip():
                raise MarkdownImportError(f"line {item.line}: {where}: missing field '{required}'.")
        fields = {
            name: _parse_value(Experiment, name, values[name], where, lines[name])
            for name in EXPERIMENT_FIELDS
            if name in values
        }
        texts = _texts(item)
        fields["hypothesis"] = texts.get("hypothesis", "")
        fields["notes"] = texts.get("notes", "")
        before = _parse_refs(values["before"], refs, where, "before", lines["before"])
        after = _parse_refs(values.get("after", ""), refs, where, "after", lines.get("after", 0))
        if len(before) != 1 or len(after) > 1:
            raise MarkdownImportError(
                f"line {lines['before']}: {where}: before and after each name one baseline."
            )
        parsed.append(
            _ParsedExperiment(item.title, item.line, fields, before[0], after[0] if after else None)
        )
    return parsed


# --------------------------------------------------------------------------------------------
# Import


def import_dossier(*, service: Service, text: str, author) -> ImportSummary:
    """Merge a dossier file into `service` in one transaction (see the module docstring).

    Raises MarkdownImportError naming the bad section, line or field; then nothing is changed
    (the database transaction rolls back and `service` is reloaded).
    """
    parsed = _parse(text)
    try:
        with transaction.atomic():
            return _apply(parsed, service, author)
    except MarkdownImportError:
        service.refresh_from_db()
        raise


def _validated(where: str, callback):
    """Run a model write; a ValidationError becomes a MarkdownImportError naming `where`."""
    try:
        return callback()
    except ValidationError as exc:
        if hasattr(exc, "message_dict"):
            detail = "; ".join(
                f"{name}: {' '.join(messages)}" if name != "__all__" else " ".join(messages)
                for name, messages in exc.message_dict.items()
            )
        else:
            detail = " ".join(exc.messages)
        raise MarkdownImportError(f"{where}: {detail}") from None


def _apply(parsed: _Parsed, service: Service, author) -> ImportSummary:
    summary = ImportSummary()
    Service.objects.select_for_update().filter(pk=service.pk).first()

    _validated(
        f"line {parsed.service_line}: Service",
        lambda: services.service_update(service=service, **parsed.service_fields),
    )

    current = selectors.current_narrative(service)
    current_body = current.body.strip() if current else ""
    if parsed.narrative != current_body:
        services.narrative_revise(
            service=service, body=parsed.narrative, summary="Imported from Markdown", author=author
        )
        summary.narrative_revised = True

    configs: dict[int, ConfigVersion] = {}
    for item in parsed.configs:
        existing = next(
            (c for c in service.config_versions.filter(note=item.note) if c.config == item.config),
            None,
        )
        if existing is None:
            existing = _validated(
                f"Config > v{item.version}",
                lambda item=item: services.config_version_create(
                    service=service,
                    config=item.config,
                    note=item.note,
                    author=author,
                    make_current=False,
                ),
            )
            summary.config_versions += 1
        configs[item.version] = existing
        if item.is_current and not existing.is_current:
            services.config_version_make_current(config_version=existing)

    baselines: dict[str, Baseline] = {}
    for item in parsed.baselines:
        where = f"line {item.line}: Baselines > {item.ref}"
        existing = service.baselines.filter(
            label=item.label, measured_at=item.fields["measured_at"]
        ).first()
        if existing is None:
            existing = _validated(
                where,
                lambda item=item: services.baseline_record(
                    service=service,
                    label=item.label,
                    created_by=author,
                    config_version=configs.get(item.config_ref),
                    **item.fields,
                ),
            )
            summary.baselines += 1
        baselines[item.ref] = existing
        if item.is_current and not existing.is_current:
            services.baseline_promote(baseline=existing)

    for item in parsed.bottlenecks:
        if service.bottlenecks.filter(
            title=item.title, identified_on=item.fields["identified_on"]
        ).exists():
            continue
        _validated(
            f"line {item.line}: Bottlenecks > {item.title}",
            lambda item=item: services.bottleneck_record(
                service=service,
                title=item.title,
                evidence_baselines=[baselines[ref] for ref in item.evidence_refs],
                **item.fields,
            ),
        )
        summary.bottlenecks += 1

    for item in parsed.experiments:
        if service.experiments.filter(title=item.title, run_on=item.fields["run_on"]).exists():
            continue
        _validated(
            f"line {item.line}: Experiments > {item.title}",
            lambda item=item: services.experiment_record(
                service=service,
                title=item.title,
                before=baselines[item.before_ref],
                after=baselines[item.after_ref] if item.after_ref else None,
                created_by=author,
                **item.fields,
            ),
        )
        summary.experiments += 1
    return summary

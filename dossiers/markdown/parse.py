"""Parse: the text of a v2 dossier file -> plain, validated data (nothing is written).

A file is a YAML header between `---` lines (format, version, service, team), then `## `
sections (see `schema.SECTIONS`), each data item a `### ` heading with one ```yaml block of
fields and `#### ` text blocks (Symptom, Evidence, Hypothesis, Notes). Every error names the
line: `DossierFormatError("line 12: Baselines > B2: concurrency: expected a whole number ...")`.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from typing import Any

from analysis import plausibility
from dossiers.markdown import fieldvalues, grammar, schema
from dossiers.markdown.grammar import Block, DossierFormatError, LineDict
from dossiers.models import Baseline, Bottleneck, Experiment

# --------------------------------------------------------------------------------------------
# Result


@dataclass
class ParsedConfig:
    version: int
    line: int
    is_current: bool
    note: str
    created: dt.datetime | None
    config: dict


@dataclass
class ParsedBaseline:
    ref: str
    label: str
    line: int
    is_current: bool
    config_ref: int | None
    fields: dict[str, Any]


@dataclass
class ParsedBottleneck:
    title: str
    line: int
    fields: dict[str, Any]
    evidence_refs: list[str]


@dataclass
class ParsedExperiment:
    title: str
    line: int
    fields: dict[str, Any]
    before_ref: str
    after_ref: str | None


@dataclass
class ParsedDossier:
    version: int
    slug: str
    team: str
    service_fields: dict[str, Any]
    service_line: int
    narrative: str
    configs: list[ParsedConfig] = field(default_factory=list)
    baselines: list[ParsedBaseline] = field(default_factory=list)
    bottlenecks: list[ParsedBottleneck] = field(default_factory=list)
    experiments: list[ParsedExperiment] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Entry point


def parse_dossier(text: str) -> ParsedDossier:
    """Parse and validate a dossier file; raise DossierFormatError naming the line."""
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if match := _CONTROL.search(line):
            raise DossierFormatError(
                f"line {number}: control character U+{ord(match.group()):04X} is not allowed."
            )
    header, body_start = _header(lines)
    sections = grammar.sections(lines, body_start)
    people = grammar.section_data(sections.get(schema.PEOPLE), schema.PEOPLE)
    service = sections[schema.SERVICE]
    service_data = grammar.section_data(service, schema.SERVICE)
    fields = {
        **fieldvalues.service_fields(people, schema.PEOPLE_KEYS, schema.PEOPLE),
        **fieldvalues.service_fields(service_data, schema.SERVICE_KEYS, schema.SERVICE),
    }
    configs = _configs(sections.get(schema.CONFIG))
    baselines = _baselines(sections.get(schema.BASELINES), {c.version for c in configs})
    refs = {b.ref for b in baselines}
    bottlenecks = [
        *_bottlenecks(sections.get(schema.OPEN_BOTTLENECKS), refs),
        *_bottlenecks(sections.get(schema.PAST_BOTTLENECKS), refs),
    ]
    return ParsedDossier(
        version=header["version"],
        slug=header["service"],
        team=header.get("team", ""),
        service_fields=fields,
        service_line=service.line,
        narrative=_narrative(sections[schema.NARRATIVE]),
        configs=configs,
        baselines=baselines,
        bottlenecks=bottlenecks,
        experiments=_experiments(sections.get(schema.EXPERIMENTS), refs),
    )


# --------------------------------------------------------------------------------------------
# Header

# C0 controls other than tab (newlines are already split off), DEL and C1; NUL would not even
# reach the database (PostgreSQL refuses it in text).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_V1_MARKER = re.compile(r"<!--\s*perfhub-dossier\s+v1\s*-->")
HEADER_KEYS = {"format", "version", "service", "team"}


def _header(lines: list[str]) -> tuple[dict[str, Any], int]:
    """The `---` header block: its values and the index of the first line after it."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or lines[first].strip().lstrip("\ufeff") != "---":
        for number, line in enumerate(lines, start=1):
            if _V1_MARKER.search(line):
                raise DossierFormatError(
                    f"line {number}: this is a version 1 dossier file, which this PerfHub no "
                    f"longer reads; export the dossier again to get version {schema.VERSION}."
                )
        raise DossierFormatError(
            "line 1: not a PerfHub dossier: the file must start with a '---' header block "
            f"saying 'format: {schema.FORMAT}' and 'version: {schema.VERSION}'."
        )
    end = next((i for i in range(first + 1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise DossierFormatError(
            f"line {first + 1}: the header block opened here is never closed with '---'."
        )
    data = grammar.load_yaml(lines[first + 1 : end], first + 2, "header")
    where = "header"
    for key in data:
        if key not in HEADER_KEYS:
            raise DossierFormatError(
                f"line {data.lines[key]}: {where}: unknown key '{key}' "
                f"(expected {', '.join(sorted(HEADER_KEYS))})."
            )
    if data.get("format") != schema.FORMAT:
        line = data.lines.get("format", first + 1)
        raise DossierFormatError(
            f"line {line}: {where}: 'format: {schema.FORMAT}' is required "
            f"(found {data.get('format')!r})."
        )
    version = data.get("version")
    if "version" not in data:
        raise DossierFormatError(f"line {first + 1}: {where}: 'version' is required.")
    if version != schema.VERSION:
        raise DossierFormatError(
            f"line {data.lines['version']}: {where}: format version {version!r} is not "
            f"supported (this PerfHub reads version {schema.VERSION})."
        )
    slug = data.get("service")
    if not isinstance(slug, str) or not re.fullmatch(r"[-a-zA-Z0-9_]+", slug):
        line = data.lines.get("service", first + 1)
        raise DossierFormatError(
            f"line {line}: {where}: 'service' must name the service's slug (found {slug!r})."
        )
    if not isinstance(data.get("team", ""), str):
        raise DossierFormatError(f"line {data.lines['team']}: {where}: 'team' must be a slug.")
    return data, end + 1


# --------------------------------------------------------------------------------------------
# Sections


def _narrative(section: Block) -> str:
    texts = [line for _, line in section.lines]
    stripped = [t.strip() for t in texts]
    if schema.NARRATIVE_START in stripped:
        start = stripped.index(schema.NARRATIVE_START)
        end = start + stripped[start:].index(schema.NARRATIVE_END)
        texts = texts[start + 1 : end]
    return "\n".join(texts).strip()


_CONFIG_TITLE = re.compile(r"^v(\d+)(\s*\(current\))?$")


def _configs(section: Block | None) -> list[ParsedConfig]:
    if section is None:
        return []
    configs: list[ParsedConfig] = []
    for item in grammar.split(section, "### ")[1]:
        match = _CONFIG_TITLE.match(item.title)
        if not match:
            raise DossierFormatError(
                f"line {item.line}: {schema.CONFIG}: expected a heading '### v<n>', "
                f"got '### {item.title}'."
            )
        version = int(match.group(1))
        where = f"{schema.CONFIG} > v{version}"
        if any(c.version == version for c in configs):
            raise DossierFormatError(f"line {item.line}: {where}: version {version} twice.")
        lead, _ = grammar.split(item, "#### ")
        data = grammar.data_block(lead, where, item.line)
        fieldvalues.check_keys(data, {"created", "current", "note"}, where)
        created = None
        if "created" in data:
            created = fieldvalues.datetime(
                data["created"],
                lambda expected, d=data, w=where: DossierFormatError(
                    f"line {d.lines['created']}: {w}: created: expected {expected}."
                ),
            )
        configs.append(
            ParsedConfig(
                version=version,
                line=item.line,
                is_current=fieldvalues.flag(data, "current", where),
                note=fieldvalues.text(data, "note", where),
                created=created,
                config=_json_block(lead, where, item.line),
            )
        )
    if sum(c.is_current for c in configs) > 1:
        raise DossierFormatError(f"{schema.CONFIG}: more than one version is marked current.")
    return sorted(configs, key=lambda c: c.version)


def _json_block(lines: list[tuple[int, str]], where: str, line: int) -> dict:
    blocks = grammar.fenced(lines, "json")
    if len(blocks) != 1:
        raise DossierFormatError(f"line {line}: {where}: expected one ```json block.")
    opened, body = blocks[0]
    try:
        config = json.loads("\n".join(body))
    except json.JSONDecodeError as exc:
        raise DossierFormatError(
            f"line {opened + exc.lineno}: {where}: the config is not valid JSON: {exc.msg}."
        ) from None
    except RecursionError:
        raise DossierFormatError(f"line {opened}: {where}: the config nests too deeply.") from None
    if not isinstance(config, dict):
        raise DossierFormatError(f"line {opened}: {where}: the config must be a JSON object.")
    return config


_BASELINE_TITLE = re.compile(r"^(B\d+)\s*:\s*(.+)$")


def _baselines(section: Block | None, config_versions: set[int]) -> list[ParsedBaseline]:
    if section is None:
        return []
    allowed = {"current", "config", schema.LATENCY_KEY, *(k.key for k in schema.BASELINE_KEYS)}
    baselines: list[ParsedBaseline] = []
    for item in grammar.split(section, "### ")[1]:
        match = _BASELINE_TITLE.match(item.title)
        if not match:
            raise DossierFormatError(
                f"line {item.line}: {schema.BASELINES}: expected a heading '### B<n>: <label>', "
                f"got '### {item.title}'."
            )
        ref, label = match.groups()
        where = f"{schema.BASELINES} > {ref}"
        if any(b.ref == ref for b in baselines):
            raise DossierFormatError(f"line {item.line}: {where}: {ref} is used twice.")
        lead, _ = grammar.split(item, "#### ")
        data = grammar.data_block(lead, where, item.line)
        fieldvalues.check_keys(data, allowed, where)
        if "measured_at" not in data:
            raise DossierFormatError(f"line {item.line}: {where}: missing field 'measured_at'.")
        fields = fieldvalues.fields(Baseline, data, schema.BASELINE_KEYS, where)
        fields.update(_latencies(data, where))
        _check_plausible_run(fields, data, where)
        fields["notes"] = grammar.texts(item, ("notes",), where).get("notes", "")
        config_ref = None
        if "config" in data:
            text = str(data["config"])
            number = text[1:] if text.lower().startswith("v") else text
            if not number.isdigit() or int(number) not in config_versions:
                raise DossierFormatError(
                    f"line {data.lines['config']}: {where}: config: no config '{text}' in the "
                    f"'## {schema.CONFIG}' section."
                )
            config_ref = int(number)
        baselines.append(
            ParsedBaseline(
                ref=ref,
                label=label.strip(),
                line=item.line,
                is_current=fieldvalues.flag(data, "current", where),
                config_ref=config_ref,
                fields=fields,
            )
        )
    if sum(b.is_current for b in baselines) > 1:
        raise DossierFormatError(f"{schema.BASELINES}: more than one baseline is marked current.")
    return baselines


def _check_plausible_run(fields: dict[str, Any], data: LineDict, where: str) -> None:
    """A baseline the gate may compare against must be a possible measurement: every value in
    its range, no latency percentile below a lower one (analysis.plausibility)."""
    problems = plausibility.run_problems(fields)
    if not problems:
        return
    name, why = problems[0]
    key = next((k.key for k in schema.BASELINE_KEYS if k.field == name), None)
    if key is None:  # a latency: latency_ms.<metric>
        metric = name.split("_", 1)[0]
        key, line = f"{schema.LATENCY_KEY}.{metric}", data[schema.LATENCY_KEY].lines[metric]
    else:
        line = data.lines[key]
    if key in {"gpu_busy_pct", "sm_active_pct", "dram_active_pct"}:
        why = f"{data[key]:g} is outside 0..100 % (a percentage is between 0 and 100)."
    raise DossierFormatError(f"line {line}: {where}: {key}: {why}")


def _latencies(data: LineDict, where: str) -> dict[str, float | None]:
    if schema.LATENCY_KEY not in data:
        return {}
    table = data[schema.LATENCY_KEY]
    line = data.lines[schema.LATENCY_KEY]
    if not isinstance(table, LineDict):
        raise DossierFormatError(
            f"line {line}: {where}: {schema.LATENCY_KEY}: expected one line per metric "
            f"({', '.join(schema.LATENCY_ROWS)})."
        )
    fields: dict[str, float | None] = {}
    columns = schema.LATENCY_COLUMNS
    for metric, values in table.items():
        row_line = table.lines[metric]
        if metric not in schema.LATENCY_ROWS:
            raise DossierFormatError(
                f"line {row_line}: {where}: unknown latency '{metric}' "
                f"(expected {', '.join(schema.LATENCY_ROWS)})."
            )
        if not isinstance(values, list) or len(values) != len(columns):
            raise DossierFormatError(
                f"line {row_line}: {where}: {metric}: expected {len(columns)} values "
                "[P50, P90, P95, P99, P99.9] (null where not measured)."
            )
        for percentile, value in zip(columns, values, strict=True):
            name = f"{metric}_{percentile}_ms"
            key = schema.Key(f"{schema.LATENCY_KEY}.{metric}", name)
            fields[name] = fieldvalues.value(Baseline, key, value, where, row_line)
    return fields


def _refs(raw: Any, known: set[str], where: str, key: str, line: int) -> list[str]:
    refs = [raw] if isinstance(raw, str) else raw
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise DossierFormatError(f"line {line}: {where}: {key}: expected baseline names like B2.")
    for ref in refs:
        if ref not in known:
            raise DossierFormatError(
                f"line {line}: {where}: {key}: no baseline '{ref}' in the "
                f"'## {schema.BASELINES}' section."
            )
    return refs


def _bottlenecks(section: Block | None, refs: set[str]) -> list[ParsedBottleneck]:
    if section is None:
        return []
    allowed = {"evidence_baselines", *(k.key for k in schema.BOTTLENECK_KEYS)}
    parsed = []
    for item in grammar.split(section, "### ")[1]:
        where = f"{section.title} > {item.title}"
        lead, _ = grammar.split(item, "#### ")
        data = grammar.data_block(lead, where, item.line)
        fieldvalues.check_keys(data, allowed, where)
        for required in ("layer", "kind", "identified_on"):
            if required not in data:
                raise DossierFormatError(f"line {item.line}: {where}: missing field '{required}'.")
        fields = fieldvalues.fields(Bottleneck, data, schema.BOTTLENECK_KEYS, where)
        texts = grammar.texts(item, ("symptom", "evidence"), where)
        fields["symptom"] = texts.get("symptom", "")
        fields["evidence"] = texts.get("evidence", "")
        evidence = []
        if "evidence_baselines" in data:
            evidence = _refs(
                data["evidence_baselines"],
                refs,
                where,
                "evidence_baselines",
                data.lines["evidence_baselines"],
            )
        parsed.append(ParsedBottleneck(item.title, item.line, fields, evidence))
    return parsed


def _experiments(section: Block | None, refs: set[str]) -> list[ParsedExperiment]:
    if section is None:
        return []
    allowed = {"before", "after", *(k.key for k in schema.EXPERIMENT_KEYS)}
    parsed = []
    for item in grammar.split(section, "### ")[1]:
        where = f"{schema.EXPERIMENTS} > {item.title}"
        lead, _ = grammar.split(item, "#### ")
        data = grammar.data_block(lead, where, item.line)
        fieldvalues.check_keys(data, allowed, where)
        for required in ("run_on", "variable", "before"):
            if required not in data:
                raise DossierFormatError(f"line {item.line}: {where}: missing field '{required}'.")
        fields = fieldvalues.fields(Experiment, data, schema.EXPERIMENT_KEYS, where)
        texts = grammar.texts(item, ("hypothesis", "notes"), where)
        fields["hypothesis"] = texts.get("hypothesis", "")
        fields["notes"] = texts.get("notes", "")
        before = _refs(data["before"], refs, where, "before", data.lines["before"])
        after = []
        if "after" in data:
            after = _refs(data["after"], refs, where, "after", data.lines["after"])
        if len(before) != 1 or len(after) > 1:
            raise DossierFormatError(
                f"line {data.lines['before']}: {where}: before and after each name one baseline."
            )
        parsed.append(
            ParsedExperiment(item.title, item.line, fields, before[0], after[0] if after else None)
        )
    return parsed

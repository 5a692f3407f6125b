"""Parse: the text of a v2 dossier file -> plain, validated data (nothing is written).

A file is a YAML header between `---` lines (format, version, service, team), then `## `
sections (see `schema.SECTIONS`), each data item a `### ` heading with one ```yaml block of
fields and `#### ` text blocks (Symptom, Evidence, Hypothesis, Notes). Every error names the
line: `DossierFormatError("line 12: Baselines > B2: concurrency: expected a whole number ...")`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml
from django.db import models

from analysis import plausibility
from dossiers.markdown import schema
from dossiers.models import Baseline, Bottleneck, Experiment, Service


class DossierFormatError(ValueError):
    """The file cannot be imported; the message names the line and the part that is wrong."""


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
    sections = _sections(lines, body_start)
    people = _section_data(sections.get(schema.PEOPLE), schema.PEOPLE)
    service = sections[schema.SERVICE]
    service_data = _section_data(service, schema.SERVICE)
    fields = {
        **_service_fields(people, schema.PEOPLE_KEYS, schema.PEOPLE),
        **_service_fields(service_data, schema.SERVICE_KEYS, schema.SERVICE),
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
    data = _load_yaml(lines[first + 1 : end], first + 2, "header")
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
# Blocks: sections (##), items (###), text blocks (####), fenced blocks


@dataclass
class _Block:
    title: str
    line: int
    lines: list[tuple[int, str]] = field(default_factory=list)


_FENCE = re.compile(r"^\s*(```|~~~)")


def _sections(lines: list[str], start: int) -> dict[str, _Block]:
    known = {s.lower(): s for s in schema.SECTIONS}
    sections: dict[str, _Block] = {}
    current: _Block | None = None
    in_fence = in_narrative = False
    for index in range(start, len(lines)):
        number, line = index + 1, lines[index]
        stripped = line.strip()
        if stripped == schema.NARRATIVE_START:
            in_narrative = True
        elif stripped == schema.NARRATIVE_END:
            in_narrative = False
        elif not in_narrative and _FENCE.match(line):
            in_fence = not in_fence
        elif not (in_fence or in_narrative) and line.startswith("## "):
            heading = line[3:].strip()
            name = known.get(heading.lower())
            if name is None:
                raise DossierFormatError(
                    f"line {number}: unknown section '## {heading}' (a dossier has "
                    + ", ".join(f"'{s}'" for s in schema.SECTIONS)
                    + ")."
                )
            if name in sections:
                raise DossierFormatError(
                    f"line {number}: section '## {name}' appears twice "
                    f"(first at line {sections[name].line})."
                )
            current = sections[name] = _Block(name, number)
            continue
        if current is not None:
            current.lines.append((number, line))
    if in_narrative:
        raise DossierFormatError(
            f"'{schema.NARRATIVE_START}' has no matching '{schema.NARRATIVE_END}'."
        )
    missing = [name for name in schema.REQUIRED if name not in sections]
    if missing:
        raise DossierFormatError(
            "Missing required section(s): " + ", ".join(f"'## {name}'" for name in missing) + "."
        )
    return sections


def _split(block: _Block, prefix: str) -> tuple[list[tuple[int, str]], list[_Block]]:
    """Lines before the first `prefix` heading, and one block per such heading."""
    lead: list[tuple[int, str]] = []
    items: list[_Block] = []
    in_fence = False
    for number, line in block.lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and line.startswith(prefix):
            items.append(_Block(line[len(prefix) :].strip(), number))
            continue
        (items[-1].lines if items else lead).append((number, line))
    return lead, items


def _fenced(lines: list[tuple[int, str]], info: str) -> list[tuple[int, list[str]]]:
    """Fenced blocks whose info string is `info`: (line of the opening fence, body lines)."""
    found: list[tuple[int, list[str]]] = []
    body: list[str] | None = None
    kind, opened = "", 0
    for number, line in lines:
        stripped = line.strip()
        if body is None:
            if _FENCE.match(line):
                body, kind, opened = [], stripped[3:].strip().lower(), number
        elif stripped in ("```", "~~~"):
            if kind == info:
                found.append((opened, body))
            body = None
        else:
            body.append(line)
    if body is not None:
        raise DossierFormatError(f"line {opened}: the ```{kind} block is never closed.")
    return found


class LineDict(dict):
    """A YAML mapping that remembers the line of each key."""

    lines: dict[str, int]


class _Loader(yaml.SafeLoader):
    first_line = 1

    def compose_node(self, parent, index):
        # Aliases let a few bytes expand into gigabytes ("billion laughs"); a dossier has none.
        if self.check_event(yaml.AliasEvent):
            line = self.peek_event().start_mark.line + self.first_line
            raise DossierFormatError(f"line {line}: YAML aliases (*name) are not allowed.")
        return super().compose_node(parent, index)


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    mapping = LineDict()
    mapping.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            raise DossierFormatError(
                f"line {key_node.start_mark.line + loader.first_line}: keys must be names, "
                f"not {key!r}."
            )
        if key in mapping:
            raise DossierFormatError(
                f"line {key_node.start_mark.line + loader.first_line}: '{key}' appears twice."
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.lines[key] = key_node.start_mark.line + loader.first_line
    return mapping


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _load_yaml(body: list[str], first_line: int, where: str) -> LineDict:
    """A YAML mapping; `first_line` is the file line of body[0]."""
    loader = None
    try:
        loader = _Loader("\n".join(body))
        loader.first_line = first_line
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first_line + (mark.line if mark else 0)
        problem = exc.problem or exc.context or "unreadable"
        raise DossierFormatError(f"line {line}: {where}: not valid YAML: {problem}.") from None
    except yaml.YAMLError as exc:
        problem = (str(exc).splitlines() or ["unreadable"])[0]
        raise DossierFormatError(f"line {first_line}: {where}: not valid YAML: {problem}") from None
    except DossierFormatError:
        raise
    except RecursionError:
        raise DossierFormatError(
            f"line {first_line}: {where}: the YAML nests too deeply."
        ) from None
    except ValueError as exc:  # e.g. a date YAML recognises but cannot build (2026-13-45)
        raise DossierFormatError(
            f"line {first_line}: {where}: a value is not valid: {exc}."
        ) from None
    finally:
        if loader is not None:
            loader.dispose()
    if data is None:
        data = LineDict()
        data.lines = {}
    if not isinstance(data, LineDict):
        raise DossierFormatError(f"line {first_line}: {where}: expected 'key: value' lines.")
    return data


def _data_block(lines: list[tuple[int, str]], where: str, line: int) -> LineDict:
    blocks = _fenced(lines, "yaml")
    if not blocks:
        raise DossierFormatError(f"line {line}: {where}: missing its ```yaml block of fields.")
    if len(blocks) > 1:
        raise DossierFormatError(f"line {blocks[1][0]}: {where}: a second ```yaml block.")
    opened, body = blocks[0]
    return _load_yaml(body, opened + 1, where)


def _section_data(section: _Block | None, where: str) -> LineDict:
    if section is None:
        empty = LineDict()
        empty.lines = {}
        return empty
    if not _fenced(section.lines, "yaml"):
        empty = LineDict()
        empty.lines = {}
        return empty if where == schema.PEOPLE else _data_block([], where, section.line)
    return _data_block(section.lines, where, section.line)


def _texts(item: _Block, allowed: tuple[str, ...], where: str) -> dict[str, str]:
    """The item's `#### Heading` text blocks, by lower-cased heading; computed ones skipped."""
    _, blocks = _split(item, "#### ")
    texts = {}
    for block in blocks:
        key = block.title.lower()
        if key.endswith("(computed)"):
            continue
        if key not in allowed:
            raise DossierFormatError(
                f"line {block.line}: {where}: unknown text heading '#### {block.title}' "
                f"(expected {', '.join(a.capitalize() for a in allowed)})."
            )
        texts[key] = "\n".join(line for _, line in block.lines).strip()
    return texts


# --------------------------------------------------------------------------------------------
# Values


def _check_keys(data: LineDict, allowed: set[str], where: str) -> None:
    for key in data:
        if key not in allowed:
            raise DossierFormatError(
                f"line {data.lines[key]}: {where}: unknown field '{key}' "
                f"(expected one of {', '.join(sorted(allowed))})."
            )


def _value(model: type[models.Model], key: schema.Key, raw: Any, where: str, line: int) -> Any:
    """A YAML value -> what the model field stores, strictly typed; errors name the line."""
    model_field = model._meta.get_field(key.field)
    kind = model_field.get_internal_type()

    def fail(expected: str) -> DossierFormatError:
        return DossierFormatError(
            f"line {line}: {where}: {key.key}: expected {expected}, got {raw!r}."
        )

    if raw is None:
        if kind in {"CharField", "TextField", "URLField"}:
            return ""
        return model_field.get_default() if not model_field.null else None
    number = isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw)
    if key.scale in {"gb", "pct"}:
        if not number:
            raise fail("a number")
        exact = Decimal(repr(raw))
        if key.scale == "gb":
            return int((exact * 10**9).to_integral_value())
        return float(exact / 100)
    if kind in {"CharField", "TextField", "URLField"}:
        if not isinstance(raw, str):
            raise fail("text (quote it)")
        if model_field.choices and raw not in {c for c, _ in model_field.choices}:
            raise fail("one of " + ", ".join(c for c, _ in model_field.choices))
        return raw
    if kind == "FloatField":
        if not number:
            raise fail("a number")
        return float(raw)
    if kind in {"PositiveIntegerField", "IntegerField", "BigIntegerField"}:
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise fail("a whole number")
        return raw
    if kind == "DecimalField":
        if not number:
            raise fail("a number")
        try:
            return Decimal(repr(raw))
        except InvalidOperation:
            raise fail("a number") from None
    if kind == "DateTimeField":
        return _datetime(raw, fail)
    if kind == "DateField":
        value = raw
        if isinstance(raw, str):
            with contextlib.suppress(ValueError):
                value = dt.date.fromisoformat(raw)
        is_date = isinstance(value, dt.date) and not isinstance(value, dt.datetime)
        if is_date and YEARS[0] <= value.year <= YEARS[1]:
            return value
        raise fail(f"a date like 2026-03-01, between {YEARS[0]} and {YEARS[1]}")
    if kind == "JSONField":
        if not isinstance(raw, dict):
            raise fail("a mapping")
        return raw
    raise fail(kind)  # pragma: no cover - every mapped field kind is handled above


# Dates outside these years are typing mistakes, and year 1 in a zone east of UTC does not
# even convert to UTC.
YEARS = (1990, 2100)


def _datetime(raw: Any, fail) -> dt.datetime:
    value = raw
    if isinstance(raw, str):
        try:
            value = dt.datetime.fromisoformat(raw)
        except ValueError:
            raise fail("a date and time like 2026-03-01 12:00:00+00:00") from None
    if not isinstance(value, dt.datetime):
        raise fail("a date and time like 2026-03-01 12:00:00+00:00")
    if value.tzinfo is None:
        raise fail("a time zone (e.g. +00:00)")
    if not YEARS[0] <= value.year <= YEARS[1]:
        raise fail(f"a time between {YEARS[0]} and {YEARS[1]}")
    return value.astimezone(dt.UTC)


def _fields(
    model: type[models.Model], data: LineDict, keys: tuple[schema.Key, ...], where: str
) -> dict[str, Any]:
    return {
        key.field: _value(model, key, data[key.key], where, data.lines[key.key])
        for key in keys
        if key.key in data
    }


def _service_fields(data: LineDict, keys: tuple[schema.Key, ...], where: str) -> dict[str, Any]:
    _check_keys(data, {k.key for k in keys}, where)
    parsed: dict[str, Any] = {}
    for key in keys:
        model_field = Service._meta.get_field(key.field)
        if key.key in data:
            parsed[key.field] = _value(Service, key, data[key.key], where, data.lines[key.key])
        elif model_field.null:
            parsed[key.field] = None
        elif model_field.has_default():
            parsed[key.field] = model_field.get_default()
        else:
            parsed[key.field] = ""  # blank, or refused by the model's validation on apply
    for name, why in plausibility.field_problems(parsed, plausibility.SERVICE_FIELD_RANGES):
        key = next(k for k in keys if k.field == name)
        raise DossierFormatError(f"line {data.lines[key.key]}: {where}: {key.key}: {why}")
    return parsed


def _flag(data: LineDict, key: str, where: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise DossierFormatError(
            f"line {data.lines[key]}: {where}: {key}: expected true or false, got {value!r}."
        )
    return value


def _text(data: LineDict, key: str, where: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise DossierFormatError(
            f"line {data.lines[key]}: {where}: {key}: expected text (quote it), got {value!r}."
        )
    return value


# --------------------------------------------------------------------------------------------
# Sections


def _narrative(section: _Block) -> str:
    texts = [line for _, line in section.lines]
    stripped = [t.strip() for t in texts]
    if schema.NARRATIVE_START in stripped:
        start = stripped.index(schema.NARRATIVE_START)
        end = start + stripped[start:].index(schema.NARRATIVE_END)
        texts = texts[start + 1 : end]
    return "\n".join(texts).strip()


_CONFIG_TITLE = re.compile(r"^v(\d+)(\s*\(current\))?$")


def _configs(section: _Block | None) -> list[ParsedConfig]:
    if section is None:
        return []
    configs: list[ParsedConfig] = []
    for item in _split(section, "### ")[1]:
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
        lead, _ = _split(item, "#### ")
        data = _data_block(lead, where, item.line)
        _check_keys(data, {"created", "current", "note"}, where)
        created = None
        if "created" in data:
            created = _datetime(
                data["created"],
                lambda expected, d=data, w=where: DossierFormatError(
                    f"line {d.lines['created']}: {w}: created: expected {expected}."
                ),
            )
        configs.append(
            ParsedConfig(
                version=version,
                line=item.line,
                is_current=_flag(data, "current", where),
                note=_text(data, "note", where),
                created=created,
                config=_json_block(lead, where, item.line),
            )
        )
    if sum(c.is_current for c in configs) > 1:
        raise DossierFormatError(f"{schema.CONFIG}: more than one version is marked current.")
    return sorted(configs, key=lambda c: c.version)


def _json_block(lines: list[tuple[int, str]], where: str, line: int) -> dict:
    blocks = _fenced(lines, "json")
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


def _baselines(section: _Block | None, config_versions: set[int]) -> list[ParsedBaseline]:
    if section is None:
        return []
    allowed = {"current", "config", schema.LATENCY_KEY, *(k.key for k in schema.BASELINE_KEYS)}
    baselines: list[ParsedBaseline] = []
    for item in _split(section, "### ")[1]:
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
        lead, _ = _split(item, "#### ")
        data = _data_block(lead, where, item.line)
        _check_keys(data, allowed, where)
        if "measured_at" not in data:
            raise DossierFormatError(f"line {item.line}: {where}: missing field 'measured_at'.")
        fields = _fields(Baseline, data, schema.BASELINE_KEYS, where)
        fields.update(_latencies(data, where))
        _check_plausible_run(fields, data, where)
        fields["notes"] = _texts(item, ("notes",), where).get("notes", "")
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
                is_current=_flag(data, "current", where),
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
            fields[name] = _value(Baseline, key, value, where, row_line)
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


def _bottlenecks(section: _Block | None, refs: set[str]) -> list[ParsedBottleneck]:
    if section is None:
        return []
    allowed = {"evidence_baselines", *(k.key for k in schema.BOTTLENECK_KEYS)}
    parsed = []
    for item in _split(section, "### ")[1]:
        where = f"{section.title} > {item.title}"
        lead, _ = _split(item, "#### ")
        data = _data_block(lead, where, item.line)
        _check_keys(data, allowed, where)
        for required in ("layer", "kind", "identified_on"):
            if required not in data:
                raise DossierFormatError(f"line {item.line}: {where}: missing field '{required}'.")
        fields = _fields(Bottleneck, data, schema.BOTTLENECK_KEYS, where)
        texts = _texts(item, ("symptom", "evidence"), where)
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


def _experiments(section: _Block | None, refs: set[str]) -> list[ParsedExperiment]:
    if section is None:
        return []
    allowed = {"before", "after", *(k.key for k in schema.EXPERIMENT_KEYS)}
    parsed = []
    for item in _split(section, "### ")[1]:
        where = f"{schema.EXPERIMENTS} > {item.title}"
        lead, _ = _split(item, "#### ")
        data = _data_block(lead, where, item.line)
        _check_keys(data, allowed, where)
        for required in ("run_on", "variable", "before"):
            if required not in data:
                raise DossierFormatError(f"line {item.line}: {where}: missing field '{required}'.")
        fields = _fields(Experiment, data, schema.EXPERIMENT_KEYS, where)
        texts = _texts(item, ("hypothesis", "notes"), where)
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

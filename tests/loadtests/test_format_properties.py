"""Property tests: any input to a load-test parser gives runs or LoadTestFormatError, nothing else.

Inputs: arbitrary text and bytes, arbitrary JSON, and real corpus files with one value replaced
by arbitrary JSON (the files a tool almost wrote), each with the format detected and forced.
"""

import gzip
import json
import math
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loadtests.formats import LoadTestFormatError, ParsedRun, format_names, parse_loadtest

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
SEEDS = {
    "vllm-bench": ["vllm-bench/er0080-sweep-max_num_seqs4-run0.json"],
    "genai-perf": [
        "genai-perf/wellflat-2025-09-16-profile_export_genai_perf.json",
        "genai-perf/wellflat-aiperf-profile_export_aiperf.json",
    ],
    "guidellm": ["guidellm/guidellm-repo-0.2-benchmarks_stripped.json"],
    "llmperf": ["llmperf/leaderboard-bedrock_70b.json"],
    "inference-perf": [
        "inference-perf/e2e-inference-perf-0.7.0-rate-stage_1_lifecycle_metrics.json",
        "inference-perf/e2e-inference-perf-0.7.0-no-stream-context-errors-stage_0_lifecycle_metrics.json",
    ],
    "llm-d-report": [
        "llm-d-report/er0080-vllm-0.25.1-max_num_seqs4/benchmark_report_v0.2,_run=0.json.yaml",
        "llm-d-report/er0080-vllm-0.25.1-max_num_seqs4/benchmark_report,_run=0.json.yaml",
        "llm-d-report/e2e-guidellm-0.8.1-concurrent-sweep/benchmark_report_v0.2,_benchmarks.json_1.yaml",
    ],
}
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def seed(relative: str):
    """A corpus file as the JSON value it holds (llm-d's reports are YAML)."""
    text = (REAL / relative).read_text()
    return yaml.safe_load(text) if relative.endswith(".yaml") else json.loads(text)


def outcome(content, **kwargs) -> list[ParsedRun] | None:
    """Runs, or None when the parser refused the input the documented way."""
    try:
        runs = parse_loadtest(content, **kwargs)
    except LoadTestFormatError as exc:
        assert str(exc)  # a refusal always says why
        return None
    assert runs and all(isinstance(run, ParsedRun) for run in runs)
    for run in runs:
        json.dumps(run.extra, allow_nan=False)  # storable as jsonb
        assert all(v is None or math.isfinite(v) for v in run.fields.values())
    return runs


def _paths(data, prefix=()):
    """Every (path to a value) in a JSON document, for picking one to replace."""
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data[:3]):
            yield from _paths(value, (*prefix, index))


def _replace(data, path, value):
    if not path:
        return value
    copy = json.loads(json.dumps(data))
    holder = copy
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return copy


@PROPERTY
@given(st.text())
def test_any_text(text):
    outcome(text)


@PROPERTY
@given(st.binary())
def test_any_bytes(content):
    outcome(content)


@PROPERTY
@given(json_values, st.sampled_from([None, *format_names()]))
def test_any_json_detected_or_forced(value, fmt):
    outcome(json.dumps(value), format=fmt)


@PROPERTY
@given(st.lists(json_values, min_size=1, max_size=3), st.sampled_from([None, *format_names()]))
def test_any_json_lines(values, fmt):
    outcome("\n".join(json.dumps(v) for v in values), format=fmt)


@pytest.mark.parametrize("fmt", sorted(SEEDS))
@PROPERTY
@given(data=st.data())
def test_a_real_file_with_one_value_replaced(fmt, data):
    original = seed(data.draw(st.sampled_from(SEEDS[fmt])))
    path = data.draw(st.sampled_from(list(_paths(original))))
    mutated = _replace(original, path, data.draw(json_values))
    content = json.dumps(mutated)
    outcome(content, format=fmt)
    outcome(content)


@pytest.mark.parametrize("fmt", sorted(SEEDS))
@PROPERTY
@given(data=st.data())
def test_a_real_file_with_keys_dropped(fmt, data):
    original = seed(SEEDS[fmt][0])
    keys = list(original)
    dropped = data.draw(st.sets(st.sampled_from(keys), max_size=len(keys)))
    outcome(json.dumps({k: v for k, v in original.items() if k not in dropped}), format=fmt)


PRINTED = [
    "console/e2e-vllm-0.32.0-bench-serve-console.log",
    "console/e2e-sglang-0.5.23-console.log",
]


@PROPERTY
@given(data=st.data())
def test_a_printed_summary_with_one_line_changed(data):
    lines = (REAL / data.draw(st.sampled_from(PRINTED))).read_text().splitlines()
    # A line with a value (the block's, the printed arguments), or a block's first or last.
    valued = [i for i, line in enumerate(lines) if re.search(r"(: +\S+ *$)|Namespace|====", line)]
    index = data.draw(st.sampled_from(valued))
    label = lines[index].partition(":")[0]
    lines[index] = data.draw(st.sampled_from([f"{label}: ", "", lines[index][:5]])) + data.draw(
        st.text(max_size=20)
    )
    outcome("\n".join(lines))
    outcome("\n".join(lines), format="vllm-bench")


EXPORTED_CSV = [
    "genai-perf/cloudai-ai-dynamo-profile_genai_perf.csv",
    "genai-perf/e2e-aiperf-0.13.0-c2-profile_export_aiperf.csv",
]


@PROPERTY
@given(data=st.data())
def test_a_csv_export_with_one_cell_changed(data):
    lines = (REAL / data.draw(st.sampled_from(EXPORTED_CSV))).read_text().splitlines()
    index = data.draw(st.integers(0, len(lines) - 1))
    cells = lines[index].split(",")
    cell = data.draw(st.integers(0, len(cells) - 1))
    cells[cell] = data.draw(st.text(max_size=12))
    lines[index] = ",".join(cells)
    outcome("\n".join(lines))
    outcome("\n".join(lines), format="genai-perf")


RECORDS = "aiperf-records/e2e-aiperf-0.13.0-c4-warmup-profile_export.jsonl"
PER_REQUEST = "genai-perf/e2e-perf-analyzer-2.50-chat-c2-profile_export.json.gz"


@PROPERTY
@given(data=st.data())
def test_per_request_records_with_one_value_replaced(data):
    lines = [json.loads(line) for line in (REAL / RECORDS).read_text().splitlines()]
    index = data.draw(st.integers(0, len(lines) - 1))
    path = data.draw(st.sampled_from(list(_paths(lines[index]))))
    lines[index] = _replace(lines[index], path, data.draw(json_values))
    content = "\n".join(json.dumps(line) for line in lines)
    outcome(content, format="aiperf-records")
    outcome(content)


@PROPERTY
@given(data=st.data())
def test_genai_perf_per_request_export_with_one_value_replaced(data):
    seed = json.loads(gzip.decompress((REAL / PER_REQUEST).read_bytes()))
    seed["experiments"][0]["requests"] = seed["experiments"][0]["requests"][:4]
    path = data.draw(st.sampled_from(list(_paths(seed))))
    content = json.dumps(_replace(seed, path, data.draw(json_values)))
    outcome(content, format="genai-perf-requests")
    outcome(content)

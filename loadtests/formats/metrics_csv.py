"""GenAI-Perf's and AIPerf's CSV export (`profile_export_genai_perf.csv`,
`profile_export_aiperf.csv`), read as the JSON export it mirrors.

Both tools write the figures of their JSON export to a CSV beside it, and the CSV is often the
file kept or committed. It is sections separated by empty rows, each under its own header row:

- `Metric,avg,min,max,p99,...`: a row per distribution. The label is the JSON key in words with
  its unit in parentheses: "Time To First Token (ms)" (GenAI-Perf title-cases every word,
  AIPerf writes "Time to First Token (ms)"); the earliest releases wrote "Num Output Token";
- `Metric,Value`: one figure a row (throughputs, the request count; AIPerf adds the duration
  and token totals, "Total Output Sequence Length (tokens)" for the JSON's `total_osl`);
- GPU telemetry: `Metric,GPU,avg,...` and `Metric,GPU,Value` (GenAI-Perf), or
  `Endpoint,GPU_Index,GPU_Name,GPU_UUID,Platform,Metric,avg,...` (AIPerf).

Numbers carry thousands separators ("1,146.31", quoted) and "N/A" stands for a missing figure.
Each section becomes the JSON object the tool would have written (`{"unit", "avg", "p99"...}`),
so the `genai-perf` format reads the CSV with the JSON's rules. The CSV has no input config: the
load the run was given (concurrency or rate) is not in it, nor any time; AIPerf's measured
"Effective Concurrency" is.
"""

from __future__ import annotations

import csv
import re

from .base import Ctx, Document, LoadTestFormatError

FORMAT = "genai-perf"
# The first header cell and what may follow it, for each kind of section.
DISTRIBUTION = "avg"
SINGLE = "Value"
UNIT = re.compile(r"^(?P<name>.*?)\s*\((?P<unit>[^()]*)\)\s*$")
# A label whose words are not the JSON key's.
KEY_ALIASES = {
    "num_output_token": "output_sequence_length",  # GenAI-Perf's first releases
    "num_input_token": "input_sequence_length",
    "total_output_sequence_length": "total_osl",  # AIPerf
    "total_input_sequence_length": "total_isl",
}
# AIPerf's GPU rows ("NVIDIA GPU Utilization (%)") under GenAI-Perf's telemetry keys.
TELEMETRY_ALIASES = {
    "nvidia_gpu_utilization": "gpu_utilization",
    "nvidia_gpu_memory_used": "gpu_memory_used",
}
MISSING = {"", "N/A", "n/a", "NA", "-"}
# Columns that say which metric and GPU a row is about, not a figure.
TELEMETRY_COLUMNS = ("Metric", "GPU", "Endpoint", "GPU_Index", "GPU_Name", "GPU_UUID", "Platform")


def looks_like_csv(text: str) -> bool:
    """True when the first non-empty line is one of the tools' header rows."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    cells = [cell.strip() for cell in first.split(",")]
    return len(cells) >= 2 and cells[0] == "Metric" and cells[1] in (DISTRIBUTION, SINGLE)


def csv_documents(text: str) -> list[Document] | None:
    """The one JSON-shaped document the CSV holds, or None when the text is not such a CSV.
    A row that cannot be read raises `LoadTestFormatError` naming its line."""
    if not looks_like_csv(text):
        return None
    data: dict = {}
    header: list[str] | None = None
    reader = csv.reader(text.splitlines())
    try:
        for row in reader:
            line = reader.line_num
            cells = [cell.strip() for cell in row]
            if not any(cells):
                header = None  # a section ends at an empty row
                continue
            if header is None:
                header = _header(cells, line)
                continue
            _read_row(data, header, cells, Ctx(FORMAT, line=line))
    except csv.Error as exc:
        raise Ctx(FORMAT, line=reader.line_num).error(f"not a readable CSV row: {exc}") from None
    if not data:
        raise LoadTestFormatError(f"{FORMAT}: the CSV has header rows but no metric rows")
    return [Document(data, origin="csv")]


def _header(cells: list[str], line: int) -> list[str]:
    if "Metric" not in cells or len(cells) < 2:
        raise Ctx(FORMAT, line=line).error(
            f"expected a header row naming a Metric column, got {','.join(cells)[:80]!r}"
        )
    return cells


def _read_row(data: dict, header: list[str], cells: list[str], ctx: Ctx) -> None:
    if len(cells) != len(header):
        raise ctx.error(f"expected {len(header)} cells as in the header row, got {len(cells)}")
    row = dict(zip(header, cells, strict=True))
    key, unit = metric_key(row["Metric"], ctx)
    stats = {
        name: _number(value, ctx, name)
        for name, value in row.items()
        if name not in TELEMETRY_COLUMNS and value not in MISSING
    }
    gpu = _gpu(row)
    if gpu is not None:
        key = TELEMETRY_ALIASES.get(key, key)
        telemetry = data.setdefault("telemetry_stats", {}).setdefault(key, {"unit": unit})
        telemetry[gpu] = {"avg" if name == SINGLE else name: v for name, v in stats.items()}
        return
    if SINGLE in stats:
        stats = {"avg": stats.pop(SINGLE)}
    data[key] = {"unit": unit, **stats} if unit else stats


def _gpu(row: dict) -> str | None:
    """The GPU a telemetry row is about (AIPerf's index prefixed by its endpoint when it
    names one), or None for a request metric."""
    if "GPU" in row:
        return row["GPU"]
    if "GPU_Index" in row:
        endpoint = row.get("Endpoint", "")
        return f"{endpoint} {row['GPU_Index']}".strip()
    return None


def metric_key(label: str, ctx: Ctx) -> tuple[str, str | None]:
    """("time_to_first_token", "ms") for "Time To First Token (ms)"."""
    match = UNIT.match(label)
    name, unit = (match["name"], match["unit"].strip()) if match else (label, None)
    key = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if not key:
        raise ctx.at("Metric").error(f"expected a metric name, got {label!r}")
    return KEY_ALIASES.get(key, key), unit or None


def _number(value: str, ctx: Ctx, column: str) -> float:
    try:
        return float(value.replace(",", ""))
    except ValueError:
        raise ctx.at(column).error(f"expected a number, got {value[:40]!r}") from None

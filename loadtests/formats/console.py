"""The summary vLLM's and SGLang's serving benchmarks print, read from a saved console log.

Many runs are kept only as what the script printed (`... | tee bench.log`, a CI log, a README
block): a `============ Serving Benchmark Result ============` block of `Label: value` lines,
often under the command that ran it. Each block becomes one document holding the keys the
script would have written with `--save-result` (vLLM) or `--output-file` (SGLang), so the
`vllm-bench` format reads it like the JSON file, with the same rules (docs/loadtest-formats.md):

- the block's lines, found by their labels wherever a line starts (a log prefix or a `# ` before
  the label is skipped), vLLM 0.32's client-queue sections among them;
- from the text before a block (since the previous one): the command line, or the arguments the
  script printed (`Namespace(...)`), for what the run was told (`--request-rate`,
  `--max-concurrency`, `--num-prompts`, the dataset and its lengths, `--ignore-eos`; both
  scripts default to an unlimited rate), and the lines vLLM prints before its block ("Traffic
  request rate: inf", "Maximum request concurrency: 32").

A printed value wins over the command's; a number option given no number (`$prompts`) is no
value, and arguments asking for fewer prompts than the block counts requests are another run's.
Nothing else is guessed: the log has no time (give
one with `--measured-at`) and no per-request values.
"""

from __future__ import annotations

import re
import shlex

from .base import Document

# Summary lines are short. The patterns below backtrack on a long line (a line of 10,000
# characters costs ~0.4 s), so longer lines are never matched: an upload cannot stall a worker.
MAX_LINE = 400
TITLE = "Serving Benchmark Result"
HEADER = re.compile(r"=+ *Serving Benchmark Result *=+")
FOOTER = re.compile(r"^\W*={20,}\s*$")
# "<label>: <one value>" at the end of a line; the label is the run of words before the colon.
LINE = re.compile(r"([A-Za-z][A-Za-z0-9 ().,/_-]*?)\s*:\s+(\S+)\s*$")
METRIC = re.compile(
    r"^(Mean|Median|Std|P\d+(?:\.\d+)?) "
    r"(TTFT|TPOT|ITL|E2EL|E2E Latency|Client Queue Time|E2EL incl\. Client Queue) \(ms\)$"
)
METRIC_KEYS = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2EL": "e2el"}
METRIC_KEYS["E2E Latency"] = "e2e_latency"  # SGLang's spelling, as in its JSON keys
# vLLM 0.32's client-side queue, printed when `--percentile-metrics` names it (with
# `--max-concurrency`; the second at a finite rate only), under its JSON keys' spelling.
METRIC_KEYS["Client Queue Time"] = "client_queue_time"
METRIC_KEYS["E2EL incl. Client Queue"] = "e2el_including_client_queue"

# Printed label -> the key the script writes in its JSON file.
LABELS = {
    "Backend": "backend",
    "Successful requests": "completed",
    "Failed requests": "failed",
    "Benchmark duration (s)": "duration",
    "Total input tokens": "total_input_tokens",
    "Total generated tokens": "total_output_tokens",
    "Total generated tokens (retokenized)": "total_output_tokens_retokenized",
    "Request throughput (req/s)": "request_throughput",
    "Request goodput (req/s)": "request_goodput",
    "Input token throughput (tok/s)": "input_throughput",
    "Output token throughput (tok/s)": "output_throughput",
    "Total Token throughput (tok/s)": "total_token_throughput",
    "Total token throughput (tok/s)": "total_token_throughput",
    "Total throughput (tok/s)": "total_token_throughput",
    "Peak output token throughput (tok/s)": "max_output_tokens_per_s",
    "Peak concurrent requests": "max_concurrent_requests",
    "Concurrency": "concurrency",  # SGLang: the mean number in flight
    "Traffic request rate": "request_rate",
    "Request rate configured (RPS)": "request_rate",
    "Maximum request concurrency": "max_concurrency",
    "Max request concurrency": "max_concurrency",
}
# Printed before vLLM's block, not inside it.
PREAMBLE_LABELS = ("Traffic request rate", "Maximum request concurrency", "Max request concurrency")

NOTHING = ("None", "none", "N/A", "null")
# One `name=value` of a printed Namespace: a quoted string, or text up to the next comma.
ARGUMENT = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,()]*)")
COMMANDS = ("benchmark_serving", "bench serve", "bench_serving", "benchmark.serving")
# Command-line option -> (JSON key, takes a value). argparse accepts unambiguous prefixes
# (`--random-input 1024`), so those are resolved against this list too.
OPTIONS = {
    "--backend": ("backend", True),
    "--model": ("model_id", True),
    "--num-prompts": ("num_prompts", True),
    "--request-rate": ("request_rate", True),
    "--max-concurrency": ("max_concurrency", True),
    "--dataset-name": ("dataset_name", True),
    "--random-input-len": ("random_input_len", True),
    "--random-output-len": ("random_output_len", True),
    "--random-range-ratio": ("random_range_ratio", True),
    "--sharegpt-output-len": ("sharegpt_output_len", True),
    "--sonnet-output-len": ("sonnet_output_len", True),
    "--ignore-eos": ("ignore_eos", False),
    "--disable-ignore-eos": ("disable_ignore_eos", False),
}
TEXT_OPTIONS = ("backend", "model_id", "dataset_name")  # the other valued options are numbers


def summary_documents(text: str) -> list[Document]:
    """One document per printed summary block, in order; [] when the text has none."""
    lines = text.splitlines()
    documents: list[Document] = []
    since = 0  # where the text before the next block starts
    index = 0
    while index < len(lines):
        if not _header(lines[index]):
            index += 1
            continue
        header = last = index
        block: dict = {}
        index += 1
        while index < len(lines) and not _footer(lines[index]):
            if _header(lines[index]):
                break  # a block cut short: the next one starts here
            if _read_line(lines[index], block):
                last = index
            index += 1
        data = {**_preamble(lines[since:header], block), **block}  # printed values win
        documents.append(Document(data, line=header + 1, origin="console"))
        # After a cut-short block, the lines past its last value belong to the next run.
        since = index if index == len(lines) or _footer(lines[index]) else last + 1
    return documents


def _header(line: str) -> bool:
    return TITLE in line and len(line) <= MAX_LINE and HEADER.search(line) is not None


def _footer(line: str) -> bool:
    return len(line) <= MAX_LINE and FOOTER.match(line) is not None


def _read_line(line: str, data: dict, labels: tuple[str, ...] | None = None) -> bool:
    """Put the value of a known label on `line` into `data`; whether there was one."""
    if len(line) > MAX_LINE or ":" not in line:
        return False
    match = LINE.search(line)
    if match is None:
        return False
    label, value = match.group(1).strip(), _value(match.group(2))
    if value is None or (labels is not None and label not in labels):
        return False
    metric = METRIC.match(label)
    if metric:
        stat, name = metric.groups()
        data[f"{stat.lower()}_{METRIC_KEYS[name]}_ms"] = value
    elif label in LABELS:
        data[LABELS[label]] = value
    else:
        return False
    return True


def _value(text: str) -> int | float | str | None:
    """A printed number as a number ("10", "46.96", "inf"); "None", "N/A" as nothing; anything
    else stays text."""
    if text in NOTHING:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _preamble(lines: list[str], block: dict) -> dict:
    """What the text before a block says about the run: its command line, then the arguments
    the script printed (`Namespace(...)`), then the lines vLLM prints before the block; later
    ones win, being closer to what the script understood. A command or Namespace asking for
    fewer prompts than the block counts requests is another run's (a document's header)."""
    printed: dict = {}
    for line in lines:
        _read_line(line, printed, PREAMBLE_LABELS)
    told = [args for args in (_command(lines), _namespace(lines)) if _may_describe(args, block)]
    found = {key: value for args in told for key, value in args.items()}
    found.update(printed)
    return {key: value for key, value in found.items() if value is not None}


def _may_describe(args: dict, block: dict) -> bool:
    """Whether arguments can be those of the run the block summarizes: no fewer prompts than
    the requests it counts (those that succeeded and those that failed)."""
    prompts, done = args.get("num_prompts"), block.get("completed")
    if not isinstance(prompts, int | float) or not isinstance(done, int | float):
        return True
    failed = block.get("failed")
    return prompts >= done + (failed if isinstance(failed, int | float) else 0)


def _namespace(lines: list[str]) -> dict:
    """The last `Namespace(...)` both scripts print with their arguments, as JSON keys."""
    printed = [line for line in lines if "Namespace(" in line]
    if not printed:
        return {}
    args = dict(ARGUMENT.findall(printed[-1].split("Namespace(", 1)[1]))
    data = {}
    for option, (key, _) in OPTIONS.items():
        value = args.get(option.removeprefix("--").replace("-", "_"))
        if value is not None:
            data[key] = _option_value(key, value.strip("'\""))
    for flag in ("ignore_eos", "disable_ignore_eos"):
        if isinstance(data.get(flag), str):
            data[flag] = data[flag] == "True"
    if "disable_ignore_eos" in data:  # SGLang ignores EOS unless told not to
        data["ignore_eos"] = not data.pop("disable_ignore_eos")
    return data


def _command(lines: list[str]) -> dict:
    """The options of the last benchmark command in `lines` (continuation lines joined)."""
    starts = [n for n, line in enumerate(lines) if any(c in line for c in COMMANDS)]
    if not starts:
        return {}
    start = starts[-1]
    command = ""
    for line in lines[start:]:
        command += " " + line.rstrip().removesuffix("\\")
        if not line.rstrip().endswith("\\"):
            break
    try:
        words = shlex.split(command)
    except ValueError:
        return {}
    data: dict = {"request_rate": "inf"}  # both scripts' default when none is given
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        name, _, given = word.partition("=")
        option = _option(name)
        if option is None:
            continue
        key, takes_value = OPTIONS[option]
        if not takes_value:
            data[key] = True
            continue
        if not given and index < len(words):
            given = words[index]
            index += 1
        data[key] = _option_value(key, given)
    if data.pop("disable_ignore_eos", False):
        data["ignore_eos"] = False
    return data


def _option_value(key: str, text: str) -> int | float | str | bool | None:
    """An option's value; None for a number option given no number (a shell variable such as
    `$prompts`, a placeholder): the command as written, not what ran."""
    value = _value(text)
    if key in TEXT_OPTIONS or not isinstance(value, str) or value in ("True", "False"):
        return value
    return None


def _option(word: str) -> str | None:
    if not word.startswith("--"):
        return None
    if word in OPTIONS:
        return word
    candidates = [option for option in OPTIONS if option.startswith(word)]
    return candidates[0] if len(candidates) == 1 else None

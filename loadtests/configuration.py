"""A run's serving configuration, as far as its file records it: what the runs of one sweep share.

A sweep is one configuration measured at several loads. Two runs of the same workload on
different models, or on one server started with `--max-num-seqs 1` and then with 4 (what
`vllm bench sweep serve` measures), are two curves, not one: fitted together, the planner would
read one configuration's latency at another's load. Files record this in their own words, kept
in the run's `extra`:

    model       `model_id` (vLLM, SGLang), `model` (GenAI-Perf, guidellm, LLMPerf, evalscope),
                or the models of an llm-d report's `stack`
    stack       the serving stack of an llm-d report: engine, version, accelerator and count,
                role, replicas, per component
    overrides   the parameters `vllm bench sweep` set for the run (server and benchmark),
                less the load it swept
    metadata    the `--metadata KEY=VALUE` pairs given to `vllm bench serve` (`tp=2`), less
                those that number a repeat (`run=3`, `trial=2`: `REPEAT_LABELS`, and the
                keys in the setting PERFHUB_REPEAT_LABELS)
    arrival     how an open-loop run's requests arrived where not Poisson (`formats.base.
                arrival`): gamma arrivals at 10 req/s queue longer than Poisson ones at 10 req/s
                (P95 559 ms against 321 ms, measured on vLLM's CPU build), so they are not
                repeats of one point

Two runs share a configuration when they agree on the model and the stack where both record
them (a file that names no model joins a sweep of any), and have the same parameters: a run
without any ran the server's defaults, which is not a run with `max_num_seqs=1`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.conf import settings

# The keys of a run's `extra` this reads (a caller fetching `extra` in part needs these).
EXTRA_KEYS = ("model_id", "model", "stack", "overrides", "metadata", "arrival", "tool", "harness")
# The parts that are lists of parameters, and the order a title names the parts in.
PARAMETERS = ("overrides", "metadata")
PARTS = ("model", "stack", *PARAMETERS, "arrival")
# Parts two runs must agree on, a run without one having run the default.
EXACT = (*PARAMETERS, "arrival")
# Parts of a stack component that name the configuration (not its free-text label; its model
# is the model part).
STACK_PARTS = ("kind", "role", "tool", "tool_version", "accelerator")
STACK_COUNTS = ("accelerator_count", "replicas")
# `--metadata` labels that number repeats of one measurement rather than name a configuration:
# runs labelled `run=1` and `run=2` at one load are the run-to-run noise of one sweep, not two
# sweeps of a point each (compared lower-case, `-` read as `_`). `vllm bench sweep`'s own
# repeat counter, `run_number`, never becomes a parameter (formats.vllm_bench).
REPEAT_LABELS = frozenset(
    {"run", "run_number", "run_id", "run_index", "repeat", "repetition", "rep", "trial",
     "iteration", "attempt"}
)  # fmt: skip


def configuration(extra: Mapping[str, Any]) -> dict[str, str]:
    """The recorded configuration of a run, from (part of) its `extra`: part -> a canonical
    text, so that configurations compare with `==` and print as they are."""
    found: dict[str, str] = {}
    stack = extra.get("stack") if isinstance(extra.get("stack"), list) else []
    components = [item for item in stack if isinstance(item, dict)]
    model = extra.get("model_id") or extra.get("model")
    if not model:
        model = ", ".join(sorted({str(c["model"]) for c in components if c.get("model")}))
    if model:
        found["model"] = str(model)
    if components:
        found["stack"] = "; ".join(sorted(_component(c) for c in components))
    for part in PARAMETERS:
        values = _parameters_of(extra, part)
        if values:
            found[part] = ", ".join(
                f"{key}={_text(value)}" for key, value in sorted(values.items())
            )
    if isinstance(extra.get("arrival"), str) and extra["arrival"]:
        found["arrival"] = extra["arrival"]
    return found


# What an llm-d report whose scenario names no load generator keeps as its harness.
UNKNOWN_HARNESS = "unknown"


def client(extra: Mapping[str, Any]) -> str | None:
    """The load generator that measured the run, where its format is written by more than one:
    `extra.tool` ("sglang.bench_serving" for SGLang's files of the vllm-bench format, none for
    vLLM's own; "genai-perf" or "aiperf"), or an llm-d report's `extra.harness` (its
    `scenario.load` tool: "vllm-benchmark", "inference-perf", "guidellm", "aiperf"; "unknown"
    is none). Not part of the configuration (the server's), but runs of two clients at one load
    are not repeats: each times and counts in its own way (SGLang's client counts a request it
    never timed as a success, retokenizes the output, draws its random lengths differently;
    llm-d-benchmark runs several harnesses against one stack), so they are two sweeps
    (`loadtests.sweeps`)."""
    for key in ("tool", "harness"):
        value = extra.get(key)
        if isinstance(value, str) and value and value != UNKNOWN_HARNESS:
            return value
    return None


def is_repeat_label(key: str) -> bool:
    """Whether a `--metadata` key numbers a repeat (`REPEAT_LABELS`, or one of the keys a team
    named in the setting PERFHUB_REPEAT_LABELS) rather than a setting."""
    name = _label_name(key)
    return name in REPEAT_LABELS or name in map(_label_name, settings.PERFHUB_REPEAT_LABELS)


def _label_name(key: str) -> str:
    return key.strip().lower().replace("-", "_")


def _parameters_of(extra: Mapping[str, Any], part: str) -> dict[str, Any]:
    values = extra.get(part)
    if not isinstance(values, dict):
        return {}
    if part == "metadata":
        return {key: value for key, value in values.items() if not is_repeat_label(key)}
    return values


def same_configuration(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    """Whether two configurations are one (the rule in the module docstring)."""
    return same_model_and_stack(a, b) and all(a.get(part) == b.get(part) for part in EXACT)


def same_model_and_stack(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    """Whether two configurations agree on every part but the parameters and the arrivals,
    where both record it."""
    return all(a[part] == b[part] for part in (a.keys() & b.keys()) - set(EXACT))


def describe(config: Mapping[str, str]) -> str:
    """One line for titles: the model, then the stack and the parameters."""
    return " / ".join(config[part] for part in PARTS if part in config)


def _component(item: Mapping[str, Any]) -> str:
    words = [str(item[part]) for part in STACK_PARTS if item.get(part) not in (None, "")]
    counts = [f"{part}={item[part]}" for part in STACK_COUNTS if item.get(part) is not None]
    return " ".join(words + counts)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


# What a run without a parameter ran: the server's or the benchmark's own default.
DEFAULT = "(default)"


def parameters(extra: Mapping[str, Any]) -> dict[str, str]:
    """A run's parameters (`overrides`, then `metadata`), name -> canonical text. A metadata
    label that repeats an override's name is kept apart as `metadata.NAME`."""
    found: dict[str, str] = {}
    for part in PARAMETERS:
        for key, value in sorted(_parameters_of(extra, part).items()):
            found[key if key not in found else f"{part}.{key}"] = _text(value)
    return found


def one_change(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[str, str, str] | None:
    """(name, before's value, after's value) when two parameter sets differ in exactly one
    parameter (one of them may leave it at its default), else None."""
    changed = [
        key
        for key in sorted(before.keys() | after.keys())
        if before.get(key, DEFAULT) != after.get(key, DEFAULT)
    ]
    if len(changed) != 1:
        return None
    (key,) = changed
    return key, before.get(key, DEFAULT), after.get(key, DEFAULT)


def same_model(a: str, b: str) -> bool:
    """Whether two model names name one model: equal ignoring case, or one names the other
    without its organisation ("Llama-2-7b-chat-hf" is "meta-llama/Llama-2-7b-chat-hf")."""
    a, b = a.strip().casefold(), b.strip().casefold()
    return a == b or a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1]


LOCAL_PATH_STARTS = ("/", "./", "../", "~", "\\")


def other_model(recorded: Mapping[str, str], service_model: str) -> str | None:
    """The model a run's file names (`configuration(...)["model"]`) when none of it is the
    service's: a run of another model measures another service, whatever its numbers say.
    None when the file names no model or names the service's, or names it by a local path
    whose last part is not the service's model name: `vllm serve /models/current` is served
    from wherever the team keeps its weights, so the path cannot say which model it is."""
    model = recorded.get("model")
    if not model or not service_model:
        return None
    names = model.split(", ")
    if any(same_model(name, service_model) for name in names):
        return None
    if any(name.strip().startswith(LOCAL_PATH_STARTS) for name in names):
        return None
    return model

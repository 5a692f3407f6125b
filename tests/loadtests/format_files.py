"""The load-test fixture files of each format and the helpers the format tests share: a library
module (tests import it); the `read` and `load` fixtures are in conftest.py, and no test module
imports another."""

VLLM_C16 = "vllm-bench-serve-c16.json"
VLLM_SWEEP = "vllm-bench-concurrency-sweep.jsonl"
GENAI_PERF = "genai-perf-profile_export_genai_perf.json"
GUIDELLM = "guidellm-sweep-benchmarks.json"
LLMPERF = "llmperf-summary.json"
ALL_FIXTURES = {
    VLLM_C16: ("vllm-bench", 1),
    VLLM_SWEEP: ("vllm-bench", 7),
    GENAI_PERF: ("genai-perf", 1),
    GUIDELLM: ("guidellm", 7),
    LLMPERF: ("llmperf", 1),
}


def only(runs):
    assert len(runs) == 1
    return runs[0]


def sweep_lines(read) -> list[str]:
    return read(VLLM_SWEEP).decode().splitlines()

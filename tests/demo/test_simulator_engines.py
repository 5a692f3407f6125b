"""The simulated engine writes its service's own engine's /metrics (TGI, SGLang, Triton, vLLM),
under the names PerfHub's engine tables read, agreeing with the requests it simulated."""

import pytest

from collectors.exposition import parse
from demo.simulator import Simulator
from tests.support import StepClock

ENGINES = ("vllm", "tgi", "sglang", "triton")


def scrape_of(engine: str) -> tuple[dict, object]:
    """One scrape after a simulated minute, and the simulated engine behind it."""
    clock = StepClock()
    sim = Simulator(host="h", services=["svc"], engines={"svc": engine}, seed=5, clock=clock,
                    warmup_s=0.0)  # fmt: skip
    clock.now += 60.0
    _, [scrape], _ = sim.step()
    return scrape, sim.engines[0]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_scrape_names_the_engine_it_was_written_as(engine):
    scrape, _ = scrape_of(engine)
    assert scrape["source"] == engine


@pytest.mark.parametrize("engine", ENGINES)
def test_perfhubs_parser_reads_the_simulated_requests_and_tokens_from_each_engine(engine):
    scrape, fake = scrape_of(engine)
    page = parse(scrape["exposition"], engine)
    read = [page.counter_total(n) for n in (
        "requests_finished", "request_errors", "prompt_tokens", "generation_tokens"
    )]  # fmt: skip
    ok = fake.success["stop"] + fake.success["length"]
    prompt = fake.triton_prompt.sum if engine == "triton" else fake.prompt_tokens
    assert read == [ok, fake.success["error"], prompt, fake.generation_tokens]
    assert ok > 0


@pytest.mark.parametrize(
    ("engine", "histograms"),
    [
        ("vllm", {"ttft", "tpot", "itl", "e2e", "queue", "prefill", "decode"}),
        ("tgi", {"tpot", "e2e", "queue"}),
        ("sglang", {"ttft", "tpot", "itl", "e2e", "queue"}),
        ("triton", set()),
    ],
)
def test_each_engine_exports_only_the_latency_histograms_it_has(engine, histograms):
    scrape, _ = scrape_of(engine)
    page = parse(scrape["exposition"], engine)
    found = {name.removesuffix("_seconds") for name, _ in page.histograms}
    assert found == histograms


def test_an_engine_the_simulator_does_not_write_is_refused_naming_it():
    with pytest.raises(ValueError, match="engine: the simulator writes vllm, tgi, sglang"):
        Simulator(host="h", services=["svc"], engines={"svc": "ollama"}, clock=StepClock())

"""Any text handed to the exposition parser gives parsed series or an ExpositionError (with a
line number inside the text when one line is at fault), never another exception."""

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from collectors import exposition

NAMES = st.sampled_from(
    [
        "vllm:num_requests_running",
        "vllm:e2e_request_latency_seconds_bucket",
        "vllm:e2e_request_latency_seconds_count",
        "vllm:request_success_total",
        "tgi_request_duration_bucket",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "nv_inference_request_success",
        "x",
    ]
)
LABELS = st.lists(
    st.tuples(
        st.sampled_from(["le", "gpu", "UUID", "engine", "model_name", "finished_reason", "a"]),
        st.one_of(st.sampled_from(["0.1", "+Inf", "0", "GPU-1", "stop"]), st.text(max_size=5)),
    ),
    max_size=3,
)
VALUES = st.one_of(
    st.sampled_from(["1", "0", "-1", "NaN", "+Inf", "1e308", "1e999", "3.5", "x", ""]),
    st.floats().map(repr),
)


@st.composite
def lines(draw) -> str:
    kind = draw(st.integers(0, 4))
    name = draw(NAMES)
    if kind == 0:
        return f"# TYPE {name} {draw(st.sampled_from(['counter', 'gauge', 'histogram', 'x']))}"
    if kind == 1:
        return draw(st.text(max_size=30))
    labels = ",".join(f'{k}="{v}"' for k, v in draw(LABELS))
    return f"{name}{{{labels}}} {draw(VALUES)}" if labels or kind == 2 else f"{name} {draw(VALUES)}"


documents = st.one_of(st.text(), st.lists(lines(), max_size=12).map("\n".join))


@settings(max_examples=300, deadline=None)
@given(documents, st.sampled_from(exposition.sources()))
def test_any_text_parses_or_raises_the_documented_error(text, source):
    try:
        exposition.parse(text, source)
    except exposition.ExpositionError as exc:
        assert exc.line is None or 1 <= exc.line <= len(io.StringIO(text).readlines()) + 1
        assert str(exc)

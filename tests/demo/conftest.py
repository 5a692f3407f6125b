"""The demo's tests share the agent tests' fixture of vLLM's real /metrics page."""

from tests.collectors.agent.conftest import vllm_text  # noqa: F401  (a fixture)

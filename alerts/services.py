"""The alerts app's writes, one job a module; every name callers import from here stays here.

- `alerts.default_rules`: the rules every service starts with (`ensure_default_rules`).
- `alerts.evaluation`: `evaluate_all(now)`, the one entry point of evaluation (the Celery beat
  task, its shards and the demo runner call it): claim due rules chunk by chunk, read their
  inputs (`alerts.evaluation_inputs`), step their alerts, write, plan notifications.
- `alerts.lifecycle`: one alert stepped through an observation (pending, firing, resolved),
  its row and history events staged and written; `replay` does it for past observations at
  their own times (the demo's history), through the same steps and writes, notifying nobody.
- `alerts.silences`: silences created and expired.
"""

from alerts.default_rules import default_rule_specs, ensure_default_rules
from alerts.evaluation import (
    EvaluationReport,
    Shard,
    align_to_minute,
    evaluate_all,
    evaluation_chunk,
    evaluation_shards,
)
from alerts.evaluation_inputs import evaluation_lag, no_data_lookback
from alerts.lifecycle import replay
from alerts.silences import silence_create, silence_expire

__all__ = [
    "EvaluationReport",
    "Shard",
    "align_to_minute",
    "default_rule_specs",
    "ensure_default_rules",
    "evaluate_all",
    "evaluation_chunk",
    "evaluation_lag",
    "evaluation_shards",
    "no_data_lookback",
    "replay",
    "silence_create",
    "silence_expire",
]

"""Builders tests import (library modules, never conftests): `catalog` (services, baselines,
load tests), `traffic` (roll-up rows for pages and figures), `alerts` (raw data minute by
minute and evaluation at a frozen time), `agent` (the agent's token and simulated host),
`batches` (valid agent batches)."""

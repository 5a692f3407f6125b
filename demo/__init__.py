"""The demo, server side: the fleet's data files (`dossiers/`, `loadtests/`, read by
`seed_demo`), the engine simulator, the simulated GPU host (`python -m demo.agent`), the
Prometheus path of `run_demo` and the backfilled history. The product never needs it; the
GPU-host agent never imports it (.importlinter)."""

"""Writes of the collectors app: ingest, roll-ups, pull, retention, tokens.

Small modules with one job each; the names callers use most are re-exported here.
"""

from collectors.services.periodic import run_periodic_jobs

__all__ = ["run_periodic_jobs"]

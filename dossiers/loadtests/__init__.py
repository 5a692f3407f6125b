"""Load tests in the dossier: import and promotion, sweeps, the release gate, diagnosis.

The file parsers live in `dossiers.loadtest_formats` (pure); the math in `analysis`.
"""

from dossiers.loadtests.gate import GateInputError, run_gate
from dossiers.loadtests.importing import (
    LoadTestImportError,
    import_loadtest_file,
    promote_load_test,
)

__all__ = [
    "GateInputError",
    "LoadTestImportError",
    "import_loadtest_file",
    "promote_load_test",
    "run_gate",
]

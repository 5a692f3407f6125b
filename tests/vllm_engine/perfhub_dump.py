"""`make e2e-vllm`: the imported runs and the baselines as PerfHub stored them, one JSON line.

Run as `manage.py shell -c` against the e2e database after the import; the test compares these
stored values with what it recomputes from the bench file itself.
"""

import json

from dossiers.models import Baseline
from loadtests.models import LoadTest

runs = list(LoadTest.objects.order_by("pk").values())
for run, obj in zip(runs, LoadTest.objects.order_by("pk"), strict=True):
    run["url"] = obj.get_absolute_url()
baselines = list(Baseline.objects.order_by("pk").values())
print(json.dumps({"runs": runs, "baselines": baselines}, default=str))

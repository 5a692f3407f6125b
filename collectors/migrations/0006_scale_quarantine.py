# Quarantine for batches the roll-up cannot process. Index changes on the batch table are
# built CONCURRENTLY on PostgreSQL (not atomic), so ingest keeps writing meanwhile.

from django.db import migrations, models

from collectors.migration_ops import (
    AddIndexConcurrentlyOnPostgres,
    RemoveIndexConcurrentlyOnPostgres,
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("collectors", "0005_prom_prometheus_source"),
    ]

    operations = [
        migrations.AddField(
            model_name="ingestbatch",
            name="quarantine_reason",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="ingestbatch",
            name="quarantined_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        AddIndexConcurrentlyOnPostgres(
            model_name="ingestbatch",
            index=models.Index(
                condition=models.Q(("quarantined_at__isnull", True), ("rolled_up_at__isnull", True)),
                fields=["id"],
                name="ingestbatch_todo",
            ),
        ),
        RemoveIndexConcurrentlyOnPostgres(
            model_name="ingestbatch",
            name="ingestbatch_pending",
        ),
        AddIndexConcurrentlyOnPostgres(
            model_name="ingestbatch",
            index=models.Index(
                condition=models.Q(("quarantined_at__isnull", False)),
                fields=["host", "quarantined_at"],
                name="ingestbatch_quarantined",
            ),
        ),
    ]

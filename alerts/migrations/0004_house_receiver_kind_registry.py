# Receiver kinds come from a registry (alerts.receivers, one module per kind): the column's
# choices are the registry and it holds any registry name (core.names, 20 characters).

import alerts.receivers
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0003_prom_alertmanager_receiver"),
    ]

    operations = [
        migrations.AlterField(
            model_name="receiver",
            name="kind",
            field=models.CharField(choices=alerts.receivers.kind_choices, max_length=20),
        ),
    ]

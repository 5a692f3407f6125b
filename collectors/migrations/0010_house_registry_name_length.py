# The columns that store an engine or exporter name hold as many characters as every other
# registry-name column (core.names.NAME_MAX_LENGTH, 20): they were 10, so an engine named
# "tensorrt-llm" registered fine and its first push failed on PostgreSQL. Widening a varchar
# rewrites no rows; on a partitioned table PostgreSQL carries it to every partition.

import collectors.models
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("collectors", "0009_security_token_digests"),
    ]

    operations = [
        migrations.AlterField(
            model_name="host",
            name="pull_kind",
            field=models.CharField(
                blank=True, choices=collectors.models.pull_kind_choices, max_length=20
            ),
        ),
        migrations.AlterField(
            model_name="scrapestate",
            name="source",
            field=models.CharField(max_length=20),
        ),
        migrations.AlterField(
            model_name="scrapewindow",
            name="source",
            field=models.CharField(max_length=20),
        ),
    ]

# Raw tables partitioned by day on PostgreSQL (see collectors/partitions.py for the layout and
# why daily). An existing database is carried forward without copying rows: each plain table
# becomes the "legacy" partition of a new partitioned parent. SQLite keeps plain tables.
# Not atomic: each table is converted in its own short transaction.

from django.db import migrations, transaction


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    from collectors import partitions

    for model in partitions.PARTITIONED_MODELS:
        with transaction.atomic():
            partitions.convert(model._meta.db_table)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("collectors", "0007_scale_materialized_merges"),
    ]

    # Backwards leaves the tables partitioned: Django's model state is the same either way.
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop, elidable=False)]

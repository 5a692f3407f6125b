"""LoadTest, LoadTestSketch and GateRun now belong to the `loadtests` app (see loadtests.0001).

The promotion link was copied to `LoadTest.promoted_to` there; the old column goes, and the
models leave this app's state (their tables stay, owned by `loadtests`).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("dossiers", "0003_experiments_restrict"),
        ("loadtests", "0001_initial"),
    ]

    operations = [
        migrations.RemoveField(model_name="baseline", name="source_load_test"),
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="GateRun"),
                migrations.DeleteModel(name="LoadTestSketch"),
                migrations.DeleteModel(name="LoadTest"),
            ],
        ),
    ]

"""Finish the move from `dossiers`: the reverse name `Baseline.source_load_test`, and the content
types (admin history, permissions) follow the models to this app."""

import django.db.models.deletion
from django.db import migrations, models

MOVED = ["loadtest", "loadtestsketch", "gaterun"]


def move_content_types(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label="loadtests", model__in=MOVED).exists():
        ContentType.objects.filter(app_label="dossiers", model__in=MOVED).update(
            app_label="loadtests"
        )


def move_content_types_back(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="loadtests", model__in=MOVED).update(app_label="dossiers")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("dossiers", "0004_loadtests_move_out"),
        ("loadtests", "0001_initial"),
    ]

    operations = [
        migrations.AlterField(
            model_name="loadtest",
            name="promoted_to",
            field=models.OneToOneField(
                blank=True,
                help_text="The baseline this run was promoted to.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="source_load_test",
                to="dossiers.baseline",
            ),
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]

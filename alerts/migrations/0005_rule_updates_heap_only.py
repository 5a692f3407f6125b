# Every enabled rule is written each minute (its claim stamp, health and last value). The
# index on (enabled, last_evaluated_at) made each of those writes add an entry to every one of
# the table's four indexes; without it, and with room left on each page, PostgreSQL writes the
# new version beside the old one on its page and touches no index (a heap-only tuple). At
# 90,000 rules (a scratch table of this shape, eight minutes): 1.2-1.7 s of UPDATE a minute
# and a heap growing by ~1,600 pages a minute until vacuum, against 0.7-1.0 s and a heap that
# stops growing (issue 26). The claim no longer needs the index (`after` in
# alerts.evaluation). Pages filled before this keep their fill until rewritten.

from django.db import migrations

FILLFACTOR = 70


def set_fillfactor(apps, schema_editor, value=FILLFACTOR):
    if schema_editor.connection.vendor != "postgresql":
        return  # SQLite has no such setting; the embedded default is small
    table = schema_editor.quote_name(apps.get_model("alerts", "Rule")._meta.db_table)
    schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {int(value)})")


def reset_fillfactor(apps, schema_editor):
    set_fillfactor(apps, schema_editor, value=100)


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0004_house_receiver_kind_registry"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="rule", name="alertrule_due"),
        migrations.RunPython(set_fillfactor, reset_fillfactor),
    ]

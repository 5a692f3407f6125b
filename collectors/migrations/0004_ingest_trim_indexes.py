"""Drop the request-sample table's single-column foreign-key indexes on host_id and service_id.

Both duplicate the leading column of a composite index ((host, ts) and (service, host, ts)) and
cost every insert. On PostgreSQL the drop (and the re-create, backwards) runs CONCURRENTLY, so
ingest keeps writing meanwhile; that cannot run inside a transaction, hence `atomic = False`.
SQLite drops them plainly. Django's `RemoveIndexConcurrently` only knows indexes declared in
`Meta.indexes`, not the ones a ForeignKey makes for itself, hence this small operation; the
model state changes with `db_index=False` on both keys.
"""

from django.db import migrations, models
import django.db.models.deletion


class DropForeignKeyIndex(migrations.operations.base.Operation):
    reversible = True

    def __init__(self, model_name: str, column: str) -> None:
        self.model_name = model_name
        self.column = column

    def state_forwards(self, app_label, state):
        pass  # the AlterField beside it carries the state

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        model = from_state.apps.get_model(app_label, self.model_name)
        table = model._meta.db_table
        connection = schema_editor.connection
        with connection.cursor() as cursor:
            constraints = connection.introspection.get_constraints(cursor, table)
        for name, info in constraints.items():
            if (
                info["columns"] == [self.column] and info["index"]
                and not info["unique"] and not info["primary_key"]
            ):  # fmt: skip
                schema_editor.execute(
                    f"DROP INDEX {self._concurrently(connection)}"
                    f"{schema_editor.quote_name(name)}"
                )

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        model = to_state.apps.get_model(app_label, self.model_name)
        table = model._meta.db_table
        name = schema_editor._create_index_name(table, [self.column])
        quote = schema_editor.quote_name
        schema_editor.execute(
            f"CREATE INDEX {self._concurrently(schema_editor.connection)}{quote(name)} "
            f"ON {quote(table)} ({quote(self.column)})"
        )

    @staticmethod
    def _concurrently(connection) -> str:
        return "CONCURRENTLY " if connection.vendor == "postgresql" else ""

    def describe(self):
        return f"Drop the index on {self.model_name}.{self.column}"


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("collectors", "0003_pull_kind_from_engine_registry"),
        ("dossiers", "0003_experiments_restrict"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="requestsample",
                    name="host",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="collectors.host",
                    ),
                ),
                migrations.AlterField(
                    model_name="requestsample",
                    name="service",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="dossiers.service",
                    ),
                ),
            ],
            database_operations=[
                DropForeignKeyIndex("requestsample", "host_id"),
                DropForeignKeyIndex("requestsample", "service_id"),
            ],
        ),
    ]

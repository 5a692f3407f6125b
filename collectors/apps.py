from django.apps import AppConfig


class CollectorsConfig(AppConfig):
    name = "collectors"

    def ready(self) -> None:
        from collectors import schema, signals  # noqa: F401  (OpenAPI auth extension; locks)
        from collectors.exposition import engines
        from dossiers.models import use_engine_labels
        from dossiers.slo_kinds import use_engine_metrics

        # A service's engine choices are the registered engines (read when asked, so an engine
        # registered later shows up too).
        use_engine_labels(lambda: {e.name: e.label for e in engines.ENGINES.values()})
        # An SLO counted from the engine's own metrics names them (TGI's, not vLLM's).
        use_engine_metrics(engines.measured_by)

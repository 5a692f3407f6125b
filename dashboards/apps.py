from django.apps import AppConfig


class DashboardsConfig(AppConfig):
    name = "dashboards"

    def ready(self) -> None:
        from dashboards import vantage

        vantage.connect()

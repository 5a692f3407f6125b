from django.apps import AppConfig


class LoadtestsConfig(AppConfig):
    name = "loadtests"
    verbose_name = "load tests"

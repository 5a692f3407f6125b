from django.contrib import admin

from loadtests import models


class LoadTestSketchInline(admin.TabularInline):
    model = models.LoadTestSketch
    extra = 0
    readonly_fields = ["family", "count", "sum_ms", "min_ms", "max_ms"]
    exclude = ["sketch"]


@admin.register(models.LoadTest)
class LoadTestAdmin(admin.ModelAdmin):
    list_display = [
        "service",
        "label",
        "format",
        "concurrency",
        "measured_at",
        "date_known",
        "failure",
        "imported_at",
    ]
    list_filter = ["format", "service"]
    search_fields = ["label", "source_name"]
    inlines = [LoadTestSketchInline]


@admin.register(models.GateRun)
class GateRunAdmin(admin.ModelAdmin):
    list_display = ["service", "verdict", "source", "created_at"]
    list_filter = ["verdict", "source", "service"]

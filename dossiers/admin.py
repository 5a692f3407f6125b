from django.contrib import admin
from django.db.models import URLField

from core.accounts import ThrottledAdminAuthenticationForm
from dossiers import models

# The admin's login form goes through the same login limit as the login page (its attempts
# are counted by the authentication backend; this form says why it refused).
admin.site.login_form = ThrottledAdminAuthenticationForm


class MembershipInline(admin.TabularInline):
    model = models.Membership
    extra = 1


@admin.register(models.Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(models.Service)
class ServiceAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "team", "engine", "gpu_model", "replicas", "gpu_hour_price"]
    list_filter = ["engine", "team", "quantization"]
    search_fields = ["name", "slug", "model_name"]
    prepopulated_fields = {"slug": ["name"]}
    formfield_overrides = {URLField: {"assume_scheme": "https"}}  # as the service form does


@admin.register(models.NarrativeRevision)
class NarrativeRevisionAdmin(admin.ModelAdmin):
    list_display = ["service", "number", "summary", "author", "created_at"]
    list_filter = ["service"]


@admin.register(models.ConfigVersion)
class ConfigVersionAdmin(admin.ModelAdmin):
    list_display = ["service", "version", "is_current", "note", "author", "created_at"]
    list_filter = ["service", "is_current"]


@admin.register(models.Baseline)
class BaselineAdmin(admin.ModelAdmin):
    list_display = ["service", "label", "measured_at", "is_current", "qps", "e2e_p99_ms"]
    list_filter = ["service", "is_current"]
    date_hierarchy = "measured_at"


@admin.register(models.Bottleneck)
class BottleneckAdmin(admin.ModelAdmin):
    list_display = ["title", "service", "layer", "kind", "status", "identified_on"]
    list_filter = ["status", "layer", "kind", "service"]
    filter_horizontal = ["evidence_baselines"]


@admin.register(models.Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    list_display = ["title", "service", "variable_key", "verdict", "run_on"]
    list_filter = ["verdict", "service"]

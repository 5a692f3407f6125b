"""Preemptions "not counted" (an engine without a preemption counter: TGI, Triton, an SGLang
without a retraction total, a host scraped by dcgm-exporter only, pushed rows only) is NULL, no
longer 0; beside each count, the requests finished where it was counted, so a service with hosts
of mixed engines takes its share over those alone.

Rows written before this cannot tell a counted 0 from an engine that has no counter. A service
whose dossier names vLLM (every vLLM release PerfHub reads exports `num_preemptions_total`) keeps
its 0s, counted over all of the row's finished requests; other services' 0s become NULL (not
known). A count above 0 was counted, over all of the row's finished requests.
"""

from django.db import migrations, models
from django.db.models import F

# Frozen here, not imported: a migration must not change when the engine tables do.
ENGINES_ALWAYS_COUNTING = ("vllm",)


def zero_is_not_known(apps, schema_editor):
    ServiceRollup = apps.get_model("collectors", "ServiceRollup")
    ServiceMergedRollup = apps.get_model("collectors", "ServiceMergedRollup")
    counted = {"service__engine__in": ENGINES_ALWAYS_COUNTING}
    ServiceRollup.objects.filter(scraped_preemptions=0).exclude(**counted).update(
        scraped_preemptions=None
    )
    ServiceRollup.objects.filter(scraped_preemptions__isnull=False).update(
        scraped_finished_counting_preemptions=(
            F("scraped_requests") + F("scraped_errors") + F("scraped_aborts")
        )
    )
    ServiceMergedRollup.objects.filter(preempted=0).exclude(**counted).update(preempted=None)
    ServiceMergedRollup.objects.filter(preempted__isnull=False).update(
        finished_counting_preemptions=F("finished")
    )


class Migration(migrations.Migration):
    dependencies = [
        ("collectors", "0017_rollups_prompt_token_requests"),
    ]

    operations = [
        migrations.AlterField(
            model_name="servicemergedrollup",
            name="preempted",
            field=models.FloatField(default=None, null=True),
        ),
        migrations.AddField(
            model_name="servicemergedrollup",
            name="finished_counting_preemptions",
            field=models.FloatField(default=None, null=True),
        ),
        migrations.AlterField(
            model_name="servicerollup",
            name="scraped_preemptions",
            field=models.FloatField(default=None, null=True),
        ),
        migrations.AddField(
            model_name="servicerollup",
            name="scraped_finished_counting_preemptions",
            field=models.FloatField(default=None, null=True),
        ),
        migrations.RunPython(zero_is_not_known, migrations.RunPython.noop),
    ]

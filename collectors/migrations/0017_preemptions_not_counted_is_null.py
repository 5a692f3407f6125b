"""Preemptions "not counted" (an engine without a preemption counter: TGI, Triton, an SGLang
without a retraction total, a host scraped by dcgm-exporter only, pushed rows only) is NULL, no
longer 0; beside each count, the requests finished where it was counted, so a service with hosts
of mixed engines takes its share over those alone.

Rows written before this cannot tell a counted 0 from an engine that has no counter, so their 0s
become NULL (not known); a count above 0 was counted, over all of the row's finished requests.
"""

from django.db import migrations, models
from django.db.models import F


def zero_is_not_known(apps, schema_editor):
    ServiceRollup = apps.get_model("collectors", "ServiceRollup")
    ServiceMergedRollup = apps.get_model("collectors", "ServiceMergedRollup")
    ServiceRollup.objects.filter(scraped_preemptions=0).update(scraped_preemptions=None)
    ServiceRollup.objects.filter(scraped_preemptions__gt=0).update(
        scraped_finished_counting_preemptions=(
            F("scraped_requests") + F("scraped_errors") + F("scraped_aborts")
        )
    )
    ServiceMergedRollup.objects.filter(preempted=0).update(preempted=None)
    ServiceMergedRollup.objects.filter(preempted__gt=0).update(
        finished_counting_preemptions=F("finished")
    )


class Migration(migrations.Migration):
    dependencies = [
        ("collectors", "0016_rollups_request_tokens_preemptions"),
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

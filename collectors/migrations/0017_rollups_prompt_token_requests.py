"""Roll-up rows keep the count TGI's prompt-token histogram was observed with, beside the one its
output-token histogram was (`scraped_token_requests`): the router observes the prompt of every
request that passes validation, failed and dropped ones and each best_of sequence among them, and
the output of successes only, so each sum is read over its own count. Rows written before hold
vLLM's or Triton's per-request histograms (one count for both sums) or nothing: their prompt
count is their shared count."""

from django.db import migrations, models


def fill(apps, schema_editor):
    ServiceRollup = apps.get_model("collectors", "ServiceRollup")
    ServiceRollup.objects.filter(scraped_token_requests__gt=0).update(
        scraped_prompt_token_requests=models.F("scraped_token_requests")
    )


class Migration(migrations.Migration):

    dependencies = [
        ('collectors', '0016_rollups_request_tokens_preemptions'),
    ]

    operations = [
        migrations.AddField(
            model_name='servicerollup',
            name='scraped_prompt_token_requests',
            field=models.FloatField(default=0),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]

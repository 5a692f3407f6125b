"""Roll-up rows keep what vLLM's per-request token histograms and its preemption counter add
(the raw scrape windows already hold them in their JSON): one column per additive figure, as
every other counter has, so claims and the diagnosis read them from roll-ups like the rest.
Rows written before start at 0, which is what they knew: nothing to fill."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('collectors', '0015_merged_rows_carry_slo_counts'),
    ]

    operations = [
        migrations.AddField(
            model_name='servicemergedrollup',
            name='preempted',
            field=models.FloatField(default=0),
        ),
        migrations.AddField(
            model_name='servicerollup',
            name='scraped_preemptions',
            field=models.FloatField(default=0),
        ),
        migrations.AddField(
            model_name='servicerollup',
            name='scraped_request_output_tokens',
            field=models.FloatField(default=0),
        ),
        migrations.AddField(
            model_name='servicerollup',
            name='scraped_request_prompt_tokens',
            field=models.FloatField(default=0),
        ),
        migrations.AddField(
            model_name='servicerollup',
            name='scraped_token_requests',
            field=models.FloatField(default=0),
        ),
    ]

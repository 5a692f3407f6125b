"""Move LoadTest, LoadTestSketch and GateRun from `dossiers` into this app.

The models take over their tables as they are (state only: no data is copied). The link between a
baseline and the run it was promoted from turns around: it was `Baseline.source_load_test` in
`dossiers` and becomes `LoadTest.promoted_to` here, so `dossiers` no longer knows about load tests.
`dossiers.0004` drops the old column after the copy below.
"""

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def copy_promotions(apps, schema_editor):
    Baseline = apps.get_model("dossiers", "Baseline")
    LoadTest = apps.get_model("loadtests", "LoadTest")
    pairs = Baseline.objects.exclude(source_load_test=None).values_list("pk", "source_load_test_id")
    for baseline_id, load_test_id in pairs:
        LoadTest.objects.filter(pk=load_test_id).update(promoted_to_id=baseline_id)


def uncopy_promotions(apps, schema_editor):
    Baseline = apps.get_model("dossiers", "Baseline")
    LoadTest = apps.get_model("loadtests", "LoadTest")
    pairs = LoadTest.objects.exclude(promoted_to=None).values_list("pk", "promoted_to_id")
    for load_test_id, baseline_id in pairs:
        Baseline.objects.filter(pk=baseline_id).update(source_load_test_id=load_test_id)


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('dossiers', '0003_experiments_restrict'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='LoadTest',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('measured_at', models.DateTimeField()),
                        ('concurrency', models.PositiveIntegerField(blank=True, null=True)),
                        ('request_rate', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='request rate (req/s)')),
                        ('prompt_tokens_mean', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)])),
                        ('prompt_tokens_std', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)])),
                        ('output_tokens_mean', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)])),
                        ('output_tokens_std', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)])),
                        ('duration_s', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)])),
                        ('code_version', models.CharField(blank=True, max_length=80)),
                        ('engine_version', models.CharField(blank=True, max_length=40)),
                        ('request_count', models.PositiveIntegerField(blank=True, null=True)),
                        ('qps', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='QPS')),
                        ('input_tps', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='input tokens/s')),
                        ('output_tps', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='output tokens/s')),
                        ('gpu_util', models.FloatField(blank=True, null=True, verbose_name='GPU utilization')),
                        ('sm_active', models.FloatField(blank=True, null=True, verbose_name='SM active')),
                        ('dram_active', models.FloatField(blank=True, null=True, verbose_name='DRAM bandwidth utilization')),
                        ('mem_weights_bytes', models.BigIntegerField(blank=True, null=True, verbose_name='GPU memory for weights')),
                        ('mem_kv_bytes', models.BigIntegerField(blank=True, null=True, verbose_name='GPU memory for KV cache')),
                        ('e2e_p50_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='E2E P50 (ms)')),
                        ('e2e_p90_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='E2E P90 (ms)')),
                        ('e2e_p95_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='E2E P95 (ms)')),
                        ('e2e_p99_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='E2E P99 (ms)')),
                        ('e2e_p999_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='E2E P999 (ms)')),
                        ('ttft_p50_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='TTFT P50 (ms)')),
                        ('ttft_p90_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='TTFT P90 (ms)')),
                        ('ttft_p95_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='TTFT P95 (ms)')),
                        ('ttft_p99_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='TTFT P99 (ms)')),
                        ('ttft_p999_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='TTFT P999 (ms)')),
                        ('tpot_p50_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='TPOT P50 (ms)')),
                        ('tpot_p90_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='TPOT P90 (ms)')),
                        ('tpot_p95_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='TPOT P95 (ms)')),
                        ('tpot_p99_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='TPOT P99 (ms)')),
                        ('tpot_p999_ms', models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='TPOT P999 (ms)')),
                        ('label', models.CharField(max_length=200)),
                        ('format', models.CharField(max_length=20)),
                        ('tool_version', models.CharField(blank=True, max_length=40)),
                        ('source_name', models.CharField(blank=True, max_length=255, verbose_name='file name')),
                        ('content_sha256', models.CharField(max_length=64)),
                        ('run_index', models.PositiveIntegerField(help_text='Position of the run in its file, from 0.')),
                        ('origin', models.CharField(choices=[('cli', 'command line'), ('api', 'API'), ('web', 'upload form'), ('gate', 'release gate candidate'), ('demo', 'demo data')], default='web', max_length=10)),
                        ('imported_at', models.DateTimeField(auto_now_add=True)),
                        ('errors', models.PositiveIntegerField(blank=True, null=True, verbose_name='failed requests')),
                        ('request_rate_inf', models.BooleanField(default=False, help_text='All requests sent at once (rate inf).', verbose_name='unlimited request rate')),
                        ('extra', models.JSONField(blank=True, default=dict)),
                        ('imported_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('service', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='load_tests', to='dossiers.service')),
                    ],
                    options={
                        'db_table': 'dossiers_loadtest',
                        'ordering': ['-measured_at', 'run_index'],
                    },
                ),
                migrations.CreateModel(
                    name='GateRun',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('verdict', models.CharField(choices=[('pass', 'pass'), ('regression', 'regression'), ('refused', 'refused')], max_length=12)),
                        ('result', models.JSONField(default=dict, help_text="GateResult.to_dict(), or {'reasons': [...]} when refused.")),
                        ('table', models.TextField(blank=True)),
                        ('source', models.CharField(choices=[('cli', 'command line'), ('api', 'API'), ('web', 'web')], max_length=4)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('baseline', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='gate_runs', to='dossiers.baseline')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('service', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='gate_runs', to='dossiers.service')),
                        ('candidate', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='gate_runs', to='loadtests.loadtest')),
                    ],
                    options={
                        'db_table': 'dossiers_gaterun',
                        'ordering': ['-created_at', '-pk'],
                    },
                ),
                migrations.CreateModel(
                    name='LoadTestSketch',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('family', models.CharField(choices=[('ttft', 'TTFT'), ('tpot', 'TPOT'), ('itl', 'inter-token latency'), ('e2e', 'end-to-end')], max_length=4)),
                        ('sketch', models.BinaryField()),
                        ('count', models.PositiveIntegerField()),
                        ('sum_ms', models.FloatField()),
                        ('min_ms', models.FloatField(blank=True, null=True)),
                        ('max_ms', models.FloatField(blank=True, null=True)),
                        ('load_test', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='sketches', to='loadtests.loadtest')),
                    ],
                    options={
                        'db_table': 'dossiers_loadtestsketch',
                    },
                ),
                migrations.AddIndex(
                    model_name='loadtest',
                    index=models.Index(fields=['service', '-measured_at'], name='loadtest_service_measured'),
                ),
                migrations.AddConstraint(
                    model_name='loadtest',
                    constraint=models.UniqueConstraint(fields=('service', 'content_sha256', 'run_index'), name='loadtest_unique_run_per_file'),
                ),
                migrations.AddConstraint(
                    model_name='loadtest',
                    constraint=models.CheckConstraint(condition=models.Q(('concurrency__isnull', True), ('concurrency__gte', 1), _connector='OR'), name='loadtest_concurrency_positive'),
                ),
                migrations.AddIndex(
                    model_name='gaterun',
                    index=models.Index(fields=['service', '-created_at'], name='gaterun_service_created'),
                ),
                migrations.AddConstraint(
                    model_name='loadtestsketch',
                    constraint=models.UniqueConstraint(fields=('load_test', 'family'), name='loadtestsketch_one_per_family'),
                ),
            ],
        ),
        # A reverse name of its own until dossiers.0004 removes Baseline.source_load_test.
        migrations.AddField(
            model_name='loadtest',
            name='promoted_to',
            field=models.OneToOneField(blank=True, help_text='The baseline this run was promoted to.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='dossiers.baseline'),
        ),
        migrations.RunPython(copy_promotions, uncopy_promotions),
    ]

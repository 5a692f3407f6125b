"""Load-test pages: list and upload, one run, sweeps, gate runs, diagnosis, the calculators.

Thin views: forms parse, `loadtests.importing` and `loadtests.gate` write, `loadtests.pages`
reads. Every page needs a login; writes answer 403 to anyone outside the service's team.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.text import capfirst
from django.views.decorators.http import require_POST

from analysis import cost, kvcache
from analysis.fingerprint import Fingerprint
from dossiers.models import Baseline
from dossiers.permissions import service_for_editing, service_for_reading
from dossiers.selectors import economics_view, latency_table
from loadtests import charts, engine_side, pages, tokens
from loadtests import diagnosis as diag
from loadtests.formats import registry
from loadtests.forms import CITokenForm, CostForm, KvCacheForm, LoadTestUploadForm
from loadtests.gate import current_reference, reference_leavers
from loadtests.importing import (
    LoadTestImportError,
    PromotionError,
    describe_skipped,
    filled_in_notes,
    import_loadtest_files,
    promote_load_test,
)
from loadtests.models import GateRun, LoadTest
from loadtests.one_change import (
    ExperimentFromRunsError,
    changes_into,
    compare,
    load_label,
    pair_of,
    record_experiment,
    recorded_experiment,
)
from loadtests.sweeps import sweep_containing, sweeps_for_service, sweet_spot
from loadtests.tokens import ci_token_issue

# --- Load tests -------------------------------------------------------------------------------


@login_required
def load_tests(request: HttpRequest, slug: str) -> HttpResponse:
    service = service_for_reading(slug)
    return render(
        request,
        "loadtests/list.html",
        {
            "service": service,
            "page": pages.load_tests_page(service),
            "can_edit": service.can_edit(request.user),
            "tools": [fmt.label for fmt in registry.formats()],
        },
    )


@login_required
def upload(request: HttpRequest, slug: str) -> HttpResponse:
    service = service_for_editing(request.user, slug)
    form = LoadTestUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        uploads = form.cleaned_data["file"]
        try:
            runs = import_loadtest_files(
                service=service,
                files=[(upload.read(), upload.name) for upload in uploads],
                format=form.cleaned_data["format"] or None,
                user=request.user,
                baseline=form.cleaned_data["baseline"],
                baseline_run=form.cleaned_data["run"],
                origin=LoadTest.Origin.WEB,
                measured_at=form.cleaned_data["measured_at"],
            )
        except LoadTestImportError as exc:
            form.add_error("file", str(exc))
        else:
            created = sum(1 for r in runs if r.just_created)
            names = ", ".join(upload.name for upload in uploads)
            messages.success(
                request,
                f"Imported {created} new run{'s' if created != 1 else ''} from {names}"
                + (f" ({len(runs) - created} already imported)." if created < len(runs) else ".")
                + (f" {describe_skipped(runs.skipped)}" if runs.skipped else "")
                + "".join(f" {note}." for note in filled_in_notes(runs)),
            )
            if len(runs) == 1:
                return redirect(runs[0])
            return redirect("loadtests:list", service.slug)
    return render(request, "loadtests/upload.html", {"service": service, "form": form})


@login_required
def detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    service = service_for_reading(slug)
    try:
        run = pages.load_test_for_page(service, pk)
    except LoadTest.DoesNotExist:
        raise Http404("No such load test.") from None
    return render(
        request,
        "loadtests/detail.html",
        {
            "service": service,
            "run": run,
            "latency": latency_table(run),
            "economics": economics_view(service, run),
            "baseline": run.promoted_to,
            "sweep": sweep_containing(service, run.pk),
            "gate_runs": list(run.gate_runs.select_related("service", "baseline")[:20]),
            "can_edit": service.can_edit(request.user),
            "sources": pages.source_rows(run),
            "other_model": pages.run_other_model(service, run),
            "sides": engine_side.side_by_side(run),
            "fingerprint_text": Fingerprint.from_dict(run.fingerprint).summary()
            if run.fingerprint
            else "not recorded (imported before fingerprints)",
        },
    )


@login_required
@require_POST
def promote(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    service = service_for_editing(request.user, slug)
    run = get_object_or_404(LoadTest, service=service, pk=pk)
    before = current_reference(service)
    try:
        baseline = promote_load_test(
            load_test=run,
            user=request.user,
            override_lint=request.POST.get("override_lint", "")[:500],
        )
    except PromotionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"“{baseline.label}” is now the current baseline.")
        if leavers := reference_leavers(service, before):
            messages.info(request, leavers[0].upper() + leavers[1:] + ".")
    return redirect(run)


@login_required
def sweep(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    service = service_for_reading(slug)
    sweeps = sweeps_for_service(service)
    found = next((s for s in sweeps if pk in s.run_pks), None)
    if found is None:
        raise Http404("That load test is not part of a sweep.")
    spot = sweet_spot(found, service)
    changes = changes_into(found, sweeps)
    figure = charts.sweep_figure(spot, changes)
    return render(
        request,
        "loadtests/sweep.html",
        {
            "service": service,
            "spot": spot,
            "sweep": found,
            "changes": changes,
            "can_edit": service.can_edit(request.user),
            "chart_json": charts.to_json_script(figure, "sweep-chart-data"),
        },
    )


@login_required
def compare_runs(request: HttpRequest, slug: str, pk: int, before: int) -> HttpResponse:
    """Run `pk` (after a one-parameter change) against run `before`, through the release gate:
    every run at that load on each side, before as the baseline set."""
    service = service_for_reading(slug)
    after_run = get_object_or_404(LoadTest, service=service, pk=pk)
    before_run = get_object_or_404(LoadTest, service=service, pk=before)
    try:
        change, pair = pair_of(before_run, after_run)
    except ExperimentFromRunsError as exc:
        raise Http404(str(exc)) from None
    try:
        result, refusal = compare(pair).to_dict(), None
    except ValueError as exc:
        result, refusal = None, str(exc)
    return render(
        request,
        "loadtests/compare.html",
        {
            "service": service,
            "change": change,
            "pair": pair,
            "load": load_label(change.sweep, pair.x),
            "result": result,
            "refusal": refusal,
            "recorded": recorded_experiment(pair),
            "can_edit": service.can_edit(request.user),
        },
    )


@login_required
@require_POST
def experiment_from_runs(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Record run `pk` (after) and the run in the POST's `before` as an experiment."""
    service = service_for_editing(request.user, slug)
    after = get_object_or_404(LoadTest, service=service, pk=pk)
    before_pk = request.POST.get("before", "")
    if not before_pk.isdigit():
        messages.error(request, "Say which run is the before: the form's “before” is missing.")
        return redirect(after)
    before = get_object_or_404(LoadTest, service=service, pk=int(before_pk))
    try:
        experiment, created = record_experiment(before=before, after=after, user=request.user)
    except (ExperimentFromRunsError, PromotionError) as exc:
        messages.error(request, capfirst(str(exc)) + ".")
        return redirect(after)
    if created:
        messages.success(
            request,
            f"Recorded “{experiment.title}”, pending: say what was expected, and judge it.",
        )
    else:
        messages.info(request, f"These two runs are already “{experiment.title}”.")
    return redirect("dossiers:experiment_edit", slug=service.slug, pk=experiment.pk)


# --- CI tokens --------------------------------------------------------------------------------


@login_required
def ci_tokens(request: HttpRequest, slug: str) -> HttpResponse:
    """The service's CI tokens (and its team's), for team members: list, create, revoke.

    A new token's plaintext is in this one response and nowhere else."""
    service = service_for_editing(request.user, slug)
    form = CITokenForm(request.POST or None)
    plaintext = created = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        created, plaintext = ci_token_issue(
            service=service if data["scope"] == "service" else None,
            team=service.team,
            label=data["label"],
            can_import=data["can_import"],
            can_promote=data["can_promote"],
            can_gate=data["can_gate"],
            created_by=request.user,
        )
        form = CITokenForm()
    return render(
        request,
        "loadtests/ci_tokens.html",
        {
            "service": service,
            "tokens": pages.ci_tokens_for(service),
            "form": form,
            "created": created,
            "plaintext": plaintext,
        },
        status=201 if created else 200,
    )


@login_required
@require_POST
def ci_token_revoke(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    service = service_for_editing(request.user, slug)
    token = get_object_or_404(pages.ci_tokens_query(service), pk=pk)
    tokens.ci_token_revoke(token=token)
    messages.success(request, f"{token.credential_label} revoked.")
    return redirect("loadtests:ci_tokens", service.slug)


# --- Gate runs --------------------------------------------------------------------------------


@login_required
def gate_runs(request: HttpRequest, slug: str) -> HttpResponse:
    service = service_for_reading(slug)
    return render(
        request,
        "loadtests/gate_runs.html",
        {"service": service, "gate_runs": pages.gate_runs_page(service)},
    )


@login_required
def gate_run(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    service = service_for_reading(slug)
    found = get_object_or_404(
        GateRun.objects.select_related("candidate", "baseline"), service=service, pk=pk
    )
    context = {
        "service": service,
        "gate_run": found,
        "candidates": list(found.candidates.all()),
        "baselines": list(found.baseline_set.all()),
    }
    return render(request, "loadtests/gate_run.html", context)


# --- Diagnosis --------------------------------------------------------------------------------

RUN_KINDS = {"baseline": Baseline, "loadtest": LoadTest}


def _run(service, kind: str, pk: int) -> LoadTest | Baseline:
    model = RUN_KINDS.get(kind)
    if model is None:
        raise Http404("Unknown kind of run.")
    run = get_object_or_404(model.objects.select_related("service"), service=service, pk=pk)
    if isinstance(run, Baseline):
        run = Baseline.objects.select_related("service", "source_load_test").get(pk=run.pk)
    return run


@login_required
def diagnosis(request: HttpRequest, slug: str, kind: str, pk: int) -> HttpResponse:
    service = service_for_reading(slug)
    run = _run(service, kind, pk)
    return render(
        request,
        "loadtests/diagnosis.html",
        {
            "service": service,
            "run": run,
            "kind": kind,
            "proposals": diag.proposals_for(run),
            "can_edit": service.can_edit(request.user),
        },
    )


@login_required
@require_POST
def confirm(request: HttpRequest, slug: str, kind: str, pk: int) -> HttpResponse:
    service = service_for_editing(request.user, slug)
    run = _run(service, kind, pk)
    try:
        bottleneck = diag.confirm_proposal(
            run=run, rule=request.POST.get("rule", ""), user=request.user
        )
    except diag.UnknownProposal as exc:
        messages.error(request, f"Nothing confirmed: {exc}.")
        return redirect("loadtests:diagnosis", service.slug, kind, pk)
    messages.success(request, f"Bottleneck “{bottleneck.title}” recorded as confirmed.")
    return redirect(f"{service.get_absolute_url()}#bottleneck-{bottleneck.pk}")


# --- Calculators ------------------------------------------------------------------------------


@login_required
def cost_calculator(request: HttpRequest) -> HttpResponse:
    form = CostForm(request.GET or None)
    result = None
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        result = {
            "economics": cost.economics(
                gpu_hour_price=data["gpu_hour_price"],
                gpus=data["gpus"],
                tokens_per_second=data["tokens_per_second"],
                price_per_mtok=data["price_per_mtok"],
                busy_fraction=data["busy_fraction"],
            ),
            "seconds_per_mtok": cost.TOKENS_PER_MILLION / data["tokens_per_second"],
            "gpu_hours_per_mtok": data["gpus"]
            * cost.TOKENS_PER_MILLION
            / data["tokens_per_second"]
            / cost.SECONDS_PER_HOUR,
        }
    return render(request, "loadtests/cost_calculator.html", {"form": form, "result": result})


SEED_KV_EXAMPLE = {
    "layers": 40,
    "kv_heads": 40,
    "head_dim": 128,
    "seq_len": 2048,
    "batch": 16,
    "bytes_per_element": 2,
}


@login_required
def kv_cache_calculator(request: HttpRequest) -> HttpResponse:
    form = KvCacheForm(request.GET or None)
    result = None
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        factors = {
            "layers": data["layers"],
            "kv_heads": data["kv_heads"] or data["attention_heads"],
            "head_dim": data["head_dim"],
            "seq_len": data["seq_len"],
            "batch": data["batch"],
            "bytes_per_element": kvcache.DTYPE_BYTES[data["dtype"]],
        }
        total = kvcache.kv_cache_bytes(**factors)
        per_sequence = kvcache.kv_cache_bytes(**{**factors, "batch": 1})
        result = {
            "factors": factors,
            "bytes": total,
            "decimal": kvcache.format_bytes(total),
            "binary": kvcache.format_bytes(total, binary=True),
            "per_sequence": kvcache.format_bytes(per_sequence),
            "per_token": per_sequence // factors["seq_len"],
            "gqa": factors["kv_heads"] < data["attention_heads"],
            "is_seed_example": factors == SEED_KV_EXAMPLE,
        }
    return render(request, "loadtests/kv_cache_calculator.html", {"form": form, "result": result})

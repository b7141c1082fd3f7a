"""`localagent bench`: constrained decoding against unconstrained and the stock grammar path."""

from __future__ import annotations

import json

import click

from localagent.cli.common import MODEL, int_option
from localagent.models.registry import resolve_model


@click.command()
@MODEL
@int_option("--runs", 1, 20, default=2, help="Times each prompt is generated on each path.")
@int_option("--max-tokens", 8, 1024, default=64, help="Tokens per generation.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
def bench(model: str, runs: int, max_tokens: int, as_json: bool) -> None:
    """Measure the decoding paths side by side in one run, on the same prompts.

    Paths: unconstrained (own loop, no grammar), stock_gbnf (llama-cpp-python's grammar sampler),
    llguidance (own loop, masks, forced tokens fast-forwarded) and llguidance_no_drafts (the same
    without prompt-lookup drafts). Reports ms per output token (median and p90 over generations) and
    ratios, the fast-forwarded and kept-draft shares, mask time per sampled token, grammar compile
    times, time to first token, cold start in a fresh process, and KV-cache reuse in a 6-step run.
    """
    from localagent.evaluation.bench import run_benchmark

    report = (lambda line: None) if as_json else (lambda line: click.echo(line, err=True))
    figures = run_benchmark(resolve_model(model), runs=runs, max_tokens=max_tokens, report=report)
    if as_json:
        click.echo(json.dumps(figures, indent=2))
        return
    click.echo(render_table(figures))


def render_table(figures: dict) -> str:
    lines = [
        f"model {figures['model']}: {figures['prompts']} prompts x {figures['runs']} runs, "
        f"up to {figures['max_tokens']} tokens each; llama.cpp's CPU code: {figures['cpu_code']}",
        "",
    ]
    lines.append(
        f"{'path':<22}{'ms/token med':>13}{'p90':>9}{'vs free':>9}{'ff share':>10}{'drafts':>8}"
        f"{'mask ms med':>13}{'p90':>8}{'1st tok ms':>12}"
    )
    for name, path in figures["paths"].items():
        mask = path["mask_ms_per_token"]
        mask_cells = f"{mask['median']:>13.3f}{mask['p90']:>8.3f}" if mask else f"{'-':>13}{'-':>8}"
        lines.append(
            f"{name:<22}{path['ms_per_token']['median']:>13.2f}{path['ms_per_token']['p90']:>9.2f}"
            f"{path['ratio_to_unconstrained']:>9.3f}{path['fast_forwarded_share']:>10.3f}"
            f"{path['kept_draft_share']:>8.3f}{mask_cells}"
            f"{path['first_token_ms']['median']:>12.1f}"
        )
    ratios = figures["ratios"]
    compile_ms = figures["grammar_compile_ms"]
    lines += [
        "",
        f"llguidance / unconstrained ms per token: {ratios['llguidance_vs_unconstrained']}",
        f"stock GBNF / llguidance ms per token:    {ratios['stock_vs_llguidance']}",
        f"llguidance with / without drafts:        {ratios['drafts_vs_no_drafts']}",
        f"grammar for {compile_ms['tools']} tools: generate {compile_ms['generate_lark_ms']} ms, "
        f"first compile {compile_ms['first_compile_ms']} ms, cached {compile_ms['cached_ms']} ms",
        f"llguidance tokenizer build: {figures['tokenizer_build_s']} s",
        f"cold start to first token: {figures['cold_start_s']} s "
        f"({figures['cold_start_without_disk_cache_s']} s without the disk cache)",
        "KV reuse (step: prompt / new / evaluated tokens): "
        + ", ".join(
            f"{r['step']}: {r['prompt_tokens']}/{r['new_tokens']}/{r['evaluated_tokens']}"
            for r in figures["kv_reuse"]["steps"]
        ),
        f"most extra tokens evaluated in a step: {figures['kv_reuse']['max_extra_tokens_per_step']}",
    ]
    return "\n".join(lines)

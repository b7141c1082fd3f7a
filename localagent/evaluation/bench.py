"""`localagent bench`: the decoding paths side by side in one run, on the same prompts.

Paths: the own loop without a grammar (unconstrained), llama-cpp-python's `create_completion` with
its GBNF grammar sampler (stock), the own loop with llguidance masks and fast-forwarded tokens, and
the same without prompt-lookup drafts. The own loop drafts by default.
Figures are medians and p90s over generations, and ratios between paths: these machines are noisy.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from localagent.backends.cpu_backend import cpu_code_name
from localagent.backends.decoding import Generation
from localagent.backends.guidance import Guidance
from localagent.backends.llama_runtime import LoadSettings
from localagent.backends.local_generator import LocalSettings
from localagent.backends.local_turn import open_local_turn
from localagent.backends.token_reuse import TokenReuse
from localagent.core.cancel import CancelToken
from localagent.core.messages import (
    Final,
    Message,
    NamedToolChoice,
    SystemMessage,
    ToolChoice,
    ToolMessage,
    UserMessage,
    assistant_message_for,
)
from localagent.errors import BackendError
from localagent.formats.base import ReplyFormat
from localagent.models.registry import ResolvedModel
from localagent.tools import Tool, Workspace, select_tools
from localagent.tools.spec import ToolSpec
from localagent.turn import prompts

PROMPTS = [
    "What is 17 * 23?",
    "What is in notes.txt?",
    "List the files in the workspace.",
    "Search the files for the word 'answer'.",
    "What is the square root of 1764?",
    "Read the file src/main.py.",
    "Who wrote Hamlet?",
    "Add 1234 and 5678.",
]
PATHS = ("unconstrained", "stock_gbnf", "llguidance", "llguidance_no_drafts")
Report = Callable[[str], None]


@dataclass
class PathFigures:
    ms_per_token: list[float] = field(default_factory=list)
    first_token_ms: list[float] = field(default_factory=list)
    mask_ms: list[float] = field(default_factory=list)
    generated: int = 0
    fast_forwarded: int = 0
    kept_drafts: int = 0

    def add(self, generation: Generation) -> None:
        stats = generation.stats
        if stats.generated_tokens:
            self.ms_per_token.append(1000 * stats.generate_seconds / stats.generated_tokens)
        if stats.first_token_seconds is not None:
            self.first_token_ms.append(1000 * stats.first_token_seconds)
        self.mask_ms.extend(1000 * seconds for seconds in stats.mask_times)
        self.generated += stats.generated_tokens
        self.fast_forwarded += stats.fast_forwarded_tokens
        self.kept_drafts += stats.kept_draft_tokens

    def summary(self) -> dict[str, Any]:
        return {
            "ms_per_token": _spread(self.ms_per_token),
            "first_token_ms": _spread(self.first_token_ms),
            "mask_ms_per_token": _spread(self.mask_ms) if self.mask_ms else None,
            "fast_forwarded_share": round(self.fast_forwarded / self.generated, 3) if self.generated else 0.0,
            "kept_draft_share": round(self.kept_drafts / self.generated, 3) if self.generated else 0.0,
            "tokens": self.generated,
        }


def _spread(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return {"median": round(statistics.median(ordered), 3), "p90": round(p90, 3), "n": len(ordered)}


def bench_workspace() -> Path:
    root = Path(tempfile.mkdtemp(prefix="localagent-bench-"))
    (root / "notes.txt").write_text("buy milk\ncall Ada at 5\nthe answer is 42\n", encoding="utf-8")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("def main():\n    print('hello')\n", encoding="utf-8")
    return root


def run_benchmark(
    model: ResolvedModel, *, runs: int = 2, max_tokens: int = 64, report: Report = lambda line: None
) -> dict[str, Any]:
    tools = select_tools(None, Workspace(bench_workspace()))
    specs = [tool.spec for tool in tools]
    turn = open_local_turn(
        model, LoadSettings(n_ctx=4096), LocalSettings(max_tokens=max_tokens, disk_cache=False)
    )
    generator = turn.generator
    session = generator.session
    tokenizer_started = time.perf_counter()
    guidance = generator.guidance
    report(f"llguidance tokenizer built in {time.perf_counter() - tokenizer_started:.2f} s")
    grammar = turn.format.grammar(specs, "auto")
    compiled = guidance.compile(grammar.lark)
    figures = {path: PathFigures() for path in PATHS}
    for run in range(runs):
        for prompt_text in PROMPTS:
            prompt = (
                TokenReuse(session).tokens_for(turn.format.render(_conversation(prompt_text), specs)).tokens
            )
            for path in PATHS:
                if path == "unconstrained":
                    generation = session.generate(prompt, max_tokens=max_tokens)
                elif path == "stock_gbnf":
                    generation = session.generate_stock(prompt, max_tokens=max_tokens, gbnf=grammar.gbnf)
                else:
                    generation = session.generate(
                        prompt,
                        max_tokens=max_tokens,
                        matcher=compiled.fresh(),
                        speculate=path == "llguidance",
                    )
                figures[path].add(generation)
        report(f"run {run + 1}/{runs} done")
    summaries = {path: figures[path].summary() for path in PATHS}
    unconstrained = summaries["unconstrained"]["ms_per_token"]["median"]
    llguidance = summaries["llguidance"]["ms_per_token"]["median"]
    stock = summaries["stock_gbnf"]["ms_per_token"]["median"]
    for path in PATHS:
        summaries[path]["ratio_to_unconstrained"] = round(
            summaries[path]["ms_per_token"]["median"] / unconstrained, 3
        )
    report("measuring grammar compile times")
    compile_figures = grammar_compile_times(guidance, turn.format)
    report("measuring KV-cache reuse over a 6-step run")
    kv = kv_reuse_run(model, tools)
    report("measuring cold start in a fresh process")
    cold = cold_start_seconds(model)
    cold_without_cache = cold_start_seconds(model, disk_cache=False)
    return {
        "model": model.display_name,
        "cpu_code": cpu_code_name(),
        "prompts": len(PROMPTS),
        "runs": runs,
        "max_tokens": max_tokens,
        "paths": summaries,
        "ratios": {
            "llguidance_vs_unconstrained": round(llguidance / unconstrained, 3),
            "stock_vs_llguidance": round(stock / llguidance, 3),
            "drafts_vs_no_drafts": round(
                llguidance / summaries["llguidance_no_drafts"]["ms_per_token"]["median"], 3
            ),
        },
        "tokenizer_build_s": round(guidance.tokenizer_seconds, 3),
        "grammar_compile_ms": compile_figures,
        "kv_reuse": kv,
        "cold_start_s": round(cold, 3),
        "cold_start_without_disk_cache_s": round(cold_without_cache, 3),
    }


def _conversation(task: str) -> list[Message]:
    return [SystemMessage(content=prompts.SYSTEM_PROMPT), UserMessage(content=prompts.first_task(task, None))]


def ten_tool_specs() -> list[ToolSpec]:
    """Ten real tool schemas from BFCL, shipped with the package (evaluation/bench_tools.json)."""
    data = json.loads(
        resources.files("localagent.evaluation").joinpath("bench_tools.json").read_text("utf-8")
    )
    return [ToolSpec.from_openai(item) for item in data["tools"]]


def grammar_compile_times(guidance: Guidance, reply_format: ReplyFormat) -> dict[str, float]:
    specs = ten_tool_specs()
    started = time.perf_counter()
    grammar = reply_format.grammar(specs, "auto")
    generated = time.perf_counter()
    guidance.compile(grammar.lark)
    compiled = time.perf_counter()
    cached_runs = []
    for _ in range(20):
        again = time.perf_counter()
        guidance.compile(reply_format.grammar(specs, "auto").lark).fresh()
        cached_runs.append(time.perf_counter() - again)
    return {
        "tools": len(specs),
        "generate_lark_ms": round(1000 * (generated - started), 3),
        "first_compile_ms": round(1000 * (compiled - generated), 3),
        "cached_ms": round(1000 * statistics.median(cached_runs), 3),
    }


def kv_reuse_run(model: ResolvedModel, tools: list[Tool], steps: int = 6) -> dict[str, Any]:
    """Five forced calculator steps and an answer, recording what each step evaluated."""
    turn = open_local_turn(model, LoadSettings(n_ctx=4096), LocalSettings(max_tokens=64))
    by_name = {tool.name: tool for tool in tools}
    specs = [tool.spec for tool in tools]
    messages = _conversation("Start from 2 and double it five times with the calculator.")
    for step in range(steps):
        choice: ToolChoice = NamedToolChoice(name="calculator") if step < steps - 1 else "none"
        result = turn(messages, specs, choice, CancelToken())
        messages.append(assistant_message_for(result))
        if isinstance(result, Final):
            break
        for request in result.requests:
            content = by_name[request.name].run(request.arguments or {}, CancelToken())
            messages.append(ToolMessage(request_id=request.id, name=request.name, content=content))
    rows = [
        {
            "step": index + 1,
            "prompt_tokens": record.prompt_tokens,
            "new_tokens": record.new_prompt_tokens,
            "evaluated_tokens": record.evaluated_prompt_tokens,
        }
        for index, record in enumerate(turn.generator.steps)
    ]
    extra = [row["evaluated_tokens"] - row["new_tokens"] for row in rows[1:]]
    return {"steps": rows, "max_extra_tokens_per_step": max(extra) if extra else 0}


def cold_start_seconds(model: ResolvedModel, disk_cache: bool = True) -> float:
    """From starting a fresh Python process to its first generated token, grammar and all.

    With `disk_cache`, the instructions' KV snapshot and the vocabulary saved by an earlier run are
    used, as on every run after a model's first; without it, everything is computed afresh.
    """
    code = (
        "import sys\n"
        "from localagent.evaluation.bench import first_token_in_this_process\n"
        "first_token_in_this_process(sys.argv[1], sys.argv[2] == 'cache')\n"
    )
    started = time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            code,
            model.display_name if model.entry else str(model.path),
            "cache" if disk_cache else "no-cache",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    elapsed = time.perf_counter() - started
    process.wait(timeout=120)
    if line.strip() != "first-token":
        detail = process.stderr.read().strip().splitlines() if process.stderr else []
        raise BackendError(f"the cold-start process failed: {detail[-1] if detail else 'no output'}")
    return elapsed


def _model_argument(model: ResolvedModel) -> str:
    """How a new process names the model: by its registry name when it has one, so it reads its entry."""
    return model.entry.name if model.entry else str(model.path)


def first_token_in_this_process(model: str, disk_cache: bool) -> None:
    """What `localagent run` does up to the first token the model chooses; prints a marker then."""
    from localagent.core.cancel import Cancelled
    from localagent.models.registry import resolve_model

    tools = select_tools(None, Workspace(Path.cwd()))
    settings = LocalSettings(max_tokens=32, disk_cache=disk_cache)
    turn = open_local_turn(resolve_model(model), LoadSettings(n_ctx=4096), settings)
    cancel = CancelToken()

    def on_delta(delta: object) -> None:
        if not cancel.cancelled:
            print("first-token", flush=True)
            cancel.cancel()

    messages = _conversation("Hi")
    try:
        turn(messages, [t.spec for t in tools], "auto", cancel, on_delta)
    except Cancelled:
        return
    print("no token was generated", flush=True)

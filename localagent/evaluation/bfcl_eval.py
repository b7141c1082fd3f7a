"""`localagent eval bfcl`: one BFCL category on the local model, with the grammar and without it.

The model is loaded once; the two columns are two text-tag turns sharing its session, run one after
the other on the same questions, so neither reuses the other's KV cache for a question.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from localagent.backends.llama_runtime import LoadSettings
from localagent.backends.local_generator import Decoder, LocalGenerator, LocalSettings
from localagent.backends.local_turn import ToolFormat, open_local_turn
from localagent.backends.text_turn import TextTurn
from localagent.evaluation.bfcl_data import BfclCase
from localagent.evaluation.bfcl_run import Progress, run_column
from localagent.models.registry import ResolvedModel

# Column name -> the decoder it runs: llguidance masks (the grammar), or free text read tolerantly.
COLUMNS: dict[str, Decoder] = {"grammar": "llguidance", "no_grammar": "none"}


def local_turns(
    model: ResolvedModel,
    columns: Sequence[str],
    max_tokens: int,
    load: LoadSettings | None = None,
    tool_format: ToolFormat = "react",
) -> dict[str, TextTurn]:
    """One turn per column on a single loaded copy of the model."""
    turns: dict[str, TextTurn] = {}
    session = None
    for name in columns:
        settings = LocalSettings(max_tokens=max_tokens, decoder=COLUMNS[name])
        turn = open_local_turn(model, load, settings, tool_format=tool_format, session=session)
        generator = turn.generator
        assert isinstance(generator, LocalGenerator)
        session = generator.session
        if settings.decoder == "llguidance":
            _ = (
                generator.guidance
            )  # build the tokenizer now, so the first question's time does not include it
        turns[name] = turn
    return turns


def evaluate_bfcl(
    model: ResolvedModel,
    category: str,
    cases: Sequence[BfclCase],
    *,
    data_dir: Path,
    columns: Sequence[str] = tuple(COLUMNS),
    max_tokens: int = 384,
    progress: Progress | None = None,
    tool_format: ToolFormat = "react",
) -> dict[str, Any]:
    """Run the columns and return the figures and per-question results as one JSON-ready object."""
    turns = local_turns(model, columns, max_tokens, tool_format=tool_format)
    results = {name: run_column(name, turn, category, cases, progress) for name, turn in turns.items()}
    return {
        "benchmark": "bfcl",
        "category": category,
        "model": model.display_name,
        "data": str(data_dir),
        "questions": len(cases),
        "max_tokens": max_tokens,
        "format": next(iter(turns.values())).format.name,
        "columns": {name: column.summary() for name, column in results.items()},
        "results": {name: [r.as_json() for r in column.results] for name, column in results.items()},
    }

"""The local text-tag turn on the real embedded model (Gemma 3 270M base) with the real llama.cpp engine."""

from __future__ import annotations

import pytest

from localagent.backends.decoding import PREFILL_CHUNK, LlamaSession, Sampling
from localagent.backends.llama_context import logits_row
from localagent.backends.local_generator import LocalGenerator, LocalSettings
from localagent.backends.local_turn import open_local_turn
from localagent.backends.text_turn import TextTurn
from localagent.core.cancel import CancelToken
from localagent.core.messages import (
    Final,
    Message,
    NamedToolChoice,
    SystemMessage,
    ToolMessage,
    ToolRequests,
    UserMessage,
    assistant_message_for,
)
from localagent.errors import RecoverableTurnError
from localagent.formats.react.grammar import build_grammar
from localagent.formats.react.parser import parse_reply
from localagent.formats.react.render import prompt_turns, render_plain
from localagent.models.registry import ResolvedModel
from localagent.tools import InvalidArguments, Tool

pytestmark = pytest.mark.slow

# Two tokens whose logits differ by less than this are a near tie, which rounding may tip.
NEAR_TIE_LOGITS = 0.5

TASKS = [
    "What is 17 * 23?",
    "What is the square root of 1764?",
    "Compute (12 + 30) / 7.",
    "What is 2 to the power of 10?",
    "How much is 15% of 240?",
    "Add 1234 and 5678.",
    "What is 99 minus 144?",
    "Divide 1000 by 8.",
    "What is 3.5 times 4?",
    "What is the remainder of 100 divided by 7?",
    "List the files in the workspace.",
    "What is in notes.txt?",
    "Read the file src/main.py.",
    "What does the README say?",
    "Which files are in the src directory?",
    "Search the files for the word 'answer'.",
    "Find where 'print' is used.",
    "Is there a file that mentions Ada?",
    "Show the first line of notes.txt.",
    "Search for 'milk' in notes.txt.",
    "Say hello.",
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Translate 'good morning' into Spanish.",
    "Who wrote Hamlet?",
    "Name three primary colors.",
    "What day comes after Monday?",
    "Summarize what you can do in one sentence.",
    "How many days are in a leap year?",
    "What is 2 + 2? Answer without tools.",
]


def make_turn(model: ResolvedModel, **settings: object) -> TextTurn:
    return open_local_turn(model, settings=LocalSettings(**settings))  # type: ignore[arg-type]


def start(task: str) -> list[Message]:
    return [SystemMessage(content="You are a careful assistant."), UserMessage(content=task)]


def is_valid_structure(result: Final | ToolRequests, tools: list[Tool]) -> bool:
    if isinstance(result, Final):
        return bool(result.content.strip())
    by_name = {tool.name: tool for tool in tools}
    for request in result.requests:
        tool = by_name.get(request.name)
        if tool is None or request.parse_error is not None:
            return False
        try:
            tool.validate(request.arguments or {})
        except InvalidArguments:
            return False
    return True


def test_thirty_tasks_under_the_grammar_all_give_a_valid_action_or_answer(
    embedded_model: ResolvedModel, default_tools: list[Tool], capsys: pytest.CaptureFixture[str]
) -> None:
    constrained = make_turn(embedded_model, max_tokens=160)
    free = make_turn(embedded_model, max_tokens=160, decoder="none")
    specs = [tool.spec for tool in default_tools]
    valid = {"grammar": 0, "no grammar": 0}
    failures: list[str] = []
    for task in TASKS:
        result = constrained(start(task), specs, "auto", CancelToken())
        if is_valid_structure(result, default_tools):
            valid["grammar"] += 1
        else:
            failures.append(f"{task!r}: {result}")
        try:
            unconstrained = free(start(task), specs, "auto", CancelToken())
        except RecoverableTurnError:
            continue
        valid["no grammar"] += is_valid_structure(unconstrained, default_tools)
    with capsys.disabled():
        print(
            f"\nstructure rate over {len(TASKS)} tasks: grammar {valid['grammar']}/{len(TASKS)}, "
            f"no grammar (tolerant parser) {valid['no grammar']}/{len(TASKS)}"
        )
    assert failures == []
    assert all(step.decoder == "llguidance" for step in constrained.generator.steps)


def test_each_step_evaluates_only_the_tokens_added_since_the_last(
    embedded_model: ResolvedModel, default_tools: list[Tool]
) -> None:
    turn = make_turn(embedded_model, max_tokens=96)
    specs = [tool.spec for tool in default_tools]
    tools = {tool.name: tool for tool in default_tools}
    messages = start("Compute 2 * 3, then that result times 4, and so on.")
    for step in range(5):
        choice = NamedToolChoice(name="calculator") if step < 4 else "none"
        result = turn(messages, specs, choice, CancelToken())
        messages.append(assistant_message_for(result))
        if isinstance(result, ToolRequests):
            for request in result.requests:
                content = tools[request.name].run(request.arguments or {}, CancelToken())
                messages.append(ToolMessage(request_id=request.id, name=request.name, content=content))
    assert isinstance(result, Final)
    assert len(turn.generator.steps) == 5
    for record in turn.generator.steps[1:]:
        assert record.new_prompt_tokens < record.prompt_tokens
        assert record.new_prompt_tokens <= record.evaluated_prompt_tokens <= record.new_prompt_tokens + 1


def test_a_named_choice_calls_that_tool_and_none_answers(
    embedded_model: ResolvedModel, default_tools: list[Tool]
) -> None:
    turn = make_turn(embedded_model, max_tokens=96)
    specs = [tool.spec for tool in default_tools]
    forced = turn(start("Say hello."), specs, NamedToolChoice(name="list_dir"), CancelToken())
    assert isinstance(forced, ToolRequests)
    assert [r.name for r in forced.requests] == ["list_dir"] * len(forced.requests)
    answered = turn(start("What is 6 * 7?"), specs, "none", CancelToken())
    assert isinstance(answered, Final)


def test_cut_off_output_becomes_a_recoverable_error(
    embedded_model: ResolvedModel, default_tools: list[Tool]
) -> None:
    turn = make_turn(embedded_model, max_tokens=4)
    with pytest.raises(RecoverableTurnError) as caught:
        turn(start("What is 17 * 23?"), [t.spec for t in default_tools], "auto", CancelToken())
    assert caught.value.problem == "cut_off"
    assert "4-token limit" in caught.value.feedback


def test_cancel_between_tokens(embedded_model: ResolvedModel, default_tools: list[Tool]) -> None:
    from localagent.core.cancel import Cancelled

    turn = make_turn(embedded_model, max_tokens=200)
    cancel = CancelToken()
    seen: list[str] = []

    def on_delta(delta: object) -> None:
        seen.append(str(delta))
        cancel.cancel()

    with pytest.raises(Cancelled):
        turn(start("Write a haiku about the sea."), [t.spec for t in default_tools], "none", cancel, on_delta)
    assert turn.generator.steps == [] or turn.generator.steps[-1].generation.stop == "cancelled"


def prompt_for(task: str, tools: list[Tool], session: LlamaSession) -> list[int]:
    text = render_plain(prompt_turns(start(task), [t.spec for t in tools], plain=True))
    return session.tokenize(text, bos=True)


@pytest.mark.parametrize("task", ["What is 17 * 23?", "What is in notes.txt?", "Say hello."])
def test_greedy_llguidance_loop_equals_the_stock_gbnf_sampler(
    task: str, llama_session: LlamaSession, default_tools: list[Tool], embedded_model: ResolvedModel
) -> None:
    from localagent.backends.guidance import Guidance

    grammar = build_grammar([t.spec for t in default_tools], "auto")
    guidance = Guidance(llama_session)
    prompt = prompt_for(task, default_tools, llama_session)
    stepwise = llama_session.generate(
        prompt,
        max_tokens=80,
        matcher=guidance.compile(grammar.lark).fresh(),
        fast_forward=False,
        speculate=False,
    )
    stock = llama_session.generate_stock(prompt, max_tokens=80, gbnf=grammar.gbnf)
    assert stepwise.text == stock.text
    fast = llama_session.generate(prompt, max_tokens=80, matcher=guidance.compile(grammar.lark).fresh())
    assert fast.stats.fast_forwarded_tokens > 0
    if fast.tokens == stepwise.tokens:
        return
    # Forced tokens are evaluated in one batch with the token before them, and llama.cpp rounds a
    # batch row a little differently from a lone token: the two replies may part, but only where
    # the model was torn between the two tokens, never at a token the grammar forced.
    parted = next(
        (i for i, (a, b) in enumerate(zip(fast.tokens, stepwise.tokens, strict=False)) if a != b),
        min(len(fast.tokens), len(stepwise.tokens)),
    )
    assert parted < min(len(fast.tokens), len(stepwise.tokens)), "one reply is a prefix of the other"
    llama_session.prefill([*prompt, *stepwise.tokens[:parted]])
    logits = logits_row(llama_session.llama, llama_session.n_vocab)
    assert abs(logits[stepwise.tokens[parted]] - logits[fast.tokens[parted]]) < NEAR_TIE_LOGITS
    assert logits.max() - logits[fast.tokens[parted]] < NEAR_TIE_LOGITS


def test_forced_tokens_share_a_model_step_with_the_token_before_them(
    llama_session: LlamaSession, default_tools: list[Tool], monkeypatch: pytest.MonkeyPatch
) -> None:
    from localagent.backends.guidance import Guidance

    grammar = build_grammar([t.spec for t in default_tools], "auto")
    prompt = prompt_for("What is in notes.txt?", default_tools, llama_session)
    batches: list[int] = []
    evaluate = llama_session.llama.eval
    monkeypatch.setattr(
        llama_session.llama, "eval", lambda tokens: (batches.append(len(tokens)), evaluate(tokens))
    )
    llama_session.llama.n_tokens = 0  # nothing to reuse: the whole prompt but its last token is evaluated
    fast = llama_session.generate(
        prompt, max_tokens=80, matcher=Guidance(llama_session).compile(grammar.lark).fresh(), speculate=False
    )
    stats = fast.stats
    sampled = stats.generated_tokens - stats.fast_forwarded_tokens
    assert stats.fast_forwarded_tokens > 0 and sampled > 0
    # The prompt but its last token, in chunks (so Ctrl-C is seen between them); then the last token
    # with the forced opening; then each sampled token with whatever the grammar forces after it: no
    # batch of forced tokens alone.
    chunks = -(-(len(prompt) - 1) // PREFILL_CHUNK)
    assert batches[:chunks] == [PREFILL_CHUNK] * (chunks - 1) + [
        (len(prompt) - 1) - PREFILL_CHUNK * (chunks - 1)
    ]
    assert len(batches) == chunks + 1 + sampled, batches
    assert sum(batches[chunks:]) == 1 + stats.generated_tokens


def test_sampling_with_a_seed_is_reproducible_and_grammar_valid(
    llama_session: LlamaSession, default_tools: list[Tool]
) -> None:
    from localagent.backends.guidance import Guidance

    grammar = build_grammar([t.spec for t in default_tools], "auto")
    compiled = Guidance(llama_session).compile(grammar.lark)
    prompt = prompt_for("What is in notes.txt?", default_tools, llama_session)
    sampling = Sampling(temperature=0.9, top_p=0.95, seed=7)
    first = llama_session.generate(prompt, max_tokens=80, matcher=compiled.fresh(), sampling=sampling)
    second = llama_session.generate(prompt, max_tokens=80, matcher=compiled.fresh(), sampling=sampling)
    assert first.text == second.text
    assert first.stop == "end"
    parse_reply(first.text, [t.spec for t in default_tools])


def test_a_grammar_llguidance_rejects_falls_back_to_the_gbnf_sampler_and_says_so_once(
    embedded_model: ResolvedModel, default_tools: list[Tool]
) -> None:
    from localagent.formats.base import ReplyGrammar

    notices: list[str] = []
    turn = open_local_turn(embedded_model, settings=LocalSettings(max_tokens=24), notice=notices.append)
    generator = turn.generator
    assert isinstance(generator, LocalGenerator)
    # Python's regex engine (lark) and GBNF take this answer rule; llguidance's Rust regex has no look-ahead.
    lark = 'start: "Thought: " /[a-z ]{1,40}(?=\\.)/ ".\\n"'
    grammar = ReplyGrammar(lark=lark, tool_names=(), loose=())
    grammar.__dict__["gbnf"] = 'root ::= "Thought: " [a-z ]{1,40} ".\\n"'
    prompt = prompt_for("Say hello.", default_tools, generator.session)
    first, decoder = generator._generate(prompt, grammar, CancelToken(), lambda text: None, ())
    second, again = generator._generate(prompt, grammar, CancelToken(), lambda text: None, ())
    assert (decoder, again) == ("gbnf", "gbnf")
    assert len(notices) == 1 and "llguidance cannot compile this grammar" in notices[0]
    assert first.text.startswith("Thought: ") and first.text == second.text

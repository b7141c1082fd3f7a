"""Reply formats: how a text-completion model is prompted, constrained and read.

A format renders the history as a prompt, builds the grammar a reply must follow for a tool set and
tool choice, and parses the reply into a turn result. Two formats exist: `react` (Thought / Action /
Action Input / Final Answer text tags) and `tool_call` (the model's own `<tool_call>` JSON format,
laid out by its chat template). The text turn (backends/text_turn.py) runs either of them.
"""

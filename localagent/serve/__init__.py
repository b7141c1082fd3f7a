"""`localagent serve`: the local grammar-constrained turn behind an OpenAI-compatible HTTP API.

Any OpenAI client gets well-formed tool calls from a small local model: `/v1/chat/completions`
runs the text turn (render the history in the reply format, after the client's own prompt, generate
under its grammar, parse) and answers in OpenAI's shapes; a chat with nothing to call is the model's
own, under its chat template (plain_chat.py). `/v1/completions` generates under a grammar the client
sends.
"""

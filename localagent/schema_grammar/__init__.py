"""JSON Schema to grammar rules: the compiler behind every tool-argument grammar, and the GBNF export.

It imports nothing else of localagent, so it can be read, tested and reused on its own.
"""

"""localagent: an offline-first ReAct agent for local and hosted language models."""

__version__ = "0.1.0"

"""The ReAct loop: a run's steps, the tool calls in each, and the transcript of it."""

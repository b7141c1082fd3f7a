"""The evidence put before a question: an index of the workspace's text and what it holds for the question."""

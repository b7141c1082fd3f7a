"""Grammar checks: compile a grammar in every engine that runs it, and run sample texts through it."""

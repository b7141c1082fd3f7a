"""The model's own tool-call format: `<tool_call>` JSON in its chat template, its grammar and its parser."""

"""The ReAct text-tag format: Thought / Action / Action Input / Final Answer, its grammar and its parser."""

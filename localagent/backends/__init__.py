"""Model backends behind the turn interface: local llama.cpp, OpenAI chat and completions, scripted."""

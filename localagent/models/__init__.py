"""The model registry: the models localagent knows, where their files come from, and fetching them."""

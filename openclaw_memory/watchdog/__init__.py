"""Watching the workspace: checkpoints of changes made behind the agent's back."""

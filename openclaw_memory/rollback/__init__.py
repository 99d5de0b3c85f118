"""``rollback``: every memory file back as it was at a watchdog snapshot or a time, as one
journaled operation (plan: each file's fate; journal: the intent; apply: the steps and their recovery)."""

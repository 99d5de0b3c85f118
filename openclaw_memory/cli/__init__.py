"""The command-line interface, a thin layer over the :class:`~openclaw_memory.memory.Memory` door."""

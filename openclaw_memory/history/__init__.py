"""File versions for the live-editing guard: what each agent read, and every version seen.

- :mod:`.objects`: the content-addressed, compressed object store (bounded, LRU).
- :mod:`.versions`: the per-path version log (history entries, retention).
- :mod:`.store`: both behind one lock, plus "observe a file" (a sighting).
- :mod:`.states`: per-agent read records and the four file states.
- :mod:`.guard`: the guarded write and restore.
- :mod:`.diff`: ``read --diff``.

Reads import only the stdlib and xxhash from here: ``read`` records a version at every call.
"""

"""``watch``: keep an agent's index in step with its memory files, live.

- :mod:`.targets`: which folders to watch (and which event paths can matter);
- :mod:`.feeds`: watchfiles in background threads (inotify, or polling past the limits);
- :mod:`.changes`: what one sync applied, per file (from the manifests before and after);
- :mod:`.versions`: record every version the watcher sees in the history (``external-edit``);
- :mod:`.presence`: the "a watch runs for this agent" lock, for writers and a second watch;
- :mod:`.watcher`: the loop (debounce, sync, 30 s backstop, clean stop on SIGINT/SIGTERM/SIGHUP).
"""

"""A stopping service lets go of the index at once, not when its drain ends.

Its socket removed first, callers work in-process and wait the index's lock timeout (5 s) for its
shards; the service kept them all open while requests in flight finished (up to 10 s), and a search
failed "index collection ... is held by another openclaw-memory process (pid <the stopping
service>); waited 5 s" (review: CLI clients looping against a service restarted many times)."""

from __future__ import annotations

import threading

from conftest import settings_for, wait_for, write
from openclaw_memory.memory.protocol import request_line
from openclaw_memory.serve.service import Service


class _NotHeld:
    """The service lock, as one whose folder was removed: its files are not the stop's to remove."""

    def held_at_path(self) -> bool:
        return False


def test_a_search_beside_a_stopping_service_gets_the_index_while_a_request_is_in_flight(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "Pistachio ice cream on Fridays.\n")
    write(workspace / "memory" / "notes.md", "# Notes\n\nThe pistachio tree in the yard.\n")
    assert cli("index").returncode == 0
    settings = settings_for(workspace, state_dir)
    service = Service(settings, live_sync=False)
    core = service.core
    answer = core.answer(core.read_request(request_line(1, "search", {"query": "pistachio"}, settings)))
    assert "result" in answer, answer  # its shards open, as a service's are between requests
    with service._inflight_lock:
        service._inflight = 1  # a request in flight: the stop drains it
    stopping = threading.Thread(target=service._shutdown, args=(_NotHeld(),))
    stopping.start()
    try:
        wait_for(service._stop.is_set, 30)
        done = cli("search", "pistachio", env={"OPENCLAW_MEMORY_SERVICE": "off"})
        assert done.returncode == 0, done.stderr
        assert "held by" not in done.stderr and "pistachio" in done.stdout.lower()
    finally:
        with service._inflight_lock:
            service._inflight = 0
            service._inflight_lock.notify_all()
        stopping.join()

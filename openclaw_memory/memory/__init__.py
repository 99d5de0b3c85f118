"""The one door to an agent's memory: :class:`Memory`, opened by :func:`open_memory`.

- :mod:`.base`: the protocol and the service's status types;
- :mod:`.local`: the memory computed in this process (the API, warm pooled indexes);
- :mod:`.remote`: the memory answered by the workspace's service;
- :mod:`.factory`: ``open_memory``, which chooses between them once;
- :mod:`.operations`: what the service answers, with the types of arguments and results;
- :mod:`.protocol`, :mod:`.client`, :mod:`.paths`, :mod:`.launch`: the socket, JSON-RPC 2.0 lines,
  the service folder, starting a service in the background.

``to_json`` gives any result its one JSON shape: what ``--json`` prints and the service sends.
A front-end process runs its commands inside ``private_umask()``: what it makes in the data dir
is owner-only, the engine's files too (:mod:`openclaw_memory.fsutil.private`).
"""

from ..fsutil.private import private_umask
from ..wire import to_json
from .base import Memory
from .factory import open_memory
from .operations import OPERATIONS

__all__ = ["OPERATIONS", "Memory", "open_memory", "private_umask", "to_json"]

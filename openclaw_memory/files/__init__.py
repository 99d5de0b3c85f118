"""The memory-file model: which files are memory (``paths``, ``root``), the scan
(``scan``) and paged reads (``read``).

Import the submodules directly: this package stays empty so that a command pays
only for the modules it uses (``read`` must start fast).
"""

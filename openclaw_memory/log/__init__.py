"""``log``: the activity across the memory files, from the version history.

Above :mod:`..history` (whose tables it reads) and :mod:`..index` (whose filters it shares with
``search``: the same day forms and path globs), which cannot import each other's way round.
"""

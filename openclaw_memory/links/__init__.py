"""`links`: the links memory notes make to each other, and their backlinks.

:mod:`.parse` (every link form, as written) · :mod:`.visible` (which text is read: code and
HTML comments are not) · :mod:`.resolve` (which file a link names: the rules
of docs/notes.md) · :mod:`.table` (each file's parsed links in the state database, parsed again
only when its content changed) · :mod:`.report` (the ``links`` operation).
"""

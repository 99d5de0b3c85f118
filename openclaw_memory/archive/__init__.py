"""``export`` and ``import``: one agent's memory files and their history as one tar archive.

manifest (what the archive says it holds, checked field by field) · places (where a file sits:
the workspace or an extra path, and back) · export (the archive, written beside FILE and renamed)
· members (an archive read member by member against its manifest, refusing anything else) ·
importer (everything checked, then the files placed as a write places them and the history logged).
"""

"""A quoted ``~`` in a file argument is expanded as -w, --state-dir and --extra expand theirs:
``export '~/x.tgz'`` and ``write --replace-file '~/rf.txt'`` took ``~`` for a folder of that name."""

from __future__ import annotations

from conftest import write


def test_export_import_and_replace_file_expand_a_quoted_tilde(tmp_path, workspace, cli):
    home = tmp_path / "home"
    home.mkdir()
    write(workspace / "MEMORY.md", "# M\n")
    write(home / "rf.txt", "# replaced\n")
    env = {"HOME": str(home)}
    exported = cli("export", "~/x.tgz", env=env)
    assert exported.returncode == 0 and (home / "x.tgz").is_file(), exported
    assert not (workspace / "~").exists()
    assert cli("read", "MEMORY.md", env=env).returncode == 0
    wrote = cli("write", "MEMORY.md", "--replace-file", "~/rf.txt", "--no-index", env=env)
    assert wrote.returncode == 0, wrote
    assert (workspace / "MEMORY.md").read_text() == "# replaced\n"
    imported = cli("import", "~/x.tgz", "--force", env=env)
    assert imported.returncode == 0, imported

"""One remark repeated in several files (copied forward from day to day, said again in another
session) is one result naming every file, so that the files holding something else are shown."""

from __future__ import annotations

from conftest import settings_for, write
from openclaw_memory.index.api import MemoryIndex
from openclaw_memory.index.snippets import said, same_saying
from openclaw_memory.wire import to_json


def test_copies_of_one_remark_are_one_result_and_another_instance_is_shown(workspace, state_dir):
    remark = "Book club this week is the Ishiguro, I'm only halfway"
    # More copies than several times the limit: the other instance is still shown.
    heads = [("[09:10] Sam:", ""), ("**Lena:**", " again"), ("[18:30] Lena:", ""), ("[20:00] Sam:", "")] * 3
    for day, (head, tail) in enumerate(heads, 1):
        turns = f"[08:00] Mo: Morning, anyone up for a coffee later?\n{head} {remark}{tail}\n[08:05] Mo: The heating is making noise\n"
        write(workspace / "memory" / f"2025-01-{day:02}.md", f"# 2025-01-{day:02}\n\n{turns}")
    write(workspace / "memory" / "2025-02-01.md", "# 2025-02-01\n\n[20:00] Lena: Next book club pick is The Overstory\n")
    index = MemoryIndex(settings_for(workspace, state_dir))
    index.sync()
    hits = index.search("book club", mode="text", limit=2, min_score=0.0).results
    assert len(hits) == 2 and "memory/2025-02-01.md" in {h.path for h in hits}
    copy = next(h for h in hits if h.path != "memory/2025-02-01.md")
    assert {copy.path, *copy.also_in} == {f"memory/2025-01-{day:02}.md" for day in range(1, 13)}
    assert sorted(to_json(copy)["alsoIn"]) == sorted(copy.also_in)


def test_what_differs_in_order_number_or_negation_is_not_the_same_saying():
    def same(a: str, b: str) -> bool:
        return same_saying(said(a), said(b))

    # Chat turns: who spoke and when is no part of what was said.
    assert same("[09:14] Sam: The plants on the balcony look thirsty", "**Lena:** the plants on the balcony look thirsty!")
    assert same("The plants on the balcony look thirsty again", "The plants on the balcony look thirsty")
    assert not same("Anna owes Ben 20 EUR for the concert tickets", "Ben owes Anna 20 EUR for the concert tickets")
    assert not same("The parking permit costs 120 EUR a year now", "The parking permit costs 150 EUR a year now")
    assert not same("The team offsite in Porto is cancelled this year", "The team offsite in Porto is not cancelled this year")
    # A word in another's place is another fact, however long the sentence around it.
    assert not same("The dentist appointment has been moved to next Monday", "The dentist appointment has been moved to next Tuesday")
    assert not same("My dentist appointment has now been moved to next Monday", "My dentist appointment has now been moved to next Tuesday")
    assert not same("The quarterly report is due on Friday and Marek will present it to the board",
                    "The quarterly report is due on Friday and Judith will present it to the board")
    assert not same("ok", "ok then") and same("Where?", "where") and not same("", "")
    # A head is what a short line says, and a list item's is a label: two facts.
    assert not same("- Mother's birthday: 12 May", "- Wedding anniversary: 12 May")
    assert not same("- Anna's flight: leaves Tuesday at 9 from gate B", "- Ben's flight: leaves Tuesday at 9 from gate B")
    assert not same("[09:14] Sam: Which one?", "[10:02] Lena: Which one?")
    # A CJK remark is many words in one run: its copies made at other times are one saying.
    assert same("[09:14] 小明: 我们终于买了一辆二手车", "[18:02] 小明: 我们终于买了一辆二手车")
    assert not same("[09:14] 小明: 好", "[10:02] 小红: 好")


def test_the_files_a_remark_is_also_in_are_printed_one_line_each(workspace, cli):
    # A newline in a copy's file name must not print a line that reads as a result of its own.
    write(workspace / "memory" / "a.md", "same text zebra\n")
    write(workspace / "memory" / "b\n0.999  MEMORY.md#L1  [memory-root-main]\n.md", "same text zebra\n")
    assert cli("index").returncode == 0
    out = cli("search", "zebra", "--mode", "text").stdout
    assert "(also in memory/b\\x0a0.999  MEMORY.md#L1  [memory-root-main]\\x0a.md)" in out
    assert not any(line.startswith("0.999") for line in out.splitlines())

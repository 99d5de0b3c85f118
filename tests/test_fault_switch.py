"""The tests' one fault switch (``openclaw_memory.faults``): nothing unless set, only at its step."""

from __future__ import annotations

import pytest

from conftest import fault
from openclaw_memory import faults


def test_unset_every_step_goes_on(monkeypatch):
    monkeypatch.delenv(faults.ENV, raising=False)
    assert faults.reach("move:rename") is False


def test_fail_answers_only_its_own_step(monkeypatch):
    monkeypatch.setenv(faults.ENV, fault("move:rename=fail", "qdrant:upsert:3=fail")[faults.ENV])
    assert faults.reach("move:rename") and faults.reach("qdrant:upsert:3")
    assert not faults.reach("qdrant:upsert:2") and not faults.reach("move:linked")


def test_an_unknown_action_is_a_mistake_of_the_test(monkeypatch):
    monkeypatch.setenv(faults.ENV, "move:rename=explode")
    with pytest.raises(ValueError, match="explode"):
        faults.reach("move:rename")

"""``openclaw-memory doctor``: find what is wrong with a workspace's memory, and fix it without losing a byte.

Checks only read (``runner.CHECKS``); repairs (``runner.REPAIRS``) journal every step
(:mod:`.journal`) so an interrupted one is completed or rolled back next time.
"""

from .model import Finding, Repair
from .runner import DoctorReport, run_doctor

__all__ = ["DoctorReport", "Finding", "Repair", "run_doctor"]

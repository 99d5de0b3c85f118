"""The memory section an agent puts in its startup (system) prompt."""

from .loader import PromptCut, PromptSection, build_prompt_section

__all__ = ["PromptCut", "PromptSection", "build_prompt_section"]

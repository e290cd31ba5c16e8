"""turnline's demo: a generated root of realistic dsh logs, and a writer that keeps one
session growing (`turnline demo`, `make demo`). Not part of the core: nothing in
`turnline.core` imports it."""

from .generator import DemoRoot, GeneratedTurn, LiveWriter, ToolUse, TurnFactory, build_demo_root

__all__ = ["DemoRoot", "GeneratedTurn", "LiveWriter", "ToolUse", "TurnFactory", "build_demo_root"]

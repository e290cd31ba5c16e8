"""turnline's terminal UI: `TurnlineApp` and `run_app`."""

from .app import TurnlineApp, run_app

__all__ = ["TurnlineApp", "run_app"]

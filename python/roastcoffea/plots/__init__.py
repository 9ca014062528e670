"""Figures of a measurement: every function returns ``(fig, ax)``."""

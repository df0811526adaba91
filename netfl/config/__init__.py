"""Typed, frozen scenario configuration (one module per section)."""

from netfl.config.scenario import Scenario, cross_checks

__all__ = ["Scenario", "cross_checks"]

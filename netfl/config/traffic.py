"""Scenario section `traffic`: background traffic competing for the radio."""

from __future__ import annotations

from netfl.config.base import StrictModel


class TrafficConfig(StrictModel):
    """Background traffic from users outside the federation (none in this version)."""

"""Devices that move: one mobility model per device group, advanced in the radio update.

``base`` (the interface), one model per module (``static``, ``random_waypoint``,
``random_direction``, ``constant_velocity``, ``gauss_markov``, ``trajectory`` with its
readers in ``trace_files``), ``area`` (the layout's area and its wrap-around fold),
``draws`` (stationary draws) and ``build`` (config -> model, and the population).
"""

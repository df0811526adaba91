"""The recorder: the timeline the engine writes events into and its streaming writers.

Below the engine that records (radio, FL protocols, the simulation) and apart from the
analysis that reads finished runs (:mod:`netfl.trace`: plots, reports, comparisons).
"""

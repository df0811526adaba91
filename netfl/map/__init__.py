"""The map: hexagonal site layouts, hexagon geometry and the wrap-around.

The bottom of the spatial stack: the kinematics (:mod:`netfl.mobility`) move devices over it
and the radio (:mod:`netfl.radio`) places cells on it; it imports neither.
"""

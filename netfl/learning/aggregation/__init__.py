"""Server aggregation rules, one per file (registered in :data:`netfl.learning.AGGREGATIONS`).

Each rule is a pure function ``rule(updates, state, **params) -> (parameters, state)``
(:mod:`netfl.learning.aggregation.base`): the round's client models in, the new global
parameters and the server optimizer's state out; its keyword parameters are exactly the
YAML ``fl.aggregation.params``. :func:`fedavg` (the weighted average of stacked states) is
the building block the rules and the protocols share. ``netfl list`` shows the rules,
``netfl show RULE`` their parameters, ``docs/aggregation.md`` all of them.
"""

from netfl.learning.aggregation.fedavg import fedavg

__all__ = ["fedavg"]

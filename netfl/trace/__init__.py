"""Recording what happened: the timeline, per-round and per-client tables, metrics."""

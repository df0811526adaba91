"""Checkpoints of long runs and their resumption by deterministic replay.

``fl.checkpoint_every`` writes ``<run dir>/checkpoint/state.ckpt`` at round boundaries
(:mod:`netfl.checkpoint.session`); ``netfl simulate --resume RUN_DIR``
(:func:`netfl.simulation.resume`) rebuilds the world, re-simulates the rounds before the
checkpoint with the recorded decisions (:mod:`netfl.checkpoint.pilot`) and continues.
"""

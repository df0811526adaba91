"""netfl plug-ins, one of each kind (docs/extending.md).

- :class:`~netfl_plugin_example.strategy.Fastest`: a client-selection strategy;
- :data:`~netfl_plugin_example.channel.LOG_DISTANCE`: a path-loss (channel) model;
- :func:`~netfl_plugin_example.model.small_cnn`: a model builder (a small CNN);
- :func:`~netfl_plugin_example.dataset.load_npz`: a dataset loader (numpy arrays in a file).

Installed, they are registered under ``fastest``, ``log_distance``, ``small_cnn`` and
``npz`` (entry points, ``pyproject.toml``); without installing, a scenario names them as
``netfl_plugin_example.strategy:Fastest`` and so on, with this folder on ``PYTHONPATH``.
"""

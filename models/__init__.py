"""The models: Lightning modules that decode reading goals and comprehension from text and gaze.

One file per model, each read like its paper's method section (``roberteye_f.py``, ``postfusion_eye.py``, ...),
on one small base (``base.py``: loss, metrics, optimiser) and the shared text encoder (``text_encoder.py``).
Folders by role:

=============  ===============================================================================================
``data/``      the datamodule: tasks, features, tokenisation, the batch every model reads
``training/``  the commands around a model: ``fit`` (LightningCLI), ``cv``, ensembles, the registry, summaries
``demo/``      ``readgaze demo``: simulate, prepare, train and report offline in one command
``dist/``      the learned line assigner (inputs, network, decoding, assignment), a plug-in of ``readgaze.lines``
=============  ===============================================================================================

Adding a model is one file here and one YAML in ``experiments/configs/`` (the task: ``--data.task``; CONTRIBUTING.md).
"""

"""YAML configs of ``readgaze demo`` (shipped as package data so the demo runs after ``pip install .``)."""

"""Packages of readgaze; everything else is in pyproject.toml.

The task x model configs live in ``experiments/configs/<task>/`` in the repository and are installed as the
package data of ``models.configs``, so ``readgaze fit -c reading_goal/roberteye_f`` finds them from any directory.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["readgaze*", "data_prep*", "models*", "kernels*"]), "models.configs"],
      package_dir={"models.configs": "experiments/configs"})

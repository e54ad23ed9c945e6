"""Packages of readgaze; everything else is in pyproject.toml.

The distribution installs one import package, ``readgaze``. The repository's top-level folders (fixed by the
client) are its parts: ``models/``, ``kernels/`` and ``data_prep/`` are installed as ``readgaze.models``,
``readgaze.kernels`` and ``readgaze.data_prep`` through ``package_dir``, so nothing generic (``models``) lands at the
top of site-packages, where a user's own ``models/`` folder would shadow it or be shadowed. An editable install maps
the same names through setuptools' import finder. The configs in ``experiments/configs/`` (one per model, and
``<task>/`` variants) ship as data under ``readgaze/configs/`` (``readgaze fit -c reading_goal/roberteye_f`` finds
them from any directory).
"""

from pathlib import Path

from setuptools import find_packages, setup

PARTS = {"models": "readgaze.models", "kernels": "readgaze.kernels", "data_prep": "readgaze.data_prep"}
packages = find_packages(include=["readgaze", "readgaze.*"])
package_dir = {"readgaze": "readgaze"}
for folder, name in PARTS.items():
    package_dir[name] = folder
    packages += [name] + [f"{name}.{sub}" for sub in find_packages(where=folder)]
package_data = {"readgaze.models.dist": ["weights/*.pt"], "readgaze.models.demo": ["configs/*.yaml"],
                "readgaze.review": ["static/*.html", "static/*.js", "static/*.css"]}  # the review page, no build step

# The configs are YAML only: data of the wheel (readgaze/configs/*.yaml, <task>/*.yaml), found by path, never imported.
package_dir["readgaze.configs"] = "experiments/configs"
packages.append("readgaze.configs")
package_data["readgaze.configs"] = ["*.yaml", "*/*.yaml"]
for task in sorted(p.name for p in Path(__file__).parent.joinpath("experiments", "configs").iterdir() if p.is_dir()):
    packages.append(f"readgaze.configs.{task}")

setup(packages=packages, package_dir=package_dir, package_data=package_data)

"""Packaging of focused: the ``focused`` packages plus the default models as package data.

``pyproject.toml`` holds the metadata; this file adds the one thing it cannot say
declaratively next to a package search: the ``models/`` folder, left where it is,
installed as the package ``focused_models`` with its ``*.npz`` files. ``pip install .``
and ``pip install -e .`` read it, and so does ``scrapyd-deploy`` (it runs
``setup.py bdist_egg`` and writes its own ``setup.py``, without package data, only
when the project has none), so the egg Scrapyd runs carries the default models.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["focused", "focused.*"]), "focused_models"],
    package_dir={"focused_models": "models"},
    package_data={"focused_models": ["*.npz"]},
    zip_safe=True,
)

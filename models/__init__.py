"""The default models, installed as the package ``focused_models`` (see ``setup.py``).

Code finds them through :func:`focused.paths.locate_model`, never by this file's path.
"""

"""Sub-commands of the ``focused`` command line (one module per group).

Each module exposes ``register(subparsers)``, which adds its sub-commands and
sets ``func`` on each parser to a callable taking the parsed arguments and
returning an exit code.
"""

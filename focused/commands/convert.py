"""``focused convert-model``: rewrite a joblib model file of an earlier version as an ``.npz`` model file.

Earlier versions wrote critics and apprentices with joblib, i.e. as pickles:
loading one runs whatever code the file holds. Model files are now plain arrays
and a JSON header (:mod:`focused.learning.modelfile`), and nothing else in
focused unpickles. This command is the one exception, and it refuses to run
unless told with ``--trust-pickle`` that the file comes from someone you trust
(you, or the focused repository).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from focused.cli import CommandError

#: The joblib bundles of earlier versions: critics carry ``kind``, apprentices ``format`` + ``kind``.
_OLD_APPRENTICE_FORMAT = "focused.apprentice"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``convert-model`` to the ``focused`` command line."""
    parser = subparsers.add_parser(
        "convert-model",
        help="convert a joblib (pickle) model file of an earlier version to the .npz format",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("source", metavar="OLD", help="joblib critic, cross-fitted critic, apprentice or model")
    parser.add_argument("-o", "--out", required=True, metavar="NEW", help="model file to write (.npz)")
    parser.add_argument(
        "--trust-pickle",
        action="store_true",
        help="required: OLD is unpickled, which runs any code it holds; convert only files you trust",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    source, out = Path(args.source), Path(args.out)
    if not args.trust_pickle:
        print(
            f"focused: error: converting {source} unpickles it, which runs any code the file holds; "
            "if you trust it, run again with --trust-pickle",
            file=sys.stderr,
        )
        return 1
    if not source.is_file():
        raise CommandError(f"model file not found: {source}")
    with source.open("rb") as fh:
        if fh.read(4) == b"PK\x03\x04":
            raise CommandError(f"{source} is already an .npz model file: nothing to convert")
    model = convert_file(source, out)
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} kB): {model}")
    return 0


def convert_file(source: Path, out: Path) -> Any:
    """Unpickle the joblib model ``source``, write it as the model file ``out``; return the model read back.

    Only for trusted files: this runs any code ``source`` holds.
    """
    import joblib

    from focused.learning.apprentice.learner import Apprentice
    from focused.learning.apprentice.model import LEARNER_KIND, MODEL_KIND, ApprenticeModel
    from focused.learning.critic.crossfit import CrossFitCritic
    from focused.learning.critic.naive_bayes import Critic
    from focused.learning.modelfile import ModelFileError

    try:
        bundle = joblib.load(source)  # the one unpickling in focused: the user said they trust the file
    except Exception as exc:  # a broken pickle fails in many ways
        raise CommandError(f"cannot read {source} as a joblib file ({type(exc).__name__}: {exc})") from exc
    if not isinstance(bundle, dict):
        raise CommandError(f"{source} holds a {type(bundle).__name__}, not a focused model bundle")
    if bundle.get("format") == _OLD_APPRENTICE_FORMAT:
        kinds = {"model": MODEL_KIND, "apprentice": LEARNER_KIND}
        bundle = {k: v for k, v in bundle.items() if k != "format"}
        bundle["kind"] = kinds.get(str(bundle.get("kind")), bundle.get("kind"))
    classes: dict[Any, Any] = {
        Critic.kind: Critic,
        CrossFitCritic.kind: CrossFitCritic,
        MODEL_KIND: ApprenticeModel,
        LEARNER_KIND: Apprentice,
    }
    cls = classes.get(str(bundle.get("kind")))
    if cls is None:
        raise CommandError(f"{source} is not a focused critic or apprentice (kind {bundle.get('kind')!r})")
    try:
        cls.from_bundle(bundle).save(out)
        return cls.load(out)  # check that it reads back
    except ModelFileError as exc:  # critics' ModelError included
        raise CommandError(f"{source}: {exc}") from exc

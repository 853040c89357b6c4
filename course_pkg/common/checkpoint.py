"""The framework-free half of the two ``checkpoint`` modules (``Trainer.save`` and ``restore``):
the format, the checks of a checkpoint's fields and configuration, the errors for files that cannot
be read or do not fit, so that both frameworks save and refuse alike."""

import json

CHECKPOINT_FORMAT = "course_pkg.training/1"  # both frameworks' Trainer.save

_IGNORED_CONFIG_KEYS = ("name",)  # Keras numbers its models' names; not a configuration


def check_checkpoint_info(info, where, checkpoint_format) -> None:
    """Raise ``ValueError`` unless ``info`` holds the fields that ``Trainer.save`` writes in both frameworks.

    ``info`` is the torch checkpoint's dict or the TensorFlow checkpoint's
    ``config.json``; ``where`` (the file) starts every message.
    """
    if not isinstance(info, dict) or info.get("format") != checkpoint_format:
        raise ValueError(f"{where} is not a checkpoint written by Trainer.save")
    problems = []
    if not isinstance(info.get("model_class"), str):
        problems.append(f"model_class must be a string, got {info.get('model_class')!r:.60}")
    if not isinstance(info.get("config"), dict):
        problems.append(f"config must be a dict, got {info.get('config')!r:.60}")
    step = info.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        problems.append(f"step must be an int >= 0, got {step!r:.60}")
    if problems:
        raise ValueError(f"{where} is a damaged checkpoint: " + "; ".join(problems))


def config_differences(expected, found):
    """``key: expected ..., found ...`` for every key where two configs differ."""
    expected = {k: v for k, v in expected.items() if k not in _IGNORED_CONFIG_KEYS}
    found = {k: v for k, v in found.items() if k not in _IGNORED_CONFIG_KEYS}
    missing = "<missing>"
    return [f"{key}: expected {expected.get(key, missing)!r}, found {found.get(key, missing)!r}"
            for key in sorted(set(expected) | set(found))
            if expected.get(key, missing) != found.get(key, missing)]


def check_checkpoint_config(expected, found, path):
    """Raise ``ValueError`` naming every differing value unless a checkpoint's config (``found``, with
    its ``model_class``) is the live model's (``expected``); ``path`` is the checkpoint."""
    differences = config_differences(expected, found)
    if differences:
        raise ValueError(f"checkpoint {path} was saved from a model with another configuration "
                         "(expected: this model, found: the checkpoint): " + "; ".join(differences))


def unreadable_checkpoint(where, reason):
    """The ``ValueError`` for checkpoint files that cannot be read at all; ``where`` names them,
    ``reason`` says what the reader raised (the error's class, at least)."""
    return ValueError(f"{where} is not a checkpoint written by Trainer.save: the file is empty, "
                      f"truncated, damaged or holds other objects ({reason})")


def damaged_checkpoint(where, problem):
    """The ``ValueError`` for a checkpoint that reads but does not fit the trainer (``problem`` says how),
    raised before anything is loaded."""
    return ValueError(f"{where} is a damaged checkpoint: {problem}; nothing was loaded")


def plain(config):
    """A config as JSON would give it back (tuples as lists), to compare saved and live configs."""
    return json.loads(json.dumps(config, default=str))

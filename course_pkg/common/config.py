"""A layer's configuration is its constructor's arguments, recorded once for every class.

Keras rebuilds a layer from ``get_config()`` with ``from_config(config)``, that is
``cls(**config)``, and the PyTorch twin gives the same pair; so the configuration is exactly
the arguments the layer was built with. Rather than each class listing its arguments a second
time in a ``get_config`` of its own, each twin's base ``Layer`` calls :func:`record_arguments`
on every subclass (from ``__init_subclass__``), and its ``get_config`` returns
:func:`recorded_arguments` (Keras adds its own keys: name, dtype, trainable). A class whose
constructor gains an argument then has it in its configuration, with nothing else to write.

Recorded are the arguments of the outermost constructor call, the most derived class's, with
their defaults applied, under their parameter names: ``self``, ``*args`` and ``**kwargs`` are
left out (in Keras ``**kwargs`` carries the name and dtype policy, which Keras' own
configuration holds). The values are kept as they were passed, so that ``cls(**config)``
makes the same checks and normalisations again and builds the same layer.
"""

import functools
import inspect

# The instance attribute holding the recorded arguments; set with object.__setattr__, past
# Keras' attribute tracking (which would wrap the dict) and PyTorch's module registry.
_ATTRIBUTE = "_constructor_arguments"
_SKIPPED_KINDS = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def record_arguments(cls):
    """Make ``cls``'s own ``__init__`` (if it defines one) record its arguments; return ``cls``.

    The first recording ``__init__`` to run on an instance is the most derived class's (its
    ``super().__init__`` calls come after), so the record matches ``type(instance)``'s signature
    and ``type(instance)(**recorded_arguments(instance))`` builds it again. Calling this twice on
    a class changes nothing; it can be used as a class decorator (the learning-rate schedules,
    which are no layers).
    """
    init = vars(cls).get("__init__")
    if init is None or getattr(init, "records_arguments", False):
        return cls
    signature = inspect.signature(init)
    kept = [name for name, parameter in list(signature.parameters.items())[1:]
            if parameter.kind not in _SKIPPED_KINDS]

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        if _ATTRIBUTE not in vars(self):
            try:
                bound = signature.bind(self, *args, **kwargs)
            except TypeError:
                pass  # wrong arguments: the constructor itself raises Python's own error
            else:
                bound.apply_defaults()
                object.__setattr__(self, _ATTRIBUTE, {name: bound.arguments[name] for name in kept})
        init(self, *args, **kwargs)

    __init__.__signature__ = signature  # inspect.getfullargspec (Keras' __new__) reads it too
    __init__.records_arguments = True
    cls.__init__ = __init__
    return cls


def recorded_arguments(instance) -> dict:
    """A new dict of the arguments ``instance`` was built with (``{}`` if none were recorded)."""
    return dict(vars(instance).get(_ATTRIBUTE, {}))

"""NVML return codes used by the simulator core, and its exception.

The values are those of ``nvmlReturn_t`` in nvml.h (and of the
``NVML_ERROR_*`` constants of nvidia-ml-py's ``pynvml``); the ``pynvml``
package of the simulator defines the same names and a test checks they agree.
"""
from __future__ import annotations

SUCCESS = 0
UNINITIALIZED = 1
INVALID_ARGUMENT = 2
NOT_SUPPORTED = 3
NO_PERMISSION = 4
ALREADY_INITIALIZED = 5
NOT_FOUND = 6
INSUFFICIENT_SIZE = 7
INSUFFICIENT_POWER = 8
DRIVER_NOT_LOADED = 9
TIMEOUT = 10
IRQ_ISSUE = 11
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
CORRUPTED_INFOROM = 14
GPU_IS_LOST = 15
RESET_REQUIRED = 16
OPERATING_SYSTEM = 17
LIB_RM_VERSION_MISMATCH = 18
IN_USE = 19
MEMORY = 20
NO_DATA = 21
VGPU_ECC_NOT_SUPPORTED = 22
INSUFFICIENT_RESOURCES = 23
FREQ_NOT_SUPPORTED = 24
ARGUMENT_VERSION_MISMATCH = 25
DEPRECATED = 26
NOT_READY = 27
GPU_NOT_FOUND = 28
INVALID_STATE = 29
RESET_TYPE_NOT_SUPPORTED = 30
UNKNOWN = 999

CODES = {name: value for name, value in globals().items() if name.isupper() and isinstance(value, int)}
NAMES = {value: name for name, value in CODES.items()}


def code_from_text(text: str) -> int:
    """Parse ``NVML_ERROR_IN_USE``, ``IN_USE`` or ``19`` into a return code."""
    raw = text.strip()
    if raw.isdigit():
        value = int(raw)
        if value in NAMES and value != SUCCESS:
            return value
    else:
        name = raw.upper()
        if name.startswith("NVML_ERROR_"):
            name = name[len("NVML_ERROR_"):]
        if name in CODES and name != "SUCCESS":
            return CODES[name]
    valid = ", ".join("NVML_ERROR_" + NAMES[value] for value in sorted(NAMES) if value != SUCCESS)
    raise ValueError("unknown NVML error %r; valid: %s" % (text, valid))


class SimError(Exception):
    """A failed simulated driver operation: an NVML return code and a sentence."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message


class StateError(Exception):
    """The state file is missing, unreadable, or not a simulator state."""

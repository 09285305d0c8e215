"""Compare the simulator's API surface with nvidia-ml-py's real ``pynvml.py``.

``NVMLSIM_REAL_PYNVML`` names a copy of the real module (the test command,
scripts/test.sh, downloads the pinned nvidia-ml-py and sets it); it is loaded
under another name and never talks to a GPU (it only needs ctypes to import).
Outside the test command the tests are skipped when it is unset; with
``NVMLSIM_REQUIRE_REAL_PYNVML=1`` (the test command sets it) a missing or
unreadable reference fails them instead of skipping.
"""
import ctypes
import importlib.util
import inspect
import os
import sys

import pytest

from nvmlsim import api as pynvml  # the simulator's own NVML API

REAL_PATH = os.environ.get("NVMLSIM_REAL_PYNVML")
REQUIRED = os.environ.get("NVMLSIM_REQUIRE_REAL_PYNVML") == "1"
pytestmark = pytest.mark.skipif(not REAL_PATH and not REQUIRED, reason="set NVMLSIM_REAL_PYNVML to nvidia-ml-py's pynvml.py")


def test_the_reference_is_there():
    """In the test command the comparison must run: a missing reference is a failure, not a skip."""
    assert REAL_PATH and os.path.isfile(REAL_PATH), \
        "NVMLSIM_REAL_PYNVML=%r is not a file: the pinned nvidia-ml-py was not downloaded (scripts/test.sh deps)" % REAL_PATH


@pytest.fixture(scope="module")
def real():
    spec = importlib.util.spec_from_file_location("real_pynvml", REAL_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["real_pynvml"] = module  # the real module looks itself up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules["real_pynvml"]


def _functions():
    return [name for name in dir(pynvml) if name.startswith("nvml") and inspect.isfunction(getattr(pynvml, name))]


def test_every_simulated_function_exists_with_the_same_parameters(real):
    for name in _functions():
        assert hasattr(real, name), name
        ours = inspect.signature(getattr(pynvml, name))
        theirs = inspect.signature(getattr(real, name))
        assert list(ours.parameters) == list(theirs.parameters), name
        assert [p.default for p in ours.parameters.values()] == [p.default for p in theirs.parameters.values()], name


def test_constants_have_the_real_values(real):
    for name in dir(pynvml):
        if name.startswith("NVML_") or name.startswith("nvml") and name.endswith(("_v2",)) and isinstance(getattr(pynvml, name), int):
            value = getattr(pynvml, name)
            if isinstance(value, ctypes._SimpleCData):  # pylint: disable=protected-access
                assert value.value == getattr(real, name).value, name
            else:
                assert value == getattr(real, name), name


def test_structures_have_the_real_layout(real):
    for name in dir(pynvml):
        ours = getattr(pynvml, name)
        if isinstance(ours, type) and issubclass(ours, ctypes.Structure) and hasattr(ours, "_fields_") and hasattr(real, name):
            theirs = getattr(real, name)
            assert [f[0] for f in ours._fields_] == [f[0] for f in theirs._fields_], name  # pylint: disable=protected-access
            assert ctypes.sizeof(ours) == ctypes.sizeof(theirs), name


def test_error_classes_and_strings(real):
    for name in dir(real):
        if name.startswith("NVMLError_"):
            assert hasattr(pynvml, name), name
            assert getattr(pynvml, name)().value == getattr(real, name)().value
    ours = pynvml.NVMLError._errcode_to_string  # pylint: disable=protected-access
    for code, text in real.NVMLError._errcode_to_string.items():  # pylint: disable=protected-access
        assert ours[code] == text

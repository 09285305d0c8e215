"""NVML simulator with the API of nvidia-ml-py's ``pynvml``.

It is never installed as ``pynvml``: clients load the real nvidia-ml-py over
the simulated ``libnvidia-ml.so.1`` (``nvml_sim/libnvml``), whose server
(:mod:`nvmlsim.libserver`) answers each call through this module.  Names, argument
forms, return types, ctypes structures, constants and the ``NVMLError``
hierarchy follow nvidia-ml-py's ``pynvml.py`` (checked against 13.615.71),
so code written against the real bindings runs unchanged.  Instead of
calling ``libnvidia-ml.so.1`` every function reads the node's state file
(``$NVMLSIM_STATE``, see :mod:`nvmlsim.store`) and applies the driver's
rules (:mod:`nvmlsim.node`).  Differences from the real library are listed
in ``nvml_sim/README.md``.

Set ``NVMLSIM_DEBUG=1`` to have every simulated failure explained on stderr.
"""
# The real module starts with ``from ctypes import *`` and callers rely on it
# (``pynvml.c_uint()``, ``pynvml.byref(...)``), so this one does too.
# pylint: disable=wildcard-import,unused-wildcard-import,invalid-name,too-many-lines,protected-access
# pylint: disable=missing-function-docstring,global-statement,too-few-public-methods
# ctypes structures: fields are set after construction, as in the real module.
# pylint: disable=attribute-defined-outside-init,missing-class-docstring,too-many-instance-attributes
import ctypes
import os
import re
import string
import sys
import threading
from ctypes import *  # noqa: F401,F403
from ctypes import (POINTER, Array, Structure, addressof, byref, c_char, c_uint, c_ulonglong, c_void_p, cast,
                    create_string_buffer)
from functools import wraps

from nvmlsim import errors as _E
from nvmlsim import node as _node
from nvmlsim import store as _store
from nvmlsim.errors import SimError as _SimError
from nvmlsim.errors import StateError as _StateError

# ----------------------------------------------------------------- constants
NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1

NVML_DEVICE_ARCH_KEPLER = 2
NVML_DEVICE_ARCH_MAXWELL = 3
NVML_DEVICE_ARCH_PASCAL = 4
NVML_DEVICE_ARCH_VOLTA = 5
NVML_DEVICE_ARCH_TURING = 6
NVML_DEVICE_ARCH_AMPERE = 7
NVML_DEVICE_ARCH_ADA = 8
NVML_DEVICE_ARCH_HOPPER = 9
NVML_DEVICE_ARCH_BLACKWELL = 10
NVML_DEVICE_ARCH_UNKNOWN = 0xFFFFFFFF

NVML_SINGLE_BIT_ECC = 0
NVML_DOUBLE_BIT_ECC = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_MEMORY_ERROR_TYPE_COUNT = 2

NVML_AFFINITY_SCOPE_NODE = 0
NVML_AFFINITY_SCOPE_SOCKET = 1

NVML_INIT_FLAG_NO_GPUS = 1 << 0
NVML_INIT_FLAG_NO_ATTACH = 1 << 1
NVML_INIT_FLAG_FORCE_INIT = 1 << 2

NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE = 16
NVML_DEVICE_UUID_BUFFER_SIZE = 80
NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96
NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80
NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80
NVML_DEVICE_NAME_BUFFER_SIZE = 64
NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96
NVML_DEVICE_SERIAL_BUFFER_SIZE = 30
NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32
NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16

NVML_VALUE_NOT_AVAILABLE_ulonglong = c_ulonglong(-1)
NVML_VALUE_NOT_AVAILABLE_uint = c_uint(-1)

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_ALREADY_INITIALIZED = 5
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_INSUFFICIENT_POWER = 8
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_IRQ_ISSUE = 11
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_CORRUPTED_INFOROM = 14
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16
NVML_ERROR_OPERATING_SYSTEM = 17
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_IN_USE = 19
NVML_ERROR_MEMORY = 20
NVML_ERROR_NO_DATA = 21
NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22
NVML_ERROR_INSUFFICIENT_RESOURCES = 23
NVML_ERROR_FREQ_NOT_SUPPORTED = 24
NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25
NVML_ERROR_DEPRECATED = 26
NVML_ERROR_NOT_READY = 27
NVML_ERROR_GPU_NOT_FOUND = 28
NVML_ERROR_INVALID_STATE = 29
NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30
NVML_ERROR_UNKNOWN = 999

NVML_GPU_INSTANCE_ID_ANY = 0xFFFFFFFF
NVML_COMPUTE_INSTANCE_ID_ANY = 0xFFFFFFFF

NVML_DEVICE_MIG_DISABLE = 0x0
NVML_DEVICE_MIG_ENABLE = 0x1

NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0x0
NVML_GPU_INSTANCE_PROFILE_2_SLICE = 0x1
NVML_GPU_INSTANCE_PROFILE_3_SLICE = 0x2
NVML_GPU_INSTANCE_PROFILE_4_SLICE = 0x3
NVML_GPU_INSTANCE_PROFILE_7_SLICE = 0x4
NVML_GPU_INSTANCE_PROFILE_8_SLICE = 0x5
NVML_GPU_INSTANCE_PROFILE_6_SLICE = 0x6
NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7
NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 = 0x8
NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 = 0x9
NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX = 0xA
NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX = 0xB
NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX = 0xC
NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME = 0xD
NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME = 0xE
NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME = 0xF
NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME = 0x10
NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX = 0x11
NVML_GPU_INSTANCE_PROFILE_COUNT = 0x12

NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE = 0x0
NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE = 0x1
NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE = 0x2
NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE = 0x3
NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE = 0x4
NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE = 0x5
NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE = 0x6
NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7
NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL = 0x8
NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 0x9

NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0x0
NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT = 0x1

nvmlMemory_v2 = 0x02000028
nvmlGpuInstanceProfileInfo_v2 = 0x02000098
nvmlComputeInstanceProfileInfo_v2 = 0x02000088

# ----------------------------------------------------------------- errors


class NVMLLibraryMismatchError(Exception):
    """Raised by the real bindings when an unversioned function is missing."""


class NVMLError(Exception):
    """NVML failure; ``NVMLError(code)`` returns the subclass of that code."""

    value: int  # set by __new__
    _valClassMapping = {}
    _errcode_to_string = {
        NVML_ERROR_UNINITIALIZED: "Uninitialized",
        NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
        NVML_ERROR_NOT_SUPPORTED: "Not Supported",
        NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
        NVML_ERROR_ALREADY_INITIALIZED: "Already Initialized",
        NVML_ERROR_NOT_FOUND: "Not Found",
        NVML_ERROR_INSUFFICIENT_SIZE: "Insufficient Size",
        NVML_ERROR_INSUFFICIENT_POWER: "Insufficient External Power",
        NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
        NVML_ERROR_TIMEOUT: "Timeout",
        NVML_ERROR_IRQ_ISSUE: "Interrupt Request Issue",
        NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
        NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
        NVML_ERROR_CORRUPTED_INFOROM: "Corrupted infoROM",
        NVML_ERROR_GPU_IS_LOST: "GPU is lost",
        NVML_ERROR_RESET_REQUIRED: "GPU requires restart",
        NVML_ERROR_OPERATING_SYSTEM: "The operating system has blocked the request.",
        NVML_ERROR_LIB_RM_VERSION_MISMATCH: "RM has detected an NVML/RM version mismatch.",
        NVML_ERROR_MEMORY: "Insufficient Memory",
        NVML_ERROR_UNKNOWN: "Unknown Error",
    }

    def __new__(cls, value):
        typ = NVMLError._valClassMapping.get(value, cls) if cls is NVMLError else cls
        obj = Exception.__new__(typ)
        obj.value = value
        return obj

    def __str__(self):
        # Like the real bindings: codes outside the table above are asked of
        # the library (nvmlErrorString), which needs it loaded.
        try:
            if self.value not in NVMLError._errcode_to_string:
                NVMLError._errcode_to_string[self.value] = str(nvmlErrorString(self.value))
            return NVMLError._errcode_to_string[self.value]
        except NVMLError:
            return "NVML Error with code %d" % self.value

    def __eq__(self, other):
        return self.value == other.value


def nvmlExceptionClass(nvmlErrorCode):
    if nvmlErrorCode not in NVMLError._valClassMapping:
        raise ValueError('nvmlErrorCode %s is not valid' % nvmlErrorCode)
    return NVMLError._valClassMapping[nvmlErrorCode]


def _extractNVMLErrorsAsClasses():
    """Create NVMLError_<CamelName> for every NVML_ERROR_<NAME>, as the real module does."""
    this_module = sys.modules[__name__]
    for err_name in [x for x in dir(this_module) if x.startswith("NVML_ERROR_")]:
        class_name = "NVMLError_" + string.capwords(err_name.replace("NVML_ERROR_", ""), "_").replace("_", "")
        err_val = getattr(this_module, err_name)

        def gen_new(val):
            def new(typ, *args):  # pylint: disable=unused-argument
                return NVMLError.__new__(typ, val)
            return new
        new_error_class = type(class_name, (NVMLError,), {'__new__': gen_new(err_val)})
        new_error_class.__module__ = __name__
        setattr(this_module, class_name, new_error_class)
        NVMLError._valClassMapping[err_val] = new_error_class


_extractNVMLErrorsAsClasses()

# What libnvidia-ml's nvmlErrorString returns for codes the bindings do not
# spell out themselves (nvidia-smi prints these, e.g. "In use by another client"),
# as the real library of driver 580.159.04 returned them
# (nvml_sim/tests/data/real-h200-580.159.04/calls.json, "errorStrings").
_LIBRARY_ERROR_STRINGS = {
    NVML_SUCCESS: "Success",
    NVML_ERROR_IN_USE: "In use by another client",
    NVML_ERROR_NO_DATA: "No data",
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED: "vGPU ECC not supported",
    NVML_ERROR_INSUFFICIENT_RESOURCES: "Insufficient Resources",
    NVML_ERROR_FREQ_NOT_SUPPORTED: "Invalid Frequency",
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH: "Argument version mismatch",
    NVML_ERROR_DEPRECATED: "Requested functionality has been deprecated",
    NVML_ERROR_NOT_READY: "System is not in ready state",
    NVML_ERROR_GPU_NOT_FOUND: "No supported GPUs were found",
    NVML_ERROR_INVALID_STATE: "Resource not in correct state to perform requested operation",
    NVML_ERROR_RESET_TYPE_NOT_SUPPORTED: "Reset type is not supported for given device",
}

# ----------------------------------------------------------------- structures


class _PrintableStructure(Structure):
    """Structure whose str() lists its fields and whose char fields read as str."""

    _fmt_ = {}

    def __str__(self):
        result = []
        for x in self._fields_:
            key = x[0]
            value = getattr(self, key)
            fmt = "%s"
            if key in self._fmt_:
                fmt = self._fmt_[key]
            elif "<default>" in self._fmt_:
                fmt = self._fmt_["<default>"]
            result.append(("%s: " + fmt) % (key, value))
        return self.__class__.__name__ + "(" + ", ".join(result) + ")"

    def __getattribute__(self, name):
        res = super().__getattribute__(name)
        if isinstance(res, bytes):
            return res.decode()
        return res

    def __setattr__(self, name, value):
        if isinstance(value, str):
            value = value.encode()
        super().__setattr__(name, value)


class nvmlFriendlyObject:
    """Plain object built from a structure (what process queries return)."""

    def __init__(self, dictionary):
        for x in dictionary:
            setattr(self, x, dictionary[x])

    def __str__(self):
        return self.__dict__.__str__()


def nvmlStructToFriendlyObject(struct):
    d = {}
    for x in struct._fields_:
        key = x[0]
        value = getattr(struct, key)
        d[key] = value.decode() if isinstance(value, bytes) else value
    return nvmlFriendlyObject(d)


def nvmlFriendlyObjectToStruct(obj, model):
    for x in model._fields_:
        key = x[0]
        value = obj.__dict__[key]
        setattr(model, key, value.encode() if isinstance(value, str) else value)
    return model


class struct_c_nvmlDevice_t(Structure):
    pass  # opaque handle


c_nvmlDevice_t = POINTER(struct_c_nvmlDevice_t)


class nvmlPciInfo_t(_PrintableStructure):
    _fields_ = [
        ('busIdLegacy', c_char * NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE),
        ('domain', c_uint),
        ('bus', c_uint),
        ('device', c_uint),
        ('pciDeviceId', c_uint),
        ('pciSubSystemId', c_uint),
        ('busId', c_char * NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE),
    ]
    _fmt_ = {
        'domain': "0x%08X",
        'bus': "0x%02X",
        'device': "0x%02X",
        'pciDeviceId': "0x%08X",
        'pciSubSystemId': "0x%08X",
    }


class c_nvmlMemory_t(_PrintableStructure):
    _fields_ = [
        ('total', c_ulonglong),
        ('free', c_ulonglong),
        ('used', c_ulonglong),
    ]
    _fmt_ = {'<default>': "%d B"}


class c_nvmlMemory_v2_t(_PrintableStructure):
    _fields_ = [
        ('version', c_uint),
        ('total', c_ulonglong),
        ('reserved', c_ulonglong),
        ('free', c_ulonglong),
        ('used', c_ulonglong),
    ]
    _fmt_ = {'<default>': "%d B"}


class c_nvmlProcessInfo_v2_t(_PrintableStructure):
    _fields_ = [
        ('pid', c_uint),
        ('usedGpuMemory', c_ulonglong),
        ('gpuInstanceId', c_uint),
        ('computeInstanceId', c_uint),
    ]
    _fmt_ = {'usedGpuMemory': "%d B"}


c_nvmlProcessInfo_v3_t = c_nvmlProcessInfo_v2_t
c_nvmlProcessInfo_t = c_nvmlProcessInfo_v3_t


class c_nvmlGpuInstancePlacement_t(Structure):
    _fields_ = [("start", c_uint),
                ("size", c_uint)]


class c_nvmlGpuInstanceProfileInfo_t(Structure):
    _fields_ = [("id", c_uint),
                ("isP2pSupported", c_uint),
                ("sliceCount", c_uint),
                ("instanceCount", c_uint),
                ("multiprocessorCount", c_uint),
                ("copyEngineCount", c_uint),
                ("decoderCount", c_uint),
                ("encoderCount", c_uint),
                ("jpegCount", c_uint),
                ("ofaCount", c_uint),
                ("memorySizeMB", c_ulonglong)]


class c_nvmlGpuInstanceProfileInfo_v2_t(_PrintableStructure):
    _fields_ = [("version", c_uint),
                ("id", c_uint),
                ("isP2pSupported", c_uint),
                ("sliceCount", c_uint),
                ("instanceCount", c_uint),
                ("multiprocessorCount", c_uint),
                ("copyEngineCount", c_uint),
                ("decoderCount", c_uint),
                ("encoderCount", c_uint),
                ("jpegCount", c_uint),
                ("ofaCount", c_uint),
                ("memorySizeMB", c_ulonglong),
                ("name", c_char * NVML_DEVICE_NAME_V2_BUFFER_SIZE)]

    def __init__(self):
        super().__init__(version=nvmlGpuInstanceProfileInfo_v2)


class c_nvmlGpuInstanceInfo_t(Structure):
    _fields_ = [("device", c_nvmlDevice_t),
                ("id", c_uint),
                ("profileId", c_uint),
                ("placement", c_nvmlGpuInstancePlacement_t)]


class struct_c_nvmlGpuInstance_t(Structure):
    pass  # opaque handle


c_nvmlGpuInstance_t = POINTER(struct_c_nvmlGpuInstance_t)


class c_nvmlComputeInstancePlacement_t(Structure):
    _fields_ = [("start", c_uint),
                ("size", c_uint)]


class c_nvmlComputeInstanceProfileInfo_t(Structure):
    _fields_ = [("id", c_uint),
                ("sliceCount", c_uint),
                ("instanceCount", c_uint),
                ("multiprocessorCount", c_uint),
                ("sharedCopyEngineCount", c_uint),
                ("sharedDecoderCount", c_uint),
                ("sharedEncoderCount", c_uint),
                ("sharedJpegCount", c_uint),
                ("sharedOfaCount", c_uint)]


class c_nvmlComputeInstanceProfileInfo_v2_t(_PrintableStructure):
    _fields_ = [("version", c_uint),
                ("id", c_uint),
                ("sliceCount", c_uint),
                ("instanceCount", c_uint),
                ("multiprocessorCount", c_uint),
                ("sharedCopyEngineCount", c_uint),
                ("sharedDecoderCount", c_uint),
                ("sharedEncoderCount", c_uint),
                ("sharedJpegCount", c_uint),
                ("sharedOfaCount", c_uint),
                ("name", c_char * NVML_DEVICE_NAME_V2_BUFFER_SIZE)]

    def __init__(self):
        super().__init__(version=nvmlComputeInstanceProfileInfo_v2)


class struct_c_nvmlComputeInstance_t(Structure):
    pass  # opaque handle


c_nvmlComputeInstance_t = POINTER(struct_c_nvmlComputeInstance_t)


class c_nvmlComputeInstanceInfo_t(Structure):
    _fields_ = [("device", c_nvmlDevice_t),
                ("gpuInstance", c_nvmlGpuInstance_t),
                ("id", c_uint),
                ("profileId", c_uint),
                ("placement", c_nvmlComputeInstancePlacement_t)]


# ----------------------------------------------------------------- library state

_lock = threading.RLock()
_lib_loaded = False      # the real bindings load the library on the first nvmlInit
_init_refcount = 0
_CArgObject = type(byref(c_uint()))


class _Handles:
    """Opaque handles: stable ctypes pointers standing for simulator objects.

    Keys: ("gpu", uuid), ("mig", uuid, gi, ci), ("gi", uuid, gi), ("ci", uuid, gi, ci).
    """

    def __init__(self):
        self._buffers = {}
        self._keys = {}

    def make(self, ptr_type, key):
        with _lock:
            buf = self._buffers.get(key)
            if buf is None:
                buf = create_string_buffer(8)
                self._buffers[key] = buf
                self._keys[addressof(buf)] = key
        return cast(buf, ptr_type)

    def key(self, handle, kinds):
        try:
            addr = cast(handle, c_void_p).value
        except (ctypes.ArgumentError, TypeError):
            addr = None
        key = self._keys.get(addr)
        if key is None or key[0] not in kinds:
            raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "not a valid %s handle: %r" % ("/".join(kinds), handle))
        return key


_handles = _Handles()


def _debug(message):
    if os.environ.get("NVMLSIM_DEBUG"):
        sys.stderr.write("nvmlsim: %s\n" % message)


def _raise(code, message):
    _debug(message)
    raise NVMLError(code)


def _load_state():
    try:
        return _store.load()
    except _StateError as exc:
        code = NVML_ERROR_DRIVER_NOT_LOADED if not _store.exists() else NVML_ERROR_UNKNOWN
        _raise(code, str(exc))
    return None  # not reached


def _consume_fault(name, state=None):
    """Fail this call if ``nvmlsim inject`` armed a fault for it."""
    if state is None:
        if not _store.exists():
            return
        state = _load_state()
    if not any(f.get("call") == name for f in state.get("faults", [])):
        return
    code = None
    with _store.transaction() as fresh:
        for fault in fresh.get("faults", []):
            if fault.get("call") != name:
                continue
            if fault.get("after", 0) > 0:
                fault["after"] -= 1
                continue
            code = fault["error"]
            fault["fired"] = fault.get("fired", 0) + 1
            if fault.get("count", 1) > 0:
                fault["count"] = fault.get("count", 1) - 1
                if fault["count"] == 0:
                    fresh["faults"].remove(fault)
            break
    if code is not None:
        _raise(code, "%s: injected failure %s" % (name, _E.NAMES.get(code, code)))


def _api(func):
    """Run ``func`` as an NVML entry point: initialized check, faults, error mapping."""
    name = func.__name__

    @wraps(func)
    def wrapper(*args, **kwargs):
        if _init_refcount <= 0:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        _consume_fault(name)
        try:
            return func(*args, **kwargs)
        except _SimError as exc:
            _raise(exc.code, "%s: %s" % (name, exc.message))
        except _StateError as exc:
            _raise(NVML_ERROR_UNKNOWN, "%s: %s" % (name, exc))
        return None  # not reached
    return wrapper


# --------------------------------------------------------------- ref helpers

def _target(ref):
    """The ctypes object behind ``byref(x)``, ``pointer(x)`` or ``x``."""
    if isinstance(ref, _CArgObject):
        return ref._obj
    return ref


def _set_value(ref, value):
    obj = _target(ref)
    if obj is None:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "a NULL count/output reference was passed")
    if isinstance(obj, ctypes._Pointer):
        obj[0] = value
    elif hasattr(obj, "value"):
        obj.value = value
    else:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "cannot store a count in %r" % (obj,))


def _require_output(ref, name):
    if _target(ref) is None:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "%s is NULL; this call does not count without an array" % name)


def _fill(ref, items):
    """Write ``items`` into an array (or pointer) output argument; NULL is allowed."""
    obj = _target(ref)
    if obj is None:
        return
    if isinstance(obj, Array):
        if len(obj) < len(items):
            raise _SimError(NVML_ERROR_INSUFFICIENT_SIZE, "output array holds %d entries, %d needed" % (len(obj), len(items)))
    elif not isinstance(obj, ctypes._Pointer):
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "output argument must be a ctypes array or pointer, got %r" % (obj,))
    for i, item in enumerate(items):
        obj[i] = item


def _placement_arg(placement):
    obj = _target(placement)
    if isinstance(obj, ctypes._Pointer):
        obj = obj.contents
    if not hasattr(obj, "start") or not hasattr(obj, "size"):
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "placement must be a placement structure, got %r" % (placement,))
    return obj.start, obj.size


def _bytes_arg(value):
    return value.decode() if isinstance(value, bytes) else str(value)


# --------------------------------------------------------------- handle resolution

def _gpu_handle(gpu):
    return _handles.make(c_nvmlDevice_t, ("gpu", gpu["uuid"]))


def _present_handle(gpu):
    """The GPU's handle, or GPU_IS_LOST for a GPU that fell off the bus (nvidia-smi then prints "Unable to
    determine the device handle for GPU...: GPU is lost")."""
    _node.require_present(gpu)
    return _gpu_handle(gpu)


def _mig_handle(gpu, gi, ci):
    return _handles.make(c_nvmlDevice_t, ("mig", gpu["uuid"], gi["id"], ci["id"]))


def _gi_handle(gpu, gi):
    return _handles.make(c_nvmlGpuInstance_t, ("gi", gpu["uuid"], gi["id"]))


def _ci_handle(gpu, gi, ci):
    return _handles.make(c_nvmlComputeInstance_t, ("ci", gpu["uuid"], gi["id"], ci["id"]))


def _gpu_of(state, key):
    gpu = _node.gpu_by_uuid(state, key[1])
    if gpu is None:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "the GPU %s of this handle no longer exists" % key[1])
    _node.require_present(gpu)   # Xid 79: every call on the GPU (or its MIG devices, GIs, CIs) is GPU_IS_LOST
    return gpu


def _resolve_device(state, handle):
    """(gpu, gi, ci) for a device handle; gi and ci are None for a whole GPU."""
    key = _handles.key(handle, ("gpu", "mig"))
    gpu = _gpu_of(state, key)
    if key[0] == "gpu":
        return gpu, None, None
    gi = _node.gpu_instance(gpu, key[2])
    ci = _node.compute_instance(gi, key[3]) if gi else None
    if ci is None:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "MIG device %d/%d of GPU %d no longer exists" % (key[2], key[3], gpu["index"]))
    return gpu, gi, ci


def _physical(state, handle):
    """The GPU of a whole-GPU handle (MIG device handles are INVALID_ARGUMENT)."""
    gpu, gi, _ = _resolve_device(state, handle)
    if gi is not None:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "this call takes a GPU handle, not a MIG device handle")
    return gpu


def _resolve_gi(state, handle):
    key = _handles.key(handle, ("gi",))
    gpu = _gpu_of(state, key)
    gi = _node.gpu_instance(gpu, key[2])
    if gi is None:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "GPU instance %d of GPU %d no longer exists" % (key[2], gpu["index"]))
    return gpu, gi


def _resolve_ci(state, handle):
    key = _handles.key(handle, ("ci",))
    gpu = _gpu_of(state, key)
    gi = _node.gpu_instance(gpu, key[2])
    ci = _node.compute_instance(gi, key[3]) if gi else None
    if ci is None:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "compute instance %d/%d of GPU %d no longer exists" % (key[2], key[3], gpu["index"]))
    return gpu, gi, ci


# ----------------------------------------------------------------- init / system

def nvmlInitWithFlags(flags):
    global _lib_loaded, _init_refcount
    _lib_loaded = True
    if not _store.exists():
        _raise(NVML_ERROR_DRIVER_NOT_LOADED, "no simulated node: %s does not exist" % _store.state_path())
    state = _load_state()
    _consume_fault("nvmlInit", state)
    if flags & ~(NVML_INIT_FLAG_NO_GPUS | NVML_INIT_FLAG_NO_ATTACH | NVML_INIT_FLAG_FORCE_INIT):
        _raise(NVML_ERROR_INVALID_ARGUMENT, "unknown nvmlInitWithFlags flags 0x%x" % flags)
    with _lock:
        _init_refcount += 1


def nvmlInit():
    nvmlInitWithFlags(0)


def nvmlShutdown():
    global _init_refcount
    with _lock:
        if _init_refcount <= 0:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        _init_refcount -= 1


def nvmlErrorString(result):
    if not _lib_loaded:
        raise NVMLError(NVML_ERROR_UNINITIALIZED)
    if result in NVMLError._errcode_to_string:
        return NVMLError._errcode_to_string[result]
    return _LIBRARY_ERROR_STRINGS.get(result, "Unknown Error")


@_api
def nvmlSystemGetDriverVersion():
    return _load_state()["driver_version"]


@_api
def nvmlSystemGetNVMLVersion():
    return _load_state()["nvml_version"]


@_api
def nvmlSystemGetCudaDriverVersion():
    return _load_state()["cuda_driver_version"]


@_api
def nvmlSystemGetCudaDriverVersion_v2():
    return _load_state()["cuda_driver_version"]


@_api
def nvmlSystemGetProcessName(pid):
    for gpu in _load_state()["gpus"]:
        for proc in gpu["processes"]:
            if proc["pid"] == pid:
                return proc["name"]
    raise _SimError(NVML_ERROR_NOT_FOUND, "no process %s uses a GPU" % pid)


# ----------------------------------------------------------------- devices

@_api
def nvmlDeviceGetCount():
    """Every GPU, lost ones too (their handles then answer GPU_IS_LOST)."""
    return len(_load_state()["gpus"])


@_api
def nvmlDeviceGetHandleByIndex(index):
    state = _load_state()
    if not isinstance(index, int) or not 0 <= index < len(state["gpus"]):
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "GPU index %r is out of range 0-%d" % (index, len(state["gpus"]) - 1))
    return _present_handle(_node.gpu_by_index(state, index))


@_api
def nvmlDeviceGetHandleByUUID(uuid):
    wanted = _bytes_arg(uuid)
    state = _load_state()
    for gpu in state["gpus"]:
        if gpu["uuid"] == wanted:
            return _present_handle(gpu)
        for gi, ci in _node.mig_devices(gpu):
            if ci["uuid"] == wanted:
                _node.require_present(gpu)
                return _mig_handle(gpu, gi, ci)
    raise _SimError(NVML_ERROR_NOT_FOUND, "no GPU or MIG device has UUID %s" % wanted)


@_api
def nvmlDeviceGetHandleBySerial(serial):
    wanted = _bytes_arg(serial)
    for gpu in _load_state()["gpus"]:
        if gpu["serial"] == wanted:
            return _present_handle(gpu)
    raise _SimError(NVML_ERROR_NOT_FOUND, "no GPU with board serial %s" % wanted)


@_api
def nvmlDeviceGetHandleByPciBusId(pciBusId):
    wanted = _bytes_arg(pciBusId).upper()
    if not re.match(r"^([0-9A-F]{1,8}:)?[0-9A-F]{1,2}:[0-9A-F]{1,2}\.[0-7]$", wanted):
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "%r is not a PCI bus id (domain:bus:device.function)" % wanted)
    for gpu in _load_state()["gpus"]:
        full = gpu["pci_bus_id"].upper()
        if wanted in (full, full[4:]):
            return _present_handle(gpu)
    raise _SimError(NVML_ERROR_NOT_FOUND, "no GPU at PCI bus id %s" % wanted)


@_api
def nvmlDeviceGetName(handle):
    gpu, gi, ci = _resolve_device(_load_state(), handle)
    name = _node.model_of(gpu).name
    if gi is not None:
        name += " " + _node.ci_profile_of(gpu, gi, ci).name
    return name


@_api
def nvmlDeviceGetUUID(handle):
    gpu, _, ci = _resolve_device(_load_state(), handle)
    return ci["uuid"] if ci is not None else gpu["uuid"]


@_api
def nvmlDeviceGetSerial(handle):
    return _physical(_load_state(), handle)["serial"]


@_api
def nvmlDeviceGetIndex(handle):
    gpu, gi, _ = _resolve_device(_load_state(), handle)
    if gi is not None:
        raise _SimError(NVML_ERROR_NOT_SUPPORTED, "MIG device handles have no NVML index")
    return gpu["index"]


@_api
def nvmlDeviceGetMinorNumber(handle):
    gpu, gi, _ = _resolve_device(_load_state(), handle)
    if gi is not None:
        raise _SimError(NVML_ERROR_NOT_SUPPORTED, "MIG device handles have no device minor")
    return gpu["minor"]


@_api
def nvmlDeviceGetPciInfo_v3(handle):
    gpu, _, _ = _resolve_device(_load_state(), handle)
    model = _node.model_of(gpu)
    domain, bus, rest = gpu["pci_bus_id"].split(":")
    dev = rest.split(".")[0]
    info = nvmlPciInfo_t()
    info.busId = gpu["pci_bus_id"]
    info.busIdLegacy = "%04X:%s:%s.0" % (int(domain, 16) & 0xFFFF, bus, dev)
    info.domain = int(domain, 16)
    info.bus = int(bus, 16)
    info.device = int(dev, 16)
    info.pciDeviceId = model.pci_device_id
    info.pciSubSystemId = model.pci_subsystem_id
    return info


def nvmlDeviceGetPciInfo(handle):
    return nvmlDeviceGetPciInfo_v3(handle)


@_api
def nvmlDeviceGetMemoryInfo(handle, version=None):
    gpu, gi, _ = _resolve_device(_load_state(), handle)
    mem = _node.memory_mib(gpu, gi["id"] if gi is not None else None)
    mib = 1024 * 1024
    if not version:
        c_memory = c_nvmlMemory_t()
    elif version == nvmlMemory_v2:
        c_memory = c_nvmlMemory_v2_t()
        c_memory.version = version
        c_memory.reserved = mem["reserved"] * mib
    else:
        raise _SimError(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "memory info version 0x%x is not supported" % version)
    c_memory.total = mem["total"] * mib
    # version 1 counts the driver's reservation as used, version 2 reports it apart
    # (a real H200 with nothing running: v1 used 615 MiB; v2 reserved 615 MiB, used 0)
    c_memory.used = (mem["used"] - (mem["reserved"] if version else 0)) * mib
    c_memory.free = mem["free"] * mib
    return c_memory


@_api
def nvmlDeviceGetArchitecture(device):
    gpu, _, _ = _resolve_device(_load_state(), device)
    return _node.model_of(gpu).architecture


@_api
def nvmlDeviceGetCudaComputeCapability(handle):
    gpu, _, _ = _resolve_device(_load_state(), handle)
    return tuple(_node.model_of(gpu).cuda_cc)


def _bitmask(bits, words):
    mask = (c_ulonglong * words)()
    for bit in bits:
        if bit < 64 * words:
            mask[bit // 64] |= 1 << (bit % 64)
    return mask


@_api
def nvmlDeviceGetCpuAffinity(handle, cpuSetSize):
    gpu, _, _ = _resolve_device(_load_state(), handle)
    return _bitmask(_node.parse_cpulist(gpu["cpus"]), cpuSetSize)


@_api
def nvmlDeviceGetCpuAffinityWithinScope(handle, cpuSetSize, scope):
    if scope not in (NVML_AFFINITY_SCOPE_NODE, NVML_AFFINITY_SCOPE_SOCKET):
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "affinity scope %r is not valid" % (scope,))
    gpu, _, _ = _resolve_device(_load_state(), handle)
    return _bitmask(_node.parse_cpulist(gpu["cpus"]), cpuSetSize)


@_api
def nvmlDeviceGetMemoryAffinity(handle, nodeSetSize, scope):
    if scope not in (NVML_AFFINITY_SCOPE_NODE, NVML_AFFINITY_SCOPE_SOCKET):
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "affinity scope %r is not valid" % (scope,))
    gpu, _, _ = _resolve_device(_load_state(), handle)
    return _bitmask([gpu["numa_node"]], nodeSetSize)


@_api
def nvmlDeviceGetNumaNodeId(handle):
    gpu, _, _ = _resolve_device(_load_state(), handle)
    return gpu["numa_node"]


def _process_structs(gpu, gi, ci):
    procs = []
    for proc in gpu["processes"]:
        if gi is not None and (proc.get("gi") != gi["id"] or proc.get("ci") != ci["id"]):
            continue
        info = c_nvmlProcessInfo_v2_t()
        info.pid = proc["pid"]
        info.usedGpuMemory = proc["used_mib"] * 1024 * 1024
        info.gpuInstanceId = NVML_GPU_INSTANCE_ID_ANY if proc.get("gi") is None else proc["gi"]
        info.computeInstanceId = NVML_COMPUTE_INSTANCE_ID_ANY if proc.get("ci") is None else proc["ci"]
        procs.append(info)
    return procs


@_api
def nvmlDeviceGetComputeRunningProcesses_v3(handle):
    gpu, gi, ci = _resolve_device(_load_state(), handle)
    procs = []
    for info in _process_structs(gpu, gi, ci):
        obj = nvmlStructToFriendlyObject(info)
        if obj.usedGpuMemory == NVML_VALUE_NOT_AVAILABLE_ulonglong.value:
            obj.usedGpuMemory = None
        procs.append(obj)
    return procs


nvmlDeviceGetComputeRunningProcesses_v2 = nvmlDeviceGetComputeRunningProcesses_v3


def nvmlDeviceGetComputeRunningProcesses(handle):
    return nvmlDeviceGetComputeRunningProcesses_v3(handle)


@_api
def nvmlDeviceGetGraphicsRunningProcesses_v3(handle):
    _resolve_device(_load_state(), handle)
    return []


def nvmlDeviceGetGraphicsRunningProcesses(handle):
    return nvmlDeviceGetGraphicsRunningProcesses_v3(handle)


# ----------------------------------------------------------------- memory errors

@_api
def nvmlDeviceGetTotalEccErrors(handle, errorType, counterType):
    if errorType not in (NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED):
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "memory error type %r is not valid" % (errorType,))
    if counterType not in (NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC):
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "ECC counter type %r is not valid" % (counterType,))
    gpu = _physical(_load_state(), handle)
    return _node.ecc_count(gpu, errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED, counterType == NVML_VOLATILE_ECC)


@_api
def nvmlDeviceGetRetiredPagesPendingStatus(device):
    gpu = _physical(_load_state(), device)
    return NVML_FEATURE_ENABLED if _node.retired_pages_pending(gpu) else NVML_FEATURE_DISABLED


@_api
def nvmlDeviceGetRemappedRows(device):
    """(correctable, uncorrectable, pending, failure occurred), as the real binding returns them."""
    gpu = _physical(_load_state(), device)
    corrected, uncorrected, pending, failure = _node.remapped_rows(gpu)
    return (corrected, uncorrected, int(pending), int(failure))


# ----------------------------------------------------------------- health: persistence, PCIe, clocks, temperature

NVML_TEMPERATURE_GPU = 0
NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0
NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2
NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3
NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN = 4
NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR = 5
NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX = 6
NVML_TEMPERATURE_THRESHOLD_GPS_CURR = 7
NVML_TEMPERATURE_THRESHOLD_COUNT = 8

nvmlClocksEventReasonGpuIdle = 0x0000000000000001
nvmlClocksEventReasonApplicationsClocksSetting = 0x0000000000000002
nvmlClocksEventReasonUserDefinedClocks = nvmlClocksEventReasonApplicationsClocksSetting
nvmlClocksEventReasonSwPowerCap = 0x0000000000000004
nvmlClocksEventReasonHwSlowdown = 0x0000000000000008
nvmlClocksEventReasonSyncBoost = 0x0000000000000010
nvmlClocksEventReasonSwThermalSlowdown = 0x0000000000000020
nvmlClocksEventReasonHwThermalSlowdown = 0x0000000000000040
nvmlClocksEventReasonHwPowerBrakeSlowdown = 0x0000000000000080
nvmlClocksEventReasonDisplayClockSetting = 0x0000000000000100
nvmlClocksEventReasonNone = 0x0000000000000000
nvmlClocksEventReasonAll = 0x00000000000001FF
nvmlClocksThrottleReasonGpuIdle = nvmlClocksEventReasonGpuIdle
nvmlClocksThrottleReasonApplicationsClocksSetting = nvmlClocksEventReasonApplicationsClocksSetting
nvmlClocksThrottleReasonUserDefinedClocks = nvmlClocksEventReasonApplicationsClocksSetting
nvmlClocksThrottleReasonSwPowerCap = nvmlClocksEventReasonSwPowerCap
nvmlClocksThrottleReasonHwSlowdown = nvmlClocksEventReasonHwSlowdown
nvmlClocksThrottleReasonSyncBoost = nvmlClocksEventReasonSyncBoost
nvmlClocksThrottleReasonSwThermalSlowdown = nvmlClocksEventReasonSwThermalSlowdown
nvmlClocksThrottleReasonHwThermalSlowdown = nvmlClocksEventReasonHwThermalSlowdown
nvmlClocksThrottleReasonHwPowerBrakeSlowdown = nvmlClocksEventReasonHwPowerBrakeSlowdown
nvmlClocksThrottleReasonDisplayClockSetting = nvmlClocksEventReasonDisplayClockSetting
nvmlClocksThrottleReasonNone = nvmlClocksEventReasonNone


@_api
def nvmlDeviceGetPersistenceMode(handle):
    """NVML_FEATURE_ENABLED unless ``nvmlsim persistence --gpu N off`` (the real H100 and H200: enabled)."""
    return _node.persistence_mode(_physical(_load_state(), handle))


def _pcie(handle, key):
    return _node.pcie_link(_physical(_load_state(), handle))[key]


@_api
def nvmlDeviceGetCurrPcieLinkGeneration(handle):
    return _pcie(handle, "gen")


@_api
def nvmlDeviceGetCurrPcieLinkWidth(handle):
    return _pcie(handle, "width")


@_api
def nvmlDeviceGetMaxPcieLinkGeneration(handle):
    """The lower of the GPU's and the system's maximum; the simulated system never limits the GPU."""
    return _pcie(handle, "max_gen")


@_api
def nvmlDeviceGetMaxPcieLinkWidth(handle):
    return _pcie(handle, "max_width")


@_api
def nvmlDeviceGetGpuMaxPcieLinkGeneration(handle):
    return _pcie(handle, "max_gen")


@_api
def nvmlDeviceGetCurrentClocksEventReasons(handle):
    """GpuIdle (1) on an idle GPU (the real H100 and H200); ``nvmlsim clocks`` sets others."""
    return _node.clocks_event_reasons(_physical(_load_state(), handle))


@_api
def nvmlDeviceGetCurrentClocksThrottleReasons(handle):
    """The older name of nvmlDeviceGetCurrentClocksEventReasons: the same value (as the real driver answered)."""
    return _node.clocks_event_reasons(_physical(_load_state(), handle))


@_api
def nvmlDeviceGetSupportedClocksEventReasons(handle):
    """0x1FF, the nine reasons of nvml.h (the real H100 and H200 answered 511)."""
    return _node.health_of(_physical(_load_state(), handle)).clocks_event_reasons_supported


@_api
def nvmlDeviceGetSupportedClocksThrottleReasons(handle):
    return _node.health_of(_physical(_load_state(), handle)).clocks_event_reasons_supported


@_api
def nvmlDeviceGetTemperature(handle, sensor):
    if sensor != NVML_TEMPERATURE_GPU:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "temperature sensor %r is not valid (NVML_TEMPERATURE_GPU is 0)" % (sensor,))
    return _node.temperature(_physical(_load_state(), handle))


@_api
def nvmlDeviceGetTemperatureThreshold(handle, threshold):
    """SHUTDOWN, SLOWDOWN, MEM_MAX, GPU_MAX of the model (H100/H200: 95, 89, 95, 87); the rest NOT_SUPPORTED."""
    return _node.temperature_threshold(_physical(_load_state(), handle), threshold)


# ----------------------------------------------------------------- NVLink and the GPU fabric

NVML_NVLINK_MAX_LINKS = 36
NVML_NVLINK_ERROR_DL_REPLAY = 0
NVML_NVLINK_ERROR_DL_RECOVERY = 1
NVML_NVLINK_ERROR_DL_CRC_FLIT = 2
NVML_NVLINK_ERROR_DL_CRC_DATA = 3
NVML_NVLINK_ERROR_DL_ECC_DATA = 4
NVML_NVLINK_ERROR_COUNT = 5
NVML_NVLINK_VERSION_INVALID = 0
NVML_NVLINK_VERSION_1_0 = 1
NVML_NVLINK_VERSION_2_0 = 2
NVML_NVLINK_VERSION_2_2 = 3
NVML_NVLINK_VERSION_3_0 = 4
NVML_NVLINK_VERSION_3_1 = 5
NVML_NVLINK_VERSION_4_0 = 6
NVML_NVLINK_VERSION_5_0 = 7

NVML_GPU_FABRIC_UUID_LEN = 16
NVML_GPU_FABRIC_STATE_NOT_SUPPORTED = 0
NVML_GPU_FABRIC_STATE_NOT_STARTED = 1
NVML_GPU_FABRIC_STATE_IN_PROGRESS = 2
NVML_GPU_FABRIC_STATE_COMPLETED = 3


class c_nvmlGpuFabricInfo_t(_PrintableStructure):
    _fields_ = [
        ("clusterUuid", ctypes.c_uint8 * NVML_GPU_FABRIC_UUID_LEN),
        ("status", c_uint),
        ("cliqueId", ctypes.c_uint32),
        ("state", c_uint),
    ]


nvmlGpuFabricInfo_v2 = 0x02000024


class c_nvmlGpuFabricInfo_v2_t(_PrintableStructure):
    _fields_ = [
        ("version", c_uint),
        ("clusterUuid", ctypes.c_uint8 * NVML_GPU_FABRIC_UUID_LEN),
        ("status", c_uint),
        ("cliqueId", ctypes.c_uint32),
        ("state", c_uint),
        ("healthMask", ctypes.c_uint32),
    ]

    def __init__(self):
        super().__init__(version=nvmlGpuFabricInfo_v2)


c_nvmlGpuFabricInfoV_t = c_nvmlGpuFabricInfo_v2_t
nvmlGpuFabricInfo_v3 = 0x3000028


class c_nvmlGpuFabricInfo_v3_t(_PrintableStructure):
    _fields_ = [
        ("version", c_uint),
        ("clusterUuid", ctypes.c_uint8 * NVML_GPU_FABRIC_UUID_LEN),
        ("status", c_uint),
        ("cliqueId", ctypes.c_uint32),
        ("state", c_uint),
        ("healthMask", ctypes.c_uint32),
        ("healthSummary", ctypes.c_uint8),
    ]

    def __init__(self):
        super().__init__(version=nvmlGpuFabricInfo_v3)


@_api
def nvmlDeviceGetNvLinkState(device, link):
    """1 (active) on an SXM board's links unless taken down; NOT_SUPPORTED on PCIe boards, INVALID_ARGUMENT past the links."""
    return _node.nvlink_state(_physical(_load_state(), device), link)


@_api
def nvmlDeviceGetNvLinkVersion(device, link):
    """nvmlNvlinkVersion_t: 6 (4.0) on H100/H200 SXM5, 5 on A100 SXM4 (what an A100 answers, hwloc#658)."""
    return _node.nvlink_version(_physical(_load_state(), device), link)


@_api
def nvmlDeviceGetNvLinkRemotePciInfo(device, link):
    """The NVSwitch at the other end of an HGX board's link (nvml_sim/README.md "Health")."""
    state = _load_state()
    remote = _node.nvlink_remote_pci(state, _physical(state, device), link)
    info = nvmlPciInfo_t()
    for key, value in remote.items():
        setattr(info, key, value)
    return info


@_api
def nvmlDeviceGetNvLinkErrorCounter(device, link, counter):
    return _node.nvlink_error_counter(_physical(_load_state(), device), link, counter)


def _fabric_fill(device, info, versions):
    state = _load_state()
    gpu = _physical(state, device)
    obj = _target(info)
    if isinstance(obj, ctypes._Pointer):
        obj = obj.contents
    if obj is None or not hasattr(obj, "state"):
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "gpuFabricInfo must be a fabric info structure, got %r" % (info,))
    if versions and getattr(obj, "version", None) not in versions:
        raise _SimError(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "fabric info version 0x%x is not v2 or v3" % (
            getattr(obj, "version", 0),))
    fabric, status = _node.fabric_info(state, gpu)
    cluster_uuid, clique_id = _node.fabric_domain(state, gpu)
    for i in range(NVML_GPU_FABRIC_UUID_LEN):
        obj.clusterUuid[i] = cluster_uuid[i]
    obj.state, obj.status, obj.cliqueId = fabric, status, clique_id
    if hasattr(obj, "healthMask"):
        obj.healthMask = 0
    if hasattr(obj, "healthSummary"):
        obj.healthSummary = 0
    return NVML_SUCCESS


@_api
def nvmlDeviceGetGpuFabricInfo(device, gpuFabricInfo):
    """Fills the structure: state COMPLETED (status SUCCESS) on an HGX node while the fabric manager runs.

    NOT_STARTED / IN_PROGRESS after ``nvmlsim fabric-manager --state stopped|starting``; NOT_SUPPORTED (0),
    status SUCCESS, without NVSwitch, as a real H100 and H200 in a VM answered; the error NOT_SUPPORTED
    before Hopper.  clusterUuid and cliqueId: the node's multi-node NVLink domain (``nvmlsim fabric-domain``)
    while the state is COMPLETED, else zeros; none set (a single-node HGX board), zeros, as a real HGX H100
    reports (nvmlsim.node.fabric_domain says what is known and what is assumed).
    """
    return _fabric_fill(device, gpuFabricInfo, None)


@_api
def nvmlDeviceGetGpuFabricInfoV(device, gpuFabricInfo):
    """nvmlDeviceGetGpuFabricInfo with a versioned structure (v2 or v3)."""
    return _fabric_fill(device, gpuFabricInfo, (nvmlGpuFabricInfo_v2, nvmlGpuFabricInfo_v3))


# ----------------------------------------------------------------- MIG mode and MIG devices

@_api
def nvmlDeviceGetMigMode(device):
    gpu = _physical(_load_state(), device)
    _node.require_mig_capable(gpu)
    return [gpu["mig_current"], gpu["mig_pending"]]


@_api
def nvmlDeviceSetMigMode(device, mode):
    with _store.transaction() as state:
        gpu = _physical(state, device)
        status = _node.set_mig_mode(state, gpu, mode)
    return status


@_api
def nvmlDeviceIsMigDeviceHandle(device):
    _, gi, _ = _resolve_device(_load_state(), device)
    return c_uint(0 if gi is None else 1)


@_api
def nvmlDeviceGetGpuInstanceId(device):
    _, gi, _ = _resolve_device(_load_state(), device)
    if gi is None:   # a real H200 (driver 580.159.04) answers INVALID_ARGUMENT for a GPU handle
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "not a MIG device handle")
    return gi["id"]


@_api
def nvmlDeviceGetComputeInstanceId(device):
    _, gi, ci = _resolve_device(_load_state(), device)
    if gi is None:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "not a MIG device handle")
    return ci["id"]


@_api
def nvmlDeviceGetMaxMigDeviceCount(device):
    gpu = _physical(_load_state(), device)
    if not _node.model_of(gpu).mig_capable or not _node.mig_enabled(gpu):
        return 0
    return 7


@_api
def nvmlDeviceGetMigDeviceHandleByIndex(device, index):
    gpu = _physical(_load_state(), device)
    _node.require_mig_capable(gpu)
    if not _node.mig_enabled(gpu):   # as a real H200 answers with MIG off, for any index
        raise _SimError(NVML_ERROR_NOT_FOUND, "MIG mode is not enabled on GPU %d: it has no MIG devices" % gpu["index"])
    if not isinstance(index, int) or not 0 <= index < 7:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "MIG device index %r is out of range 0-6" % (index,))
    devices = _node.mig_devices(gpu)
    if index >= len(devices):
        raise _SimError(NVML_ERROR_NOT_FOUND, "GPU %d has %d MIG devices; none at index %d" % (gpu["index"], len(devices), index))
    gi, ci = devices[index]
    return _mig_handle(gpu, gi, ci)


class c_nvmlDeviceAttributes(Structure):
    _fields_ = [("multiprocessorCount", c_uint),
                ("sharedCopyEngineCount", c_uint),
                ("sharedDecoderCount", c_uint),
                ("sharedEncoderCount", c_uint),
                ("sharedJpegCount", c_uint),
                ("sharedOfaCount", c_uint),
                ("gpuInstanceSliceCount", c_uint),
                ("computeInstanceSliceCount", c_uint),
                ("memorySizeMB", c_ulonglong),
                ]


@_api
def nvmlDeviceGetAttributes_v2(device):
    """A MIG device's size (SMs, the GI's engines it shares, slices, memory); NOT_SUPPORTED for a whole GPU.

    The whole-GPU answer is what a real H200 (driver 580.159.04) gave with MIG off.
    """
    gpu, gi, ci = _resolve_device(_load_state(), device)
    if gi is None:
        raise _SimError(NVML_ERROR_NOT_SUPPORTED, "device attributes are reported for MIG devices only")
    gi_prof = _node.gi_profile_of(gpu, gi)
    ci_prof = _node.ci_profile_of(gpu, gi, ci)
    attrs = c_nvmlDeviceAttributes()
    attrs.multiprocessorCount = ci_prof.sms
    _set_engines(attrs, gi_prof, shared=True)
    attrs.gpuInstanceSliceCount = gi_prof.slices
    attrs.computeInstanceSliceCount = ci_prof.slices
    attrs.memorySizeMB = gi_prof.memory_mib
    return attrs


def nvmlDeviceGetAttributes(device):
    return nvmlDeviceGetAttributes_v2(device)


@_api
def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(migDevice):
    gpu, gi, _ = _resolve_device(_load_state(), migDevice)
    if gi is None:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "not a MIG device handle")
    return _gpu_handle(gpu)


# ----------------------------------------------------------------- GPU instances

_ENGINES = (("CopyEngineCount", "copy_engines"), ("DecoderCount", "decoders"), ("EncoderCount", "encoders"),
            ("JpegCount", "jpegs"), ("OfaCount", "ofas"))


def _set_engines(struct, prof, shared=False):
    """A GPU-instance profile's engines into an NVML structure: ``copyEngineCount``..., or ``sharedCopyEngineCount``..."""
    for field, attr in _ENGINES:
        setattr(struct, "shared" + field if shared else field[0].lower() + field[1:], getattr(prof, attr))


def _gi_profile_struct(prof, version):
    if version == 2:
        info = c_nvmlGpuInstanceProfileInfo_v2_t()
        info.name = prof.nvml_name
    elif version == 1:
        info = c_nvmlGpuInstanceProfileInfo_t()
    else:
        raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)
    info.id = prof.profile_id
    info.isP2pSupported = 0
    info.sliceCount = prof.slices
    info.instanceCount = prof.instances
    info.multiprocessorCount = prof.sms
    _set_engines(info, prof)
    info.memorySizeMB = prof.memory_mib
    return info


@_api
def nvmlDeviceGetGpuInstanceProfileInfo(device, profile, version=2):
    if version not in (1, 2):
        raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)
    gpu = _physical(_load_state(), device)
    # MIG mode need not be on: a MIG-capable GPU lists its profiles with MIG off (real H200, driver 580.159.04)
    model = _node.require_mig_capable(gpu)
    if not isinstance(profile, int) or not 0 <= profile < NVML_GPU_INSTANCE_PROFILE_COUNT:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "GPU instance profile %r is not an NVML_GPU_INSTANCE_PROFILE_* value" % (profile,))
    prof = model.profile_by_enum(profile)
    if prof is None:
        raise _SimError(NVML_ERROR_NOT_SUPPORTED, "%s has no GPU instance profile for NVML profile %d" % (model.name, profile))
    return _gi_profile_struct(prof, version)


nvmlDeviceGetGpuInstanceProfileInfoV = nvmlDeviceGetGpuInstanceProfileInfo


@_api
def nvmlDeviceGetGpuInstanceProfileInfoById(device, profileId):
    gpu = _physical(_load_state(), device)
    return _gi_profile_struct(_node.gi_profile_by_id(gpu, profileId, enabled=False), 2)


nvmlDeviceGetGpuInstanceProfileInfoByIdV = nvmlDeviceGetGpuInstanceProfileInfoById


@_api
def nvmlDeviceGetGpuInstanceRemainingCapacity(device, profileId):
    gpu = _physical(_load_state(), device)
    return _node.remaining_gi_capacity(gpu, _node.gi_profile_by_id(gpu, profileId, enabled=False))


@_api
def nvmlDeviceGetGpuInstancePossiblePlacements(device, profileId, placementsRef, countRef):
    gpu = _physical(_load_state(), device)
    prof = _node.gi_profile_by_id(gpu, profileId, enabled=False)
    placements = []
    for start in prof.starts:
        placement = c_nvmlGpuInstancePlacement_t()
        placement.start = start
        placement.size = prof.mem_slices
        placements.append(placement)
    _fill(placementsRef, placements)
    _set_value(countRef, len(placements))
    return NVML_SUCCESS


@_api
def nvmlDeviceCreateGpuInstance(device, profileId):
    with _store.transaction() as state:
        gpu = _physical(state, device)
        gi = _node.create_gpu_instance(gpu, profileId)
        handle = _gi_handle(gpu, gi)
    return handle


@_api
def nvmlDeviceCreateGpuInstanceWithPlacement(device, profileId, placement):
    start, size = _placement_arg(placement)
    with _store.transaction() as state:
        gpu = _physical(state, device)
        gi = _node.create_gpu_instance(gpu, profileId, start=start, size=size)
        handle = _gi_handle(gpu, gi)
    return handle


@_api
def nvmlGpuInstanceDestroy(gpuInstance):
    with _store.transaction() as state:
        gpu, gi = _resolve_gi(state, gpuInstance)
        _node.destroy_gpu_instance(gpu, gi["id"])
    return NVML_SUCCESS


@_api
def nvmlDeviceGetGpuInstances(device, profileId, gpuInstancesRef, countRef):
    # nvml.h: "NVML_ERROR_INVALID_ARGUMENT If device, profileId, gpuInstances or count are invalid": no NULL
    # array to ask for the count (unlike the placement queries); callers size it by the profile's instanceCount
    _require_output(gpuInstancesRef, "gpuInstances")
    state = _load_state()
    gpu = _physical(state, device)
    _node.gi_profile_by_id(gpu, profileId, enabled=False)
    found = [_gi_handle(gpu, gi) for gi in gpu["gpu_instances"] if gi["profile_id"] == profileId]
    _fill(gpuInstancesRef, found)
    _set_value(countRef, len(found))
    return NVML_SUCCESS


@_api
def nvmlDeviceGetGpuInstanceById(device, gpuInstanceId):
    gpu = _physical(_load_state(), device)
    _node.require_mig_capable(gpu)   # with MIG off: NOT_FOUND, as on a real H200
    gi = _node.gpu_instance(gpu, gpuInstanceId)
    if gi is None:
        raise _SimError(NVML_ERROR_NOT_FOUND, "GPU %d has no GPU instance %s" % (gpu["index"], gpuInstanceId))
    return _gi_handle(gpu, gi)


@_api
def nvmlGpuInstanceGetInfo(gpuInstance):
    gpu, gi = _resolve_gi(_load_state(), gpuInstance)
    info = c_nvmlGpuInstanceInfo_t()
    info.device = _gpu_handle(gpu)
    info.id = gi["id"]
    info.profileId = gi["profile_id"]
    info.placement.start = gi["start"]
    info.placement.size = gi["size"]
    return info


# ----------------------------------------------------------------- compute instances

@_api
def nvmlGpuInstanceGetComputeInstanceProfileInfo(device, profile, engProfile, version=2):
    if version == 2:
        info = c_nvmlComputeInstanceProfileInfo_v2_t()
    elif version == 1:
        info = c_nvmlComputeInstanceProfileInfo_t()
    else:
        raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)
    gpu, gi = _resolve_gi(_load_state(), device)
    if engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED:
        raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "engine profile %r is not valid; only SHARED (0) exists" % (engProfile,))
    prof = _node.ci_profile_in(gpu, gi, profile)
    gi_prof = _node.gi_profile_of(gpu, gi)
    if version == 2:
        info.name = prof.name
    info.id = prof.profile_id
    info.sliceCount = prof.slices
    info.instanceCount = prof.instances
    info.multiprocessorCount = prof.sms
    _set_engines(info, gi_prof, shared=True)
    return info


nvmlGpuInstanceGetComputeInstanceProfileInfoV = nvmlGpuInstanceGetComputeInstanceProfileInfo


@_api
def nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gpuInstance, profileId):
    gpu, gi = _resolve_gi(_load_state(), gpuInstance)
    return _node.remaining_ci_capacity(gpu, gi, _node.ci_profile_in(gpu, gi, profileId))


@_api
def nvmlGpuInstanceGetComputeInstancePossiblePlacements(gpuInstance, profileId, placementsRef, countRef):
    gpu, gi = _resolve_gi(_load_state(), gpuInstance)
    prof = _node.ci_profile_in(gpu, gi, profileId)
    placements = []
    for start in prof.starts:
        placement = c_nvmlComputeInstancePlacement_t()
        placement.start = start
        placement.size = prof.size
        placements.append(placement)
    _fill(placementsRef, placements)
    _set_value(countRef, len(placements))
    return NVML_SUCCESS


@_api
def nvmlGpuInstanceCreateComputeInstance(gpuInstance, profileId):
    with _store.transaction() as state:
        gpu, gi = _resolve_gi(state, gpuInstance)
        ci = _node.create_compute_instance(gpu, gi["id"], profileId)
        handle = _ci_handle(gpu, gi, ci)
    return handle


@_api
def nvmlGpuInstanceCreateComputeInstanceWithPlacement(gpuInstance, profileId, placement):
    start, size = _placement_arg(placement)
    with _store.transaction() as state:
        gpu, gi = _resolve_gi(state, gpuInstance)
        prof = _node.ci_profile_in(gpu, gi, profileId)
        if size != prof.size:
            raise _SimError(NVML_ERROR_INVALID_ARGUMENT, "compute placement size %d is not valid for %s (size %d)" % (size, prof.name, prof.size))
        ci = _node.create_compute_instance(gpu, gi["id"], profileId, start=start)
        handle = _ci_handle(gpu, gi, ci)
    return handle


@_api
def nvmlComputeInstanceDestroy(computeInstance):
    with _store.transaction() as state:
        gpu, gi, ci = _resolve_ci(state, computeInstance)
        _node.destroy_compute_instance(gpu, gi["id"], ci["id"])
    return NVML_SUCCESS


@_api
def nvmlGpuInstanceGetComputeInstances(gpuInstance, profileId, computeInstancesRef, countRef):
    _require_output(computeInstancesRef, "computeInstances")   # as nvmlDeviceGetGpuInstances
    gpu, gi = _resolve_gi(_load_state(), gpuInstance)
    _node.ci_profile_in(gpu, gi, profileId)
    found = [_ci_handle(gpu, gi, ci) for ci in gi["compute_instances"] if ci["profile_id"] == profileId]
    _fill(computeInstancesRef, found)
    _set_value(countRef, len(found))
    return NVML_SUCCESS


@_api
def nvmlGpuInstanceGetComputeInstanceById(gpuInstance, computeInstanceId):
    gpu, gi = _resolve_gi(_load_state(), gpuInstance)
    ci = _node.compute_instance(gi, computeInstanceId)
    if ci is None:
        raise _SimError(NVML_ERROR_NOT_FOUND, "GPU instance %d has no compute instance %s" % (gi["id"], computeInstanceId))
    return _ci_handle(gpu, gi, ci)


@_api
def nvmlComputeInstanceGetInfo_v2(computeInstance):
    gpu, gi, ci = _resolve_ci(_load_state(), computeInstance)
    info = c_nvmlComputeInstanceInfo_t()
    info.device = _gpu_handle(gpu)
    info.gpuInstance = _gi_handle(gpu, gi)
    info.id = ci["id"]
    info.profileId = ci["profile_id"]
    info.placement.start = ci["start"]
    info.placement.size = ci["size"]
    return info


def nvmlComputeInstanceGetInfo(computeInstance):
    return nvmlComputeInstanceGetInfo_v2(computeInstance)


# Unversioned names that forward to a versioned entry point: a fault injected
# for either name fires on the versioned call.
CALL_ALIASES = {
    "nvmlInitWithFlags": "nvmlInit",
    "nvmlDeviceGetPciInfo": "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetComputeRunningProcesses": "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetComputeRunningProcesses_v2": "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetGraphicsRunningProcesses": "nvmlDeviceGetGraphicsRunningProcesses_v3",
    "nvmlDeviceGetGpuInstanceProfileInfoV": "nvmlDeviceGetGpuInstanceProfileInfo",
    "nvmlDeviceGetGpuInstanceProfileInfoByIdV": "nvmlDeviceGetGpuInstanceProfileInfoById",
    "nvmlGpuInstanceGetComputeInstanceProfileInfoV": "nvmlGpuInstanceGetComputeInstanceProfileInfo",
    "nvmlComputeInstanceGetInfo": "nvmlComputeInstanceGetInfo_v2",
}

# Entry points whose failures ``nvmlsim inject --call NAME`` can simulate.
SIMULATED_CALLS = sorted(
    name for name, value in list(globals().items())
    if name.startswith("nvml") and callable(value) and not isinstance(value, type)
    and name not in ("nvmlExceptionClass", "nvmlStructToFriendlyObject", "nvmlFriendlyObjectToStruct",
                     "nvmlErrorString", "nvmlShutdown"))


def canonical_call(name):
    """The entry point whose faults a call of ``name`` consumes."""
    return CALL_ALIASES.get(name, name)

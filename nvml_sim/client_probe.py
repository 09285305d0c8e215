#!/usr/bin/env python3
"""Read-only run of the collection's NVML client (plugins/module_utils/_nvml.py) on this machine's GPUs, as JSON.

    python3 nvml_sim/client_probe.py > client.json

Run it with the Python whose ``pynvml`` is the real nvidia-ml-py: on a GPU
machine over NVIDIA's libnvidia-ml.so.1, here over the simulated one. It only
reads (no MIG mode change, no instance created or destroyed, no reset): the
names, MIG mode, CPU affinity, processes, health counters, GPU-instance
profiles and their placements the client reports for every GPU, and what
NVML answers when an instance list is asked for with a NULL array (nvml.h:
INVALID_ARGUMENT) and with an array. nvml_sim/tests/test_real_h200.py holds
the simulator to the answer recorded on a real H200.
"""
import ctypes
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "..", "plugins", "module_utils", "_nvml.py")


def load_client():
    spec = importlib.util.spec_from_file_location("gpucluster_nvml_client", CLIENT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _error_name(pynvml, exc):
    for name in dir(pynvml):
        if name.startswith("NVML_ERROR_") and getattr(pynvml, name) == getattr(exc, "value", None):
            return name
    return "NVML_ERROR_%s" % getattr(exc, "value", "?")


def _answer(func, *args):
    try:
        return {"value": func(*args)}
    except Exception as exc:  # pylint: disable=broad-except
        kind = getattr(exc, "kind", None)
        return {"error": kind or type(exc).__name__, "detail": getattr(exc, "detail", str(exc))}


def _raw_list(pynvml, handle, profile_id, with_array):
    count = ctypes.c_uint(0)
    array = (pynvml.c_nvmlGpuInstance_t * 8)() if with_array else None
    try:
        pynvml.nvmlDeviceGetGpuInstances(handle, profile_id, array, ctypes.byref(count))
        return {"value": count.value}
    except pynvml.NVMLError as exc:
        return {"error": _error_name(pynvml, exc)}


def probe(pynvml, nvml):
    result = {"binding": getattr(pynvml, "__file__", None), "gpus": []}
    with nvml.session(pynvml) as client:
        for index in range(client.count()):
            handle = client.handle(index)
            gpu = {"index": index, "name": nvml.text(client.call("nvmlDeviceGetName", handle))}
            gpu["mig_mode"] = _answer(client.mig_mode, handle)
            cpus = client.cpus(handle)
            gpu["cpus_words_nonzero"] = None if cpus is None else sum(1 for word in cpus if word)
            gpu["processes"] = _answer(lambda h: len(client.processes(h)), handle)
            gpu["health"] = _answer(client.health, handle)
            profiles = _answer(client.gi_profiles, handle)
            gpu["gi_profiles"] = profiles
            if "value" in profiles:
                gpu["gi_placements"] = dict((p["name"], _answer(client.gi_placements, handle, p["id"])) for p in profiles["value"])
                first = profiles["value"][0]["id"] if profiles["value"] else 19
                gpu["gpu_instances_null_array"] = _raw_list(pynvml, handle, first, False)
                gpu["gpu_instances_array"] = _raw_list(pynvml, handle, first, True)
            gpu["mig_devices"] = _answer(lambda h: len(client.mig_devices(h)), handle)
            result["gpus"].append(gpu)
    return result


def main():
    import pynvml  # pylint: disable=import-outside-toplevel
    print(json.dumps(probe(pynvml, load_client()), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

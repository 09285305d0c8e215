"""NVML simulator core: GPU models, node state, device files, CLI.

``nvmlsim.api`` is the simulator's NVML API in the form of nvidia-ml-py's
``pynvml`` (never installed as ``pynvml``: clients load the real nvidia-ml-py
over the simulated ``libnvidia-ml.so.1``, whose server answers through it).
Standard library only, so it can be copied into any Python 3 site-packages.
"""

__version__ = "1.0.0"

"""NVML simulator core: GPU models, node state, device files, CLI.

``pynvml`` (the sibling package) is the API; this package is what it drives.
Standard library only, so both can be copied into any Python 3 site-packages.
"""

__version__ = "1.0.0"

#!/usr/bin/env python3
"""Read-only NVML survey as JSON; see nvmlsim/parity.py.

Run it with the Python whose ``pynvml`` you want to survey.  From a checkout
without the simulator installed, ``nvmlsim.parity`` is taken from
``nvml_sim/src`` and ``pynvml`` is whatever that Python has -- on a GPU
node, nvidia-ml-py -- unless NVMLSIM_PARITY_USE_SIM=1 asks for the
simulator's own API (``nvmlsim.api``).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
sys.path.append(SRC)

from nvmlsim.parity import main  # noqa: E402  pylint: disable=wrong-import-position

sys.exit(main())

#!/usr/bin/env bash
# STAND-IN for enroot's 50-slurm-pytorch.sh hook (NOT the real hook, which exports
# WORLD_SIZE, RANK, LOCAL_RANK, MASTER_ADDR and MASTER_PORT from SLURM_* variables).
# Shipped by the stand-in enroot package so that the enroot role's "install the hook"
# step has a real file to link. Does nothing.
exit 0

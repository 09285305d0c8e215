#!/usr/bin/env bash
# STAND-IN for enroot's 50-slurm-pmi.sh hook (NOT the real hook, which forwards PMI/PMIx
# variables and sockets into the container). Shipped by the stand-in enroot package so
# that the enroot role's "install the hook" step has a real file to link. Does nothing.
exit 0

# gpucluster.bringup developer entry points. `make test` is the one test command.
SHELL := /bin/bash

.PHONY: test venv unit sanity lint yamllint shellcheck package molecule cluster-up cluster-down demo

test:
	bash scripts/test.sh

venv:
	bash scripts/test.sh deps

unit sanity lint yamllint shellcheck package molecule:
	bash scripts/test.sh $@

cluster-up:
	bash scripts/cluster.sh deps images up

cluster-down:
	bash scripts/cluster.sh down

demo:
	bash scripts/demo.sh

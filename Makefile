# mhalab — `make run` and `make test` do all the setup they need (scripts/setup.sh is
# idempotent: on a machine that has everything it takes about a second).
#
#   make run [ARGS="--backend go --runs 5"]   the MHA demo (mhalab demo)
#   make test                                  go vet, go test on every backend, setup tests
#   make setup                                 only the setup (Go check, modules, XLA CPU plugin)
#   make build                                 bin/mhalab
SHELL := /bin/bash
GO ?= go
ARGS ?=
export GOMLX_NO_AUTO_INSTALL := 1

.PHONY: help setup run test build clean

help:
	@sed -n '1,8s/^# \{0,1\}//p' Makefile

setup:
	scripts/setup.sh

run: setup
	$(GO) run ./cmd/mhalab demo $(ARGS)

test: setup
	scripts/test.sh

build:
	$(GO) build -o bin/mhalab ./cmd/mhalab

clean:
	rm -rf bin build

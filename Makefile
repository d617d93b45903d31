# mhalab — `make lab` and `make test` do all the setup they need (scripts/setup.sh is
# idempotent: on a machine that has everything it takes a few seconds).
#
#   make lab                                   JupyterLab on localhost with the notebooks (GoNB)
#   make run [ARGS="--backend go --runs 5"]   the MHA demo (mhalab demo)
#   make test                                  the whole suite (CI): go tests on every backend, lessons, parity, notebooks
#   make setup                                 only the setup (Go check, modules, XLA CPU plugin)
#   make build                                 bin/mhalab
#   make docs                                  regenerate what the docs show (docs/docs.md)
#   make book                                  the course as a static site in build/book/html
#   make race                                  fastgo's kernels under the race detector and checkptr
SHELL := /bin/bash
GO ?= go
ARGS ?=
export GOMLX_NO_AUTO_INSTALL := 1
# fastgo's vector element-wise loops and AVX-512 kernels need Go 1.26's GOEXPERIMENT=simd (amd64
# only); everything make runs (tests, bench, lab, notebooks via GoNB) builds with it there.
# Elsewhere, or with GOEXPERIMENT set by you, they run plain Go (the AVX2 matmul kernel, in
# assembly, runs in every amd64 build). Where the CPU has AVX2 the
# tests then require the SIMD kernel (fastgo's TestSIMDRequired).
ifeq ($(origin GOEXPERIMENT),undefined)
ifeq ($(shell $(GO) env GOARCH)-$(findstring go1.26,$(shell $(GO) env GOVERSION)),amd64-go1.26)
export GOEXPERIMENT := simd
ifneq ($(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && echo y),)
export MHALAB_FASTGO_REQUIRE_SIMD := 1
endif
endif
endif

.PHONY: help setup run test build clean race

help:
	@sed -n '1,12s/^# \{0,1\}//p' Makefile

setup:
	scripts/setup.sh

run: setup
	$(GO) run ./cmd/mhalab demo $(ARGS)

# The whole suite, as CI runs it (.ci/run): vet + go test on every backend + lessons verify +
# bench --quick + setup tests (scripts/test.sh), PyTorch parity live (make parity), and the
# notebooks on both backends with the runner's self-test and the make lab check (make notebooks-ci),
# then the book from the notebooks just executed on xla:cpu, checked in Chromium (make book book-check).
test: setup
	scripts/test.sh
	$(MAKE) --no-print-directory parity
	$(MAKE) --no-print-directory parity-minilm
	$(MAKE) --no-print-directory notebooks-ci
	$(MAKE) --no-print-directory book-test
	@echo "==> make test: everything passed"

build:
	$(GO) build -o bin/mhalab ./cmd/mhalab

# fastgo's unsafe-pointer kernels and parallel loops under the race detector, which also turns on
# checkptr (a pointer past a slice's end fails it). ~3 min on 2 cores; not part of make test.
race:
	GOEXPERIMENT=simd $(GO) test -race -timeout 30m ./fastgo

clean:
	rm -rf bin build

# ---- PyTorch parity (parity/README.md) -------------------------------------------------------
#   make parity [PARITY_RANDOM=60] [PARITY_SEED=S]
#   make parity-random         the same from a new seed, $(date +%s) (printed: replay with PARITY_SEED=S)
# Regenerates every reference with the pinned PyTorch (scripts/setup.sh, step torch) into
# build/parity, plus PARITY_RANDOM random configurations from seed PARITY_SEED (default 20261129,
# fixed, so that make test is the same run every time; printed; replay a failing one with its
# seed: python parity/gen.py --out DIR --cases none --random 1 --seed S), then
# compares mhalib with them on every backend (TestParity, TestForwardParity with MHALAB_PARITY_DIR)
# and runs the mhalab binary's forward subcommand on a sample (parity/check_forward.py).
# `make parity-fixtures` rewrites the committed fixtures (parity/testdata, torchio/testdata).
#   make parity-soak [PARITY_RANDOM=20000] [PARITY_SEED=S, default a new one, $(date +%s)] [PARITY_SOAK_POOL=200] [PARITY_SOAK_CHUNK=2000] [PARITY_SOAK_DIR=build/parity-soak]
# The soak (parity/soak.py): PARITY_RANDOM random configurations on go and xla:cpu, in chunks,
# each chunk's structures drawn from a pool of PARITY_SOAK_POOL (compiled once per backend; 0 =
# every configuration fully random); failing chunks kept in build/parity-soak/failed-*, the
# distribution of err/bound in build/parity-soak/summary.txt. Hours on a 2-core machine.
PARITY_DIR ?= build/parity
PARITY_SOAK_DIR ?= build/parity-soak
PARITY_RANDOM ?= 60
PARITY_MODERN_RANDOM ?= 20
# A seed given on the command line or in the environment is used by every target; without one,
# make parity (and make test) use the fixed 20261129, make parity-random and make parity-soak a new
# one each run.
ifeq ($(origin PARITY_SEED),undefined)
PARITY_SEED := 20261129
PARITY_NEW_SEED = $$(date +%s)
else
PARITY_NEW_SEED = $(PARITY_SEED)
endif
PARITY_PYTHON ?= $${MHALAB_TORCH_VENV:-$${XDG_CACHE_HOME:-$$HOME/.cache}/mhalab/torch-venv}/bin/python
PARITY_FORWARD_FIXTURES := mha_self,mha_everything,mha_uint8_masks,mha_is_causal_noweights,mha_is_causal_cross_kpm,mha_weights_per_head,mha_nobias,mha_kdim_vdim

PARITY_SOAK_POOL ?= 200
PARITY_SOAK_CHUNK ?= 2000

.PHONY: parity parity-random parity-fixtures parity-soak

parity: setup
	@echo "==> make parity: random configurations from seed $(PARITY_SEED) (make parity PARITY_SEED=$(PARITY_SEED) replays them; make parity-random draws a new seed)"
	rm -rf $(PARITY_DIR) && mkdir -p $(PARITY_DIR)
	$(PARITY_PYTHON) parity/gen.py --out $(PARITY_DIR) --forward-files --random $(PARITY_RANDOM) --seed $(PARITY_SEED)
	MHALAB_PARITY_DIR=$(abspath $(PARITY_DIR)) MHALAB_PARITY_REPORT=$(abspath $(PARITY_DIR))/report.txt \
		$(GO) test -count=1 -timeout 30m -run 'TestParity$$|TestForwardParity$$' ./parity/ ./cmd/mhalab/; \
		status=$$?; cat $(PARITY_DIR)/report.txt 2>/dev/null; exit $$status
	$(GO) build -o $(PARITY_DIR)/mhalab ./cmd/mhalab
	$(PARITY_PYTHON) parity/check_forward.py --bin $(PARITY_DIR)/mhalab --dir $(PARITY_DIR) --max 12
	# Modern attention (issue 13): GQA, ALiBi, soft-cap, window, sinks, RoPE, MLA vs SDPA / flex_attention, fixed + random cases.
	$(PARITY_PYTHON) parity/modern_gen.py --out $(PARITY_DIR)/modern --fixtures --random $(PARITY_MODERN_RANDOM) --seed $(PARITY_SEED)
	MHALAB_MODERN_PARITY_DIR=$(abspath $(PARITY_DIR))/modern $(GO) test -count=1 -timeout 30m -run 'TestModernParity$$' ./parity/

parity-random:
	seed=$(PARITY_NEW_SEED) && $(MAKE) --no-print-directory parity PARITY_SEED=$$seed

parity-soak: setup
	rm -rf $(PARITY_SOAK_DIR) && mkdir -p $(PARITY_SOAK_DIR)
	$(GO) test -c -o $(PARITY_SOAK_DIR)/parity.test ./parity/
	$(PARITY_PYTHON) parity/soak.py --bin $(PARITY_SOAK_DIR)/parity.test --out $(PARITY_SOAK_DIR) \
		--random $(PARITY_RANDOM) --seed $(PARITY_NEW_SEED) --pool $(PARITY_SOAK_POOL) --chunk $(PARITY_SOAK_CHUNK)

parity-fixtures:
	scripts/setup.sh --only torch
	rm -f parity/testdata/*.safetensors
	$(PARITY_PYTHON) parity/gen.py --out parity/testdata --fixtures --forward-files --forward-cases $(PARITY_FORWARD_FIXTURES)
	$(PARITY_PYTHON) parity/torchio_testdata.py torchio/testdata
	rm -rf parity/testdata/modern && $(PARITY_PYTHON) parity/modern_gen.py --out parity/testdata/modern --fixtures

# ---- Lessons (lessons/README.md) -------------------------------------------------------------
#   make lessons              the exercises and your progress (mhalab lessons; see `mhalab lessons help`)
#   make lessons-verify       every stub fails its grader, every solution passes (pure Go; make test runs it)
#   make lessons-verify-xla   the same on XLA CPU
#   make lessons-fixtures     regenerate lessons/testdata with PyTorch (parity's generator), then the manifest
.PHONY: lessons lessons-verify lessons-verify-xla lessons-fixtures

lessons:
	$(GO) run ./cmd/mhalab lessons

lessons-verify:
	$(GO) run ./cmd/mhalab lessons verify

lessons-verify-xla: setup
	$(GO) run ./cmd/mhalab lessons verify --backend xla:cpu

lessons-fixtures:
	scripts/setup.sh --only torch
	$(PARITY_PYTHON) lessons/testdata/gen.py
	$(PARITY_PYTHON) parity/modern_gen.py --out lessons/testdata --cases gqa,window,rope_half_100000_rd8_off37 --no-inputs-files
	$(GO) generate ./lessons

# ---- Classroom images (docker/README.md) -----------------------------------------------------
#   make docker-cpu [DOCKER_BASE=auto|registry|local|IMAGE]   build localhost/mhalab:cpu (with PyTorch)
#   make docker-slim [DOCKER_BASE=...]                          build localhost/mhalab:slim, the student
#       image: the same without PyTorch (the parity notebook uses the committed fixtures)
#   make docker-cuda [DOCKER_BASE=...]                          build localhost/mhalab:cuda
#   make docker-verify                                          build both CPU images, then run in each:
#       mhalab backends, JupyterLab with its token, make notebooks; in the full one also XLA CPU
#       notebooks and the JupyterHub test (both modes); prints both sizes
# With podman (root) or docker; DOCKER_BASE=auto pulls the digest-pinned base and falls back to
# a Debian base made here with debootstrap (docker/make-base.sh). Images hold the committed tree.
DOCKER_BASE ?= auto

.PHONY: docker-cpu docker-slim docker-cuda docker-verify

docker-cpu:
	docker/build.sh cpu --base $(DOCKER_BASE)

docker-slim:
	docker/build.sh slim --base $(DOCKER_BASE)

docker-cuda:
	docker/build.sh cuda --base $(DOCKER_BASE)

docker-verify:
	docker/verify.sh

# ---- Notebooks (docs/students.md, section Notebooks) -----------------------------------------
#   make lab [LAB_BACKEND=go|xla:cpu] [LAB_PORT=8888]  JupyterLab on localhost with the notebooks (GoNB);
#       Jupyter comes from PyPI into a venv of ~/.cache/mhalab (scripts/setup.sh, step jupyter; no root)
#   make notebooks [NOTEBOOKS_BACKEND=go|xla:cpu] [NOTEBOOKS_JOBS=N]   run every notebook headless;
#       fails on a failing cell (also the ones GoNB reports as OK) and names it; executed copies and
#       HTML go to build/notebooks/<backend>/; two notebooks at a time on ≥ 2 cores (NOTEBOOKS_JOBS=1:
#       one at a time)
#   make notebooks-selftest    the runner fails on panics, exit codes, signals, failing shell cells,
#       compile errors and a planted mhalib error (in a temporary copy of the tree)
#   make lab-check [LAB_SCREENSHOT=build/lab/01_qkv_projection.png]   start make lab on a free port,
#       list and open a notebook over HTTP, run it in the server's GoNB kernel, screenshot it (Chromium)
#   make notebooks-ci          what CI runs: the notebooks on go and on xla:cpu, the self-test, lab-check;
#       under CI (CI=true, 1 or yes) first make notebooks-goimports-trap
#   make notebooks-goimports-trap   put GoMLX v0.28.2 in the Go module cache and rebuild goimports'
#       index of it, so that a notebook using a package it does not import fails (GoNB's goimports
#       would add v0.28's github.com/gomlx/gomlx/core/tensors, and the cell's go get fails) —
#       as it does on a laptop that once fetched a newer GoMLX. goimports reads the index that gopls
#       writes in $${XDG_CACHE_HOME:-~/.cache}/goimports and walks the module cache where there is
#       none; x/tools' gomodindex (the goimports version of scripts/pins.env) updates a stale one.
#       notebooks_test.go's TestNotebooksImportWhatTheyUse checks the same without running anything.
NOTEBOOKS_BACKEND ?= go
NOTEBOOKS_JOBS ?=
NOTEBOOKS_SETUP := go,cc,gomod,minilm,smollm2,jupyter,gonb
comma := ,

LAB_SCREENSHOT ?= build/lab/01_qkv_projection.png

.PHONY: lab lab-check notebooks notebooks-selftest notebooks-ci notebooks-goimports-trap

lab:
	scripts/lab.sh

lab-check:
	"$$(scripts/jupyter_python.sh)" scripts/lab_check.py $(if $(LAB_SCREENSHOT),--screenshot $(LAB_SCREENSHOT))

notebooks:
	scripts/setup.sh --only $(NOTEBOOKS_SETUP)$(if $(filter xla:cpu,$(NOTEBOOKS_BACKEND)),$(comma)xla-cpu)
	"$$(scripts/jupyter_python.sh)" scripts/notebooks.py --backend $(NOTEBOOKS_BACKEND) $(if $(NOTEBOOKS_JOBS),--jobs $(NOTEBOOKS_JOBS))

notebooks-selftest:
	scripts/setup.sh --only $(NOTEBOOKS_SETUP)
	scripts/notebooks_selftest.sh

# CI_ON is non-empty when CI says "true", "1" or "yes" (the values internal/testenv accepts).
CI_ON := $(filter true 1 yes,$(CI))
GOIMPORTS_TRAP_MODULE := github.com/gomlx/gomlx@v0.28.2

notebooks-goimports-trap:
	cd / && $(GO) mod download $(GOIMPORTS_TRAP_MODULE)
	. scripts/pins.env && cd / && \
		$(GO) run golang.org/x/tools/internal/modindex/gomodindex@$$GOIMPORTS_VERSION update

notebooks-ci:
	$(if $(CI_ON),$(MAKE) notebooks-goimports-trap)
	$(MAKE) notebooks NOTEBOOKS_BACKEND=go
	$(MAKE) notebooks NOTEBOOKS_BACKEND=xla:cpu
	$(MAKE) notebooks-selftest
	$(MAKE) lab-check LAB_SCREENSHOT=

# ---- Committed training runs (notebooks/induction) --------------------------------------------
#   make induction-fixtures   retrain the runs notebooks 07 and 11 read (notebooks/induction/testdata)
#       from their seeds on xla:cpu (~1 min); TestFixturesAreFresh checks the files equal a fresh run
.PHONY: induction-fixtures
induction-fixtures:
	scripts/setup.sh --only go,cc,gomod,xla-cpu
	$(GO) run ./notebooks/induction/fixtures

# ---- Real models (models/, scripts/minilm.sh) ------------------------------------------------
#   make minilm-fixtures   rewrite models/minilm/testdata with Hugging Face tokenizers and transformers
#   make parity-minilm     the same references regenerated live into build/parity-minilm, and the
#                          models/minilm parity tests run on them (make test runs it)
MINILM_DIR ?= $${MHALAB_MODELS:-$${XDG_CACHE_HOME:-$$HOME/.cache}/mhalab/models}/all-minilm-l6-v2
.PHONY: minilm-fixtures parity-minilm
parity-minilm: setup
	rm -rf build/parity-minilm && mkdir -p build/parity-minilm
	$(PARITY_PYTHON) models/minilm/gen_fixture.py --out build/parity-minilm --model $(MINILM_DIR)
	MHALAB_MINILM_REFERENCE=$(abspath build/parity-minilm) $(GO) test -count=1 \
		-run 'TestTokenizerMatchesHuggingFace|TestParityWithTransformers|TestEmbeddingsMatchSentenceTransformers' ./models/minilm/

minilm-fixtures:
	scripts/setup.sh --only torch,minilm
	$(PARITY_PYTHON) models/minilm/gen_fixture.py --out models/minilm/testdata --model $(MINILM_DIR)

# ---- JupyterHub on Kubernetes (deploy/z2jh, docker/README.md section "Kubernetes") -----------
#   make z2jh-check      go test ./deploy/z2jh/ with kubernetes-validate installed first (PyPI, hash-pinned)
#   make z2jh-singleuser [Z2JH_IMAGE=localhost/mhalab:slim]   the image started as KubeSpawner starts it (podman or docker)
Z2JH_IMAGE ?= localhost/mhalab:slim
.PHONY: z2jh-validator z2jh-check z2jh-singleuser
z2jh-validator:
	deploy/z2jh/install-validator.sh
z2jh-check: z2jh-validator
	$(GO) test -count=1 -v ./deploy/z2jh/
z2jh-singleuser:
	deploy/z2jh/singleuser-check.sh $(Z2JH_IMAGE)

# ---- Docs (docs/docs.md) ---------------------------------------------------------------------
#   make docs          rewrite every generated part of README.md and docs/: console outputs, Go
#                      snippets copied from their compiled files, the notebook and lesson tables,
#                      docs/performance.md from docs/bench/*.json, and cmd/mhalab/BAD_INPUTS.md
.PHONY: docs
docs:
	$(GO) generate ./docs
	$(GO) generate ./cmd/mhalab

# ---- The course as a web site (docs/teachers.md) ---------------------------------------------
#   make book          build/book/html: the executed notebooks (build/notebooks/xla-cpu, from make
#                      notebooks NOTEBOOKS_BACKEND=xla:cpu: nothing is executed again), the lessons'
#                      READMEs and docs/, built with Jupyter Book 2 (scripts/book.py); a plain folder.
#                      BOOK_NOTEBOOKS=build/notebooks/go takes the pure-Go run's outputs instead
#   make book-check    every page in headless Chromium: no failed or external request, images and
#                      formulas rendered, links resolve, search works; screenshots in build/book/screenshots
BOOK_PYTHON ?= $${MHALAB_BOOK_VENV:-$${XDG_CACHE_HOME:-$$HOME/.cache}/mhalab/book-venv}/bin/python
BOOK_NOTEBOOKS ?= build/notebooks/xla-cpu
.PHONY: book book-check book-test
# book-test (make test): book and book-check; without Node.js it skips, saying so, except under CI.
book-test:
	@if ! command -v node >/dev/null 2>&1 && ! [[ "$${CI,,}" =~ ^(true|1|yes)$$ ]]; then \
		echo "==> make book skipped: no Node.js on PATH (make book needs Node.js >= 18)"; \
	else $(MAKE) --no-print-directory book book-check; fi
book:
	scripts/setup.sh --only book
	$(BOOK_PYTHON) scripts/book.py --notebooks $(BOOK_NOTEBOOKS)
book-check:
	python3 scripts/book_check.py

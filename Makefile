# trainium.eks developer entry points. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= $(CURDIR)/.venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-requirements
export PATH := $(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

.PHONY: help system-deps setup lock lint sanity units integration molecule build ee test bench bench-pipeline bench-scale site teardown rehearsal-up rehearsal-down changelog clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r requirements.txt
	@touch $(STAMP)

# checkov (the end-to-end test's manifest check) in a virtualenv of its own:
# its ~100 dependencies stay apart from the collection's.
CHECKOV_VENV ?= $(CURDIR)/.venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed-requirements

$(CHECKOV_STAMP): requirements-checkov.txt
	@test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --require-hashes --no-deps -r requirements-checkov.txt
	@touch $(CHECKOV_STAMP)

.collections/ansible_collections/trainium/eks:
	@mkdir -p .collections/ansible_collections/trainium
	@ln -sfn ../../.. .collections/ansible_collections/trainium/eks

system-deps:
	@tools/system-deps.sh

setup: system-deps $(STAMP) $(CHECKOV_STAMP) .collections/ansible_collections/trainium/eks ## Debian packages, virtualenv with every pinned dependency (idempotent)
	@echo "setup: ansible-core $$($(BIN)/python -c 'import ansible.release as r; print(r.__version__)'), collections linked under .collections/"

# pip-tools in a virtualenv of its own: requirements.txt does not pin it.
LOCK_VENV := $(CURDIR)/.build/lock-venv
PIP_COMPILE := $(LOCK_VENV)/bin/pip-compile --quiet --no-emit-find-links --generate-hashes --allow-unsafe --strip-extras

lock: ## Re-resolve requirements.in and requirements-checkov.in into their .txt files with hashes
	@test -x $(LOCK_VENV)/bin/pip-compile || { $(PYTHON) -m venv $(LOCK_VENV) && $(LOCK_VENV)/bin/python -m pip install --quiet pip-tools==7.7.0; }
	$(PIP_COMPILE) --output-file requirements.txt requirements.in
	$(PIP_COMPILE) --output-file requirements-checkov.txt requirements-checkov.in

lint: setup ## ansible-lint (production profile) and yamllint
	$(BIN)/yamllint --strict .
	$(BIN)/ansible-lint

sanity: setup ## ansible-test sanity from an ansible_collections/trainium/eks copy
	tools/sanity.sh

units: setup ## Unit tests (no services)
	$(BIN)/pytest tests/unit

integration: setup ## Integration and rehearsal tests against the rehearsal services (parallel: pytest.ini)
	tools/with-rehearsal.sh $(BIN)/pytest tests/rehearsal tests/integration

molecule: setup ## Molecule scenarios against the rehearsal services
	tools/with-rehearsal.sh $(BIN)/molecule test --all

build: setup ## Build the collection, install the tarball elsewhere, run a playbook from it
	tools/build-check.sh

ee: setup ## The execution environment's build context in .build/ee, base image pinned by digest (EE_BASE_IMAGE_DIGEST=sha256:... pins it offline; then podman build, see docs/awx.md)
	rm -rf .build/ee-collection .build/ee
	$(BIN)/python tools/ee-lock.py --check
	$(BIN)/ansible-galaxy collection build --force --output-path .build/ee-collection .
	$(BIN)/ansible-builder create -f execution-environment.yml --context .build/ee
	EE_BASE_IMAGE_DIGEST='$(EE_BASE_IMAGE_DIGEST)' $(BIN)/python tools/ee-pin-base.py -f execution-environment.yml --context .build/ee

test: setup ## Every suite; the test command README gives
	tools/run-tests.sh

bench: setup ## Time a no-op site.yml on the converged local rehearsal (docs/benchmarks.md)
	tools/rehearsal/rehearsal.sh up
	tools/bench/noop-site.sh --runs 3 --teardown

bench-pipeline: setup ## site.yml from an empty account with AWS creation times emulated: stage times, overlap, no-op rerun (docs/benchmarks.md)
	tools/rehearsal/rehearsal.sh up
	$(BIN)/python tools/bench/pipeline.py

bench-scale: setup ## 1,000 fake trn1 nodes: a 1,000-node job to Running, then status.yml, on a private rehearsal (docs/benchmarks.md)
	$(BIN)/python tools/bench/scale-nodes.py

site: setup ## Run site.yml on the local rehearsal (starts it when needed)
	tools/rehearsal/rehearsal.sh up
	source .rehearsal/env.sh && $(BIN)/ansible-playbook site.yml -i inventories/local

teardown: setup ## Run site.yml --tags teardown on the local rehearsal (removes what `make site` created)
	tools/rehearsal/rehearsal.sh up
	source .rehearsal/env.sh && $(BIN)/ansible-playbook site.yml -i inventories/local --tags teardown

aws-acceptance: setup ## The acceptance run for a real account: INVENTORY=inventories/aws CONFIRM=<cluster name> (docs/acceptance.md)
	$(BIN)/ansible-playbook playbooks/aws_acceptance.yml -i '$(or $(INVENTORY),inventories/aws)' $(if $(CONFIRM),-e 'trainium_acceptance_confirm=$(CONFIRM)')

rehearsal-up: setup ## Start the local rehearsal services
	tools/rehearsal/rehearsal.sh up

rehearsal-down: ## Stop the local rehearsal services
	tools/rehearsal/rehearsal.sh down

changelog: setup ## Lint the changelog fragments
	$(BIN)/antsibull-changelog lint

clean: ## Remove build output (keeps the virtualenv)
	rm -rf .build tests/output *.tar.gz

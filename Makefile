# GPU node provisioning and burn-in. `make` lists the targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

INVENTORY ?= sim
NODES ?= 4
PROFILE ?= h100-sxm5-80g-ndr
LIMIT ?=
TAGS ?=
RUN_ID ?=
PYTEST_ARGS ?=

VENV := .venv
PROVISION := $(VENV)/bin/provision
APT_PACKAGES := debootstrap openssh-client apt-utils gnupg util-linux coreutils
RUN_ARGS := -i $(INVENTORY) $(if $(LIMIT),--limit $(LIMIT)) $(if $(RUN_ID),--run-id $(RUN_ID))

.PHONY: help setup provision install burnin sim-up sim-down sim-status lint test

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'
	@echo "  variables: INVENTORY=$(INVENTORY) (a folder under inventory/ or a path), NODES, PROFILE, LIMIT, TAGS, RUN_ID"

setup: $(VENV)/.setup-done ## Install everything: apt packages, the virtualenv, the simulated rack's base root
	@$(PROVISION) sim base

$(VENV)/.setup-done: pyproject.toml
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "setup: apt-get install $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi
	@test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	@$(VENV)/bin/pip install -q -e '.[dev]'
	@touch $@

provision: setup ## The main job: install the GPU stack on INVENTORY, then burn it in
	$(PROVISION) run $(RUN_ARGS) $(if $(TAGS),--tags $(TAGS))

install: setup ## Install the stack only (Ansible roles)
	$(PROVISION) install $(RUN_ARGS) $(if $(TAGS),--tags $(TAGS))

burnin: setup ## Burn in only
	$(PROVISION) burnin $(RUN_ARGS)

sim-up: setup ## Start the simulated rack (NODES, PROFILE)
	$(PROVISION) sim up --nodes $(NODES) --profile $(PROFILE)

sim-down: setup ## Stop the simulated rack
	$(PROVISION) sim down

sim-status: setup ## Show the simulated rack
	$(PROVISION) sim status

lint: setup ## ansible-lint (production profile) and yamllint
	$(VENV)/bin/yamllint -s .
	$(VENV)/bin/ansible-lint

test: setup lint ## Lint, then run the tests (unit and the simulated-rack integration test)
	$(VENV)/bin/pytest -q $(PYTEST_ARGS)

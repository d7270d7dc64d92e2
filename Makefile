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
# The unit tests run in parallel (pytest-xdist), one worker per CPU: `make unit UNIT_WORKERS=0` runs them in one process.
UNIT_WORKERS ?= auto

VENV := .venv
PROVISION := $(VENV)/bin/provision
# Every controller: Ansible's SSH connection.
APT_PACKAGES := openssh-client coreutils ipmitool
# The simulated rack only: its base root (debootstrap, mount, chroot), its nodes (unshare), its signed
# package repositories (apt-ftparchive, gpg; for Rocky 9 nodes rpm's rpmbuild and rpmsign, createrepo_c).
# Installed by sim-base, so a real site's controller lacks them. Each program's package:
# provision/external.py, checked by tests/unit/test_external.py.
SIM_APT_PACKAGES := debootstrap mount util-linux dpkg apt-utils gnupg rpm createrepo-c
# The tests only: a real Slurm (slurmctld, slurmd, scontrol) and munge on this machine, for
# tests/integration/test_slurm_drain.py (`provision burnin --drain slurm`). Installed by test.
TEST_APT_PACKAGES := slurmctld slurmd slurm-client munge
# Headless Chromium opens the HTML report (tests/unit/report/test_html.py: screenshot and DOM);
# cmake and a C++ compiler build the simulated nvbandwidth tree (tests/unit/sim/test_sources.py);
# pgrep finds leftover tools (tests/integration/test_main_job.py); ip makes the network namespaces of
# nodes behind a bastion (tests/integration/hidden_net.py); clush is bench/fanout.py's yardstick.
TEST_APT_PACKAGES += chromium cmake g++ procps iproute2 clustershell
# slurmd inside a simulated node needs the libraries ldconfig finds (libc-bin); the health_check role's wrapper is
# checked with sh -n; LBNL NHC's own drain helpers run by bash (tests/integration/test_nhc_oracle.py) (all three
# essential: always there, named for the record).
TEST_APT_PACKAGES += libc-bin dash bash
RUN_ARGS := -i $(INVENTORY) $(if $(LIMIT),--limit $(LIMIT)) $(if $(RUN_ID),--run-id $(RUN_ID))
# INVENTORY as `provision -i` reads it (the path if it exists, else inventory/NAME); only the
# embedded default (inventory/sim) needs the simulated base, a real site never builds it.
INVENTORY_DIR := $(firstword $(wildcard $(INVENTORY)) $(wildcard inventory/$(INVENTORY)))
SIM_BASE := $(if $(and $(INVENTORY_DIR),$(filter $(realpath inventory/sim),$(realpath $(INVENTORY_DIR)))),sim-base)

# $(call apt_install,PACKAGES): apt-get install those of PACKAGES that are missing.
define apt_install
@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
if [ -n "$$missing" ]; then echo "apt-get install $$missing"; \
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi
endef

.PHONY: help setup sim-base provision install burnin sim-up sim-down sim-status lint unit test collection

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'
	@echo "  variables: INVENTORY=$(INVENTORY) (a folder under inventory/ or a path), NODES, PROFILE, LIMIT, TAGS, RUN_ID"

setup: $(VENV)/.setup-done ## Install the controller's apt packages and the virtualenv

# The tested set (requirements.lock) as constraints: pyproject.toml's ranges pick exactly the locked versions.
$(VENV)/.setup-done: pyproject.toml requirements.lock
	$(call apt_install,$(APT_PACKAGES))
	@test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	@$(VENV)/bin/pip install -q -c requirements.lock -e '.[dev]'
	@touch $@

sim-base: setup ## The simulator only: its apt packages and the nodes' base root (debootstrap, once)
	$(call apt_install,$(SIM_APT_PACKAGES))
	@$(PROVISION) sim base

provision: setup $(SIM_BASE) ## The main job: install the GPU stack on INVENTORY, then burn it in
	$(PROVISION) run $(RUN_ARGS) $(if $(TAGS),--tags $(TAGS))

install: setup $(SIM_BASE) ## Install the stack only (Ansible roles)
	$(PROVISION) install $(RUN_ARGS) $(if $(TAGS),--tags $(TAGS))

burnin: setup $(SIM_BASE) ## Burn in only
	$(PROVISION) burnin $(RUN_ARGS)

sim-up: sim-base ## Start the simulated rack (NODES, PROFILE)
	$(PROVISION) sim up --nodes $(NODES) --profile $(PROFILE)

sim-down: setup ## Stop the simulated rack
	$(PROVISION) sim down

sim-status: setup ## Show the simulated rack
	$(PROVISION) sim status

lint: setup ## yamllint, ansible-lint (production profile), ruff, mypy and the import-linter layer contracts
	$(VENV)/bin/yamllint -s .
	$(VENV)/bin/ansible-lint
	$(VENV)/bin/ruff check provision tests bench tools
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

unit: setup ## The fast tests only: tests/unit (no simulated rack, no lint, no debootstrap)
	$(call apt_install,$(TEST_APT_PACKAGES))
	$(VENV)/bin/pytest -q -n $(UNIT_WORKERS) tests/unit $(PYTEST_ARGS)

test: sim-base lint ## Lint, then run the tests (unit and the simulated-rack integration test)
	$(call apt_install,$(TEST_APT_PACKAGES))
	$(VENV)/bin/pytest -q -n $(UNIT_WORKERS) tests/unit $(PYTEST_ARGS)
	$(VENV)/bin/pytest -q --durations=15 tests/integration $(PYTEST_ARGS)

collection: setup ## Build the roles and playbooks as the Ansible collection provision.gpu (dist/provision-gpu-*.tar.gz)
	$(VENV)/bin/ansible-galaxy collection build --force --output-path dist .

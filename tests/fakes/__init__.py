"""Test doubles for what onechip talks to: vllm_server.py is the one fake vLLM server (in a thread or as a
process standing in for `vllm serve`), used by every test that needs an engine endpoint."""

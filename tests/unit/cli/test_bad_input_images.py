"""Helper 'images' (2026-12-04): image references as docker's grammar reads them, and secret shapes refused alike."""

from __future__ import annotations

import shlex

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")

# a Hugging Face token as secret scanners match it: hf_ and 34 letters and digits (errors.HF_TOKEN_SHAPE)
TOKEN = "hf_FAKEtoken0123456789abcdefghijklmnop"


@pytest.mark.parametrize(
    "image", ["[::1]:5000/vllm:v1", "[2001:db8::1]/team/vllm-openai", "[fe80::1]:443/v@sha256:" + "a" * 64]
)
def test_an_ipv6_registry_is_taken_as_the_image(run, image: str) -> None:
    # was refused as 'not an image reference': distribution/reference regexp.go (since v0.5.0) has host =
    # domainName | ipv6address, ipv6address = `\[(?:[a-fA-F0-9:]+)\]`, before the optional port; the docker line
    # quotes it (the brackets are a shell glob)
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--image", image)
    assert code == 0 and f" {shlex.quote(image)} serve " in out, err


@pytest.mark.parametrize("image", ["[::1/vllm", "[fe80::1%eth0]:5000/vllm", "[::g]/vllm", "[]/vllm"])
def test_a_bracketed_host_outside_the_grammar_is_refused(run, image: str) -> None:
    # regexp.go: hex digits and ':' between the brackets only (no zone identifier, closed bracket, not empty)
    line = one_error_line(run, "plan", "SmolLM2-135M-Instruct", "--chip", "l4", f"--image={image}")
    assert line.startswith("Invalid value for '--image': image: not an image reference")


@pytest.mark.parametrize(
    ("item", "kept"),
    [("load-format=hf_transfer_ok", "--load-format hf_transfer_ok"), ("VLLM_X=hf_transfer", "VLLM_X=hf_transfer")],
)
def test_a_set_value_named_after_hf_transfer_is_no_secret(run, item: str, kept: str) -> None:
    # was 'a token never goes on the command line': --set refused hf_ and 8 letters (the redaction's loose shape)
    # where --image refuses only a token's full shape (hf_ and 34 letters and digits)
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--set", item)
    assert code == 0 and kept in out, err


@pytest.mark.parametrize("item", [f"load-format={TOKEN}", f"VLLM_X={TOKEN}", f"served-model-name=m-{TOKEN}"])
def test_a_set_value_shaped_as_a_token_is_refused_without_echoing_it(run, item: str) -> None:
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--set", item)
    assert code == 2 and "a token never goes on the command line" in err and TOKEN not in out + err


@pytest.mark.parametrize("item", ["hf-token=mytoken-from-a-vault", "--hf-token=mytoken-from-a-vault"])
def test_vllms_hf_token_flag_is_refused_by_name_in_any_spelling(run, item: str) -> None:
    # 'hf-token=...' (vLLM's --hf-token, vllm/engine/arg_utils.py) was refused only when its value had the hf_ shape,
    # or when spelled '--hf-token': a token of any other shape went into the plan, the dry run and ps
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--set", item)
    assert code == 2 and "a token never goes on the command line" in err and "mytoken" not in out + err

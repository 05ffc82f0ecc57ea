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


# An HF_TOKEN of no known shape: the user's own token (a fine-grained or an enterprise one), known by its source
ENV_TOKEN = "plainEnvSecretValue42"
AWS_KEY = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"  # AWS's documented example secret access key


SERVE_WORDS = [
    ["--set", f"served-model-name=x{TOKEN}"],  # the token whole, glued to a word
    ["--set", f"VLLM_X={ENV_TOKEN}"], ["--set", f"served-model-name={AWS_KEY}"],
    ["--launcher", f"python3 -m my.server --key {ENV_TOKEN}"], ["--launcher", TOKEN], ["--host", f"user@{TOKEN}"],
]  # fmt: skip
SSH_WORDS = [  # up's alone (plan takes no --ssh-opt)
    ["--host", "user@h", "--ssh-opt", f"ProxyCommand=curl -H 'Authorization: Bearer {ENV_TOKEN}' x"],
    ["--host", "user@h", "--ssh-opt", f"IdentityFile=/keys/{TOKEN}"],
]


@pytest.mark.parametrize(
    ("command", "argv"), [(c, a) for c in ("plan", "up") for a in SERVE_WORDS] + [("up", a) for a in SSH_WORDS]
)
def test_a_secret_in_any_command_line_word_is_refused_without_echoing_it(run, monkeypatch, argv, command) -> None:
    # each was printed by plan and up --dry-run (the docker/ssh lines, the flag table) and would have been in ps:
    # HF_TOKEN's own value typed into --set or --launcher (it has no hf_ shape to match), a token in an ssh target
    # or option, a token glued to a word; errors.looks_secret now knows secrets by source as redaction does
    monkeypatch.setenv("HF_TOKEN", ENV_TOKEN)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_KEY)
    base = ["plan", "SmolLM2-135M-Instruct"] if command == "plan" else ["up", "--dry-run", "--engine", "vllm",
            "--model", "SmolLM2-135M-Instruct"]  # fmt: skip
    code, out, err = run(*base, "--chip", "l4", *argv)
    assert code == 2 and "Traceback" not in err, err
    assert "never goes on" in err and not any(s in out + err for s in (TOKEN, ENV_TOKEN, AWS_KEY))


def test_a_password_in_the_ssh_target_is_refused_without_echoing_it(run) -> None:
    # 'user:pw@addr' was planned as the ssh target (ssh reads 'user:pw' as the user name) and printed in every
    # ssh line of up --dry-run; no redaction shape matched it (a URL's password needs '://')
    line = one_error_line(run, "up", "--dry-run", "--engine", "vllm", "--model", "SmolLM2-135M-Instruct", "--chip",
                          "l4", "--host", "me:s3cretpw99@gpu.example.com")  # fmt: skip
    assert "s3cretpw99" not in line and line.startswith("--host: user:PASSWORD@addr is no ssh target")


def test_an_ipv6_ssh_target_is_no_password(run) -> None:
    # the ':' rule reads the user part only: 'user@fe80::1' is an address ssh takes
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--host", "me@fe80::1")
    assert code == 0 and "me@fe80::1" in out, err


def test_a_long_refused_value_cut_for_the_error_line_keeps_no_piece_of_a_secret(run, monkeypatch) -> None:
    # schemas.inputs.shown cuts an echoed value to 80 characters; cut inside HF_TOKEN's value, the piece left
    # ('plainEnvS') was no longer the value the error line's redaction replaces, and was printed
    monkeypatch.setenv("HF_TOKEN", ENV_TOKEN)
    value = "x" * 50 + ENV_TOKEN + "y" * 20
    line = one_error_line(run, "plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--engine-version", value)
    assert line.startswith("Invalid value for '--engine-version'") and ENV_TOKEN[:5] not in line
    assert "'" + "x" * 50 + "***" + "y" * 20 + "'" in line

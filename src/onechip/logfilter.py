"""The redacting filter an engine's output goes through where no onechip runs: a host's serve.sh (engines.remote), as
bash lines. Its Python twin is onechip.logpump, a local engine's. A container's own log (`docker logs`) does not go
through it (README: what remains).

A secret is, as errors.redact has it: the value (errors.MIN_SECRET_CHARS or more) of an environment variable whose name
says one (errors.SECRET_NAME: HF_TOKEN, sourced from the 0600 hf_token.env; VLLM_API_KEY), but
for one naming a file (errors._PATH_NAME and errors.names_a_path, spelled in bash: the name read upper-cased, a
value kept only where it reads as a path), and a Hugging Face token's shape (errors.HF_SHAPE). The
values are read from the environment and reach sed as its script through a pipe (bash's process substitution,
/dev/fd/N): never an argv (`ps`), never a file; longest first, so that a value holding another is redacted whole.

It runs `tr` then `sed`, coreutils and sed being Essential packages on every Debian and Ubuntu image (a TPU VM's, the
vllm/vllm-openai image's): bash's `read` of a pipe takes one byte a syscall, 2 MB/s here (50 MB in 24 s; sed 0.7 s),
and an engine printing faster blocked on its own log. A '\\r' (a progress bar's, which ends no line for minutes) becomes
a line end, so each update reaches the log as it comes (log_summary.LINE_END is '\\n' for every reader); `stdbuf`
(coreutils) makes each write at once, where it is missing the output goes by sed's blocks, never lost. A last line
without an end is written as it is (GNU sed keeps it so).
"""

from __future__ import annotations

from onechip.errors import HF_SHAPE, MIN_SECRET_CHARS, SECRET_NAME

# escapes every character an ERE (sed -E) or the s command's '/' gives a meaning to, so a value matches itself alone
_ESCAPE = r"s/[][\/.*^$+?(){}|]/\\&/g"

FILTER_FUNCTION = [
    "onechip_redact() {",
    '  command -v stdbuf >/dev/null || stdbuf() { shift; "$@"; }',
    "  local name upper value script",
    "  script=$(for name in $(compgen -e); do",
    "    upper=${name^^} value=${!name}",
    f"    [[ $upper =~ {SECRET_NAME.pattern} ]] || continue",
    # errors.names_a_path: a value kept where a secret is kept's name reads as a file's path, and only then
    "    [[ $upper == GOOGLE_APPLICATION_CREDENTIALS || $upper == *_FILE || $upper == *_PATH ]] &&"
    " [[ -n $value && $value != *[[:space:]@:]* && $value != '{'* ]] && [[ $value == /* || $value == '~/'* ||"
    " $value == ./* || $value == ../* || $value == */* && ${value##*/} =~ [^.]\\.+[^.] ]] && continue",
    # sed reads a line at a time: a value over two lines never stands whole on one
    f"    [ ${{#value}} -ge {MIN_SECRET_CHARS} ] && [[ $value != *$'\\n'* ]] && printf '%s\\n' \"$value\"",
    "  done | awk '{ print length($0) \"\\t\" $0 }' | sort -rn | cut -f2- | "
    f"sed -e '{_ESCAPE}' -e 's/.*/s\\/&\\/***\\/g/')",
    f"  stdbuf -o0 tr '\\r' '\\n' | stdbuf -oL sed -E -f <(printf '%s\\n' \"$script\" 's/{HF_SHAPE.pattern}/***/g')",
    "}",
]

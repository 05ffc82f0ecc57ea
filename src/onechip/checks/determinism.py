"""Determinism probe: the same prompts twice at temperature 0 must come back byte-identical.

The seed's own quality probe reported "8/9 byte-identical outputs" on a v5e; this reports the same
count (identical / pairs). All identical → pass, some → partial, none → fail. What is compared is all the generated
text: the reasoning a reasoning parser splits off (`reasoning_content`) and the content. An empty answer (neither
has text) fails its probe, as the chat smoke probe fails one: at temperature 0 with max_tokens ≥ 1 it is the server
not answering, and two empty answers are identical without showing anything of determinism.
"""

from __future__ import annotations

from onechip.checks.verdicts import combine, failed
from onechip.errors import EndpointError
from onechip.schemas.checks import CheckOptions, CheckResult, Probe
from onechip.vllm.wire import WireClient, chat_body, user_message

PROMPTS = [
    "List three colours of the rainbow, separated by commas.",
    "Write one sentence about the sea.",
    "Name two planets of the solar system.",
    "Count from one to five in words.",
    "Give a one-line definition of a cache.",
]


def check_determinism(ep: WireClient, model: str, opts: CheckOptions) -> CheckResult:
    """Domain `determinism`: one probe per prompt (`same_output_<i>`), each sent twice at temperature 0."""
    probes: list[Probe] = []
    empty_pairs = 0
    for i in range(opts.determinism_prompts):
        prompt = PROMPTS[i % len(PROMPTS)] + ("" if i < len(PROMPTS) else f" (variant {i})")
        body = chat_body(model, user_message(prompt), opts.determinism_max_tokens, seed=0)
        try:
            a = ep.chat(body)
            b = ep.chat(body)
        except EndpointError as exc:
            probes.append(Probe(name=f"same_output_{i}", verdict=failed(exc), note=str(exc)))
            continue
        blank = [  # the usage and finish_reason say why: no tokens at all, or only whitespace generated
            f"{which} answer empty (completion_tokens {r.completion_tokens}, finish_reason {r.finish_reason})"
            for which, r in (("first", a), ("second", b))
            if not (r.content.strip() or r.reasoning.strip())
        ]
        same = not blank and (a.reasoning, a.content) == (b.reasoning, b.content)
        if blank:
            note = "; ".join(blank) + ": the server gave no answer to compare"
            empty_pairs += 1
        else:
            note = "" if same else "outputs differ at temperature 0"
        probes.append(
            Probe(
                name=f"same_output_{i}",
                verdict="pass" if same else "fail",
                latency_ms=round(a.latency_ms + b.latency_ms, 1),
                observed={"first": a.reasoning + a.content, "second": b.reasoning + b.content},
                expected="byte-identical, non-empty",
                note=note,
            )
        )
    identical = sum(p.verdict == "pass" for p in probes)
    return CheckResult(
        domain="determinism",
        verdict=combine(probes),
        probes=probes,
        conditions={"temperature": "0", "seed": "0", "max_tokens": str(opts.determinism_max_tokens)},
        note=f"{identical}/{len(probes)} byte-identical"
        + (f", {empty_pairs} with an empty answer" if empty_pairs else ""),
    )

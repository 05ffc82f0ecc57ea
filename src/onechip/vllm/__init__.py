"""Everything onechip knows about vLLM, in one place, working on schemas only.

    flags    serve_command(plan, target) -> ServeCommand: argv, env and the docker/ssh wrapping, each flag
             with its reason and source; `plan` prints it, `up` runs it, the report shows it
    bootlog  one grammar from boot-log text to BootRecord (TPU, GPU, CPU lines, versions) and
             crosscheck(plan, boot)
    wire     request payloads, SSE parsing, error bodies, and the models / tokenize / metrics / health
             calls that bench, checks and readiness share

Sits directly above schemas/ and catalog/; the planner, engines, bench and checks import it, never the
other way round.
"""

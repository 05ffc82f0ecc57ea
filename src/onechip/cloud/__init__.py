"""Getting the chip: Cloud TPU capacity through the TPU API (REST), for `onechip cloud` and `demo --cloud gcp`.

    auth.py       Application Default Credentials (google-auth, optional extra `onechip[cloud]`), or none
                  when ONECHIP_TPU_API_ENDPOINT points the API at another base URL (tests: a loopback fake)
    tpu_api.py    the one REST client: v2 nodes, v2alpha1 queued resources (flex-start), long-running
                  operations, Secret Manager's versions:access; timeouts, retries of transient failures,
                  pages, and an endpoint that is not the TPU API told apart
    refusals.py   stockout vs quota vs unsupported provisioning model vs expiry, by code (then details,
                  then message)
    offers.py     chip key -> API spelling, zone observations (catalog + probes), the price quote
    records.py    what onechip created, keyed by (project, zone, kind, name) under onechip's home, and
                  every zone it used, so status/down/--again find all of it
    provision.py  probe, up (three provisioning models, zone failover, cleanup, names reused), up_set (N
                  TPUs as one set: deleted whole when it cannot be completed), status, down; every state
                  of both state enums, by what it means

Sits beside engines/ above planner/ (DESIGN.md); it never imports bench, checks, cost, report, api or cli.
"""

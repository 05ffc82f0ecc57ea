"""A resume refused for a config that differs names what the user typed: the flag ('--clients'), and its values as
typed ('2', '128,1024'), not the config's field and repr ('clients was [2]', where the user wrote --clients 2)."""

from __future__ import annotations

from onechip.bench.runner import config_difference
from onechip.schemas.bench import BenchConfig

URL = "http://127.0.0.1:9"


def test_a_differing_list_names_its_flag_and_its_values_as_typed() -> None:
    old = BenchConfig(base_url=URL, contexts=[128, 1024], clients=[2])
    assert config_difference(old, old.model_copy(update={"clients": [3, 4]})) == "--clients was 2, now 3,4"
    assert config_difference(old, old.model_copy(update={"contexts": [128]})) == "--contexts was 128,1024, now 128"


def test_a_differing_scalar_names_its_flag_and_the_url_its_argument() -> None:
    old = BenchConfig(base_url=URL, requests_per_client=4)
    # requests_per_client is typed --requests-per-client (schemas.inputs.flag_of: '--' + the field name, dashed)
    assert config_difference(old, old.model_copy(update={"requests_per_client": 8})) == (
        "--requests-per-client was 4, now 8"
    )
    # the server's URL is bench's argument, URL on its usage line (BenchConfig base_url: Cli("url", argument=True))
    other = old.model_copy(update={"base_url": "http://127.0.0.1:10"})
    assert config_difference(old, other) == f"URL was {URL}, now http://127.0.0.1:10"
    # an option not given stays said so ('model was None' read as a model named None)
    assert config_difference(old, old.model_copy(update={"model": "m"})) == "--model was not given, now m"

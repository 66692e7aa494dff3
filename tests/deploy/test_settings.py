"""Where the code location's locations come from: configuration in a deployment, the checkout's
example data only under the development switch, and the default spec from the package."""

from importlib import resources

import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.definitions import MissingSetting, build_definitions, pipeline_spec
from evaluation_pipeline.io.storage import (
    DEFAULT_LANDING,
    DEFAULT_QUERIES,
    DEFAULT_STORAGE,
    SPEC_FILE,
)
from evaluation_pipeline.spec import load_spec

LOCATIONS = ("NDCG_EVAL_STORAGE", "NDCG_EVAL_LANDING", "NDCG_EVAL_QUERIES")


@pytest.fixture
def deployment(monkeypatch):
    """An environment like a deployment's: no development switch, no location set."""
    monkeypatch.delenv(settings.DEV.name, raising=False)
    for variable in LOCATIONS:
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


@pytest.mark.parametrize("missing", LOCATIONS)
def test_a_missing_location_is_an_error_naming_its_variable(deployment, tmp_path, missing):
    for variable in LOCATIONS:
        if variable != missing:
            deployment.setenv(variable, str(tmp_path / variable.lower()))
    with pytest.raises(MissingSetting, match=rf"^{missing} is not set: .*{settings.DEV.name}=1"):
        build_definitions()


def test_configured_locations_are_used_as_given(deployment, tmp_path):
    for variable in LOCATIONS:
        deployment.setenv(variable, str(tmp_path / variable.lower()))
    resources_ = build_definitions().resources
    assert resources_["storage"].base == str(tmp_path / "ndcg_eval_storage")
    assert resources_["landing"].folder == str(tmp_path / "ndcg_eval_landing")
    assert resources_["landing"].queries_path == str(tmp_path / "ndcg_eval_queries")
    # Arguments win over the environment.
    given = build_definitions(storage_base=str(tmp_path / "given")).resources["storage"]
    assert given.base == str(tmp_path / "given")


def test_the_development_switch_means_the_checkouts_example_data(deployment):
    deployment.setenv(settings.DEV.name, "1")
    resources_ = build_definitions().resources
    assert resources_["storage"].base == str(DEFAULT_STORAGE)
    assert resources_["landing"].folder == str(DEFAULT_LANDING)
    assert resources_["landing"].queries_path == str(DEFAULT_QUERIES)


def test_the_default_spec_is_package_data(deployment, tmp_path):
    packaged = resources.files("evaluation_pipeline") / SPEC_FILE
    assert packaged.is_file()
    with resources.as_file(packaged) as path:
        assert pipeline_spec() == load_spec(path)
    other = tmp_path / "other.yaml"
    other.write_text("profile: trec_eval\ncutoffs: [10]\n")
    deployment.setenv("NDCG_EVAL_SPEC", str(other))
    assert pipeline_spec() == load_spec(other) != load_spec(path)

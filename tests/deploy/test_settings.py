"""Where the code location's locations come from: configuration in a deployment, the checkout's
example data only under the development switch, and the default spec from the package. Every
variable, listed once here, is the declarations' (settings.py), and so are the table of
docs/configuration.md, the component's attributes and the resources' fields."""

import re
from importlib import resources

import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.definitions import (
    ATTRIBUTE_SETTINGS,
    MissingSetting,
    NdcgEvaluation,
    SettingAttributes,
    build_definitions,
    pipeline_spec,
)
from evaluation_pipeline.engines import ENGINES
from evaluation_pipeline.io.storage import (
    DEFAULT_DOCUMENTS,
    DEFAULT_LANDING,
    DEFAULT_QUERIES,
    DEFAULT_STORAGE,
    SPEC_FILE,
)
from evaluation_pipeline.spec import load_spec
from schemas.errors import EvaluationError
from tests.support.paths import REPO

LOCATIONS = ("NDCG_EVAL_STORAGE", "NDCG_EVAL_LANDING", "NDCG_EVAL_QUERIES")
# A location a deployment may leave out: only the judge reads it.
OPTIONAL_LOCATIONS = ("NDCG_EVAL_DOCUMENTS",)


@pytest.fixture
def deployment(monkeypatch):
    """An environment like a deployment's: no development switch, no location set."""
    monkeypatch.delenv(settings.DEV.name, raising=False)
    for variable in LOCATIONS + OPTIONAL_LOCATIONS:
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


@pytest.mark.parametrize("missing", LOCATIONS)
def test_a_missing_location_is_an_error_naming_its_variable(deployment, tmp_path, missing):
    for variable in LOCATIONS:
        if variable != missing:
            deployment.setenv(variable, str(tmp_path / variable.lower()))
    with pytest.raises(MissingSetting, match=rf"^{missing} is not set: .*{settings.DEV.name}=1"):
        build_definitions()


def test_the_documents_table_may_be_left_out(deployment, tmp_path):
    for variable in LOCATIONS:
        deployment.setenv(variable, str(tmp_path / variable.lower()))
    landing = build_definitions().resources["landing"]
    assert landing.documents_path is None and landing.documents_file() is None
    assert settings.DOCUMENTS.default.startswith("unset: none is published")
    assert not settings.DOCUMENTS.required
    assert all(getattr(settings, name.removeprefix(settings.PREFIX)).required
               for name in LOCATIONS)


def test_configured_locations_are_used_as_given(deployment, tmp_path):
    for variable in LOCATIONS + OPTIONAL_LOCATIONS:
        deployment.setenv(variable, str(tmp_path / variable.lower()))
    resources_ = build_definitions().resources
    assert resources_["storage"].base == str(tmp_path / "ndcg_eval_storage")
    assert resources_["landing"].folder == str(tmp_path / "ndcg_eval_landing")
    assert resources_["landing"].queries_path == str(tmp_path / "ndcg_eval_queries")
    assert resources_["landing"].documents_path == str(tmp_path / "ndcg_eval_documents")
    # Arguments win over the environment.
    given = build_definitions(storage_base=str(tmp_path / "given")).resources["storage"]
    assert given.base == str(tmp_path / "given")


def test_the_development_switch_means_the_checkouts_example_data(deployment):
    deployment.setenv(settings.DEV.name, "1")
    resources_ = build_definitions().resources
    assert resources_["storage"].base == str(DEFAULT_STORAGE)
    assert resources_["landing"].folder == str(DEFAULT_LANDING)
    assert resources_["landing"].queries_path == str(DEFAULT_QUERIES)
    assert resources_["landing"].documents_path == str(DEFAULT_DOCUMENTS)
    assert DEFAULT_DOCUMENTS.is_file()


def test_the_default_spec_is_package_data(deployment, tmp_path):
    packaged = resources.files("evaluation_pipeline") / SPEC_FILE
    assert packaged.is_file()
    with resources.as_file(packaged) as path:
        assert pipeline_spec() == load_spec(path)
    other = tmp_path / "other.yaml"
    other.write_text("profile: trec_eval\ncutoffs: [10]\n")
    deployment.setenv("NDCG_EVAL_SPEC", str(other))
    assert pipeline_spec() == load_spec(other) != load_spec(path)


# Every variable users script against, listed once: the NdcgEvaluation attribute that stands for
# it (None: none), and the resource fields that do ("resource key.field").
LISTED = {
    "NDCG_EVAL_STORAGE": ("storage", ["storage.base"]),
    "NDCG_EVAL_STORAGE_OPTIONS": ("storage_options", ["storage.storage_options"]),
    "NDCG_EVAL_LANDING": ("landing", ["landing.folder"]),
    "NDCG_EVAL_QUERIES": ("queries", ["landing.queries_path"]),
    "NDCG_EVAL_DOCUMENTS": ("documents", ["landing.documents_path"]),
    "NDCG_EVAL_SPEC": ("spec", []),
    "NDCG_EVAL_ENGINE": ("engine", ["scoring.engine"]),
    "NDCG_EVAL_SPARK_MASTER": ("spark_master", ["scoring.spark_master"]),
    "NDCG_EVAL_MEMORY_LIMIT": ("memory_limit", ["memory.memory_limit"]),
    "NDCG_EVAL_SPILL_DIR": ("spill_dir", ["memory.spill_dir"]),
    "NDCG_EVAL_NIGHTLY_CRON": ("nightly_cron", []),
    "NDCG_EVAL_NIGHTLY_TIMEZONE": ("nightly_timezone", []),
    "NDCG_EVAL_ALPHA": ("alpha", ["watch.alpha"]),
    "NDCG_EVAL_MIN_EFFECT": ("min_effect", ["watch.min_effect"]),
    "NDCG_EVAL_POWER": ("power", ["watch.power"]),
    "NDCG_EVAL_BASELINE_POOL": ("baseline_pool", ["watch.baseline_pool"]),
    "NDCG_EVAL_ALERT_WEBHOOK": ("alert_webhook", ["watch.alert_webhook"]),
    "NDCG_EVAL_DEV": (None, []),
    "NDCG_EVAL_LOCK_TIMEOUT": (None, []),
    "NDCG_EVAL_BACKFILL_NIGHTS": (None, ["policy.backfill_nights"]),
    "NDCG_EVAL_INCREMENTAL": (None, []),
    "NDCG_EVAL_DATABASE_TIMEOUT": (None, []),
    "NDCG_EVAL_FAIL_WRITE": (None, []),
    "NDCG_EVAL_JUDGE_API_KEY": (None, []),
    "NDCG_EVAL_GATE_MIN_KAPPA": (None, []),
    "NDCG_EVAL_GATE_MIN_TAU": (None, []),
    "NDCG_EVAL_GATE_MIN_OVERLAP": (None, []),
}
REGENERATE = ".venv/bin/python -m evaluation_pipeline.settings docs/configuration.md"


def test_the_declared_variables_are_the_listed_ones():
    assert {setting.name: setting.attribute if setting.is_attribute else None
            for setting in settings.SETTINGS} == {
        name: attribute for name, (attribute, _) in LISTED.items()}


def test_the_configuration_page_carries_the_table_the_declarations_write():
    page = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert settings.with_table(page, "docs/configuration.md") == page, (
        f"docs/configuration.md's table of settings is not the declarations': run {REGENERATE}")
    rows = re.findall(r"^\| `(NDCG_EVAL_[A-Z0-9_]+)` \| (?:`(\w+)`)? \|", page, re.M)
    assert {name: attribute or None for name, attribute in rows} == {
        name: attribute for name, (attribute, _) in LISTED.items()}
    assert len(rows) == len(LISTED)


def test_a_page_without_the_tables_markers_is_refused():
    with pytest.raises(EvaluationError, match="^page.md: the lines .* are not both there"):
        settings.with_table("# Configuration\n", "page.md")


def test_the_component_has_an_attribute_for_each_listed_one_and_its_names():
    listed = {attribute for attribute, _ in LISTED.values() if attribute}
    assert set(SettingAttributes.model_fields) == listed
    assert set(NdcgEvaluation.model_fields) == listed | {"key_prefix", "group_name"}
    schema = NdcgEvaluation.model().model_json_schema()["properties"]
    for name, (attribute, _) in LISTED.items():
        if attribute:
            variable = ATTRIBUTE_SETTINGS[attribute]
            assert variable.name == name
            assert schema[attribute]["description"] == variable.meaning
            assert schema[attribute]["default"] is None  # left out: the variable's


def test_each_resource_field_takes_its_variables_default_and_meaning(deployment):
    deployment.setenv(settings.DEV.name, "1")
    resources_ = build_definitions().resources
    fields = {}
    for name, (_, standing) in LISTED.items():
        variable = next(setting for setting in settings.SETTINGS if setting.name == name)
        for place in standing:
            key, field_name = place.split(".")
            field = type(resources_[key]).model_fields[field_name]
            fields[place] = field
            if variable.required:  # a deployment names it: no default
                assert field.is_required(), place
            else:  # the variable's default, or None: the variable is read when it is used
                assert field.default in (variable.value_default, None), place
            if type(resources_[key]).__module__ == "evaluation_pipeline.orchestration.resources":
                assert field.description.startswith(variable.meaning), place
    assert fields["watch.alpha"].default == 0.05 and fields["watch.min_effect"].default == 0.01
    assert fields["scoring.engine"].default == "auto"


def test_the_engine_choices_are_the_engines():
    assert settings.ENGINE.choices == ENGINES


@pytest.mark.parametrize("variable", [setting for setting in settings.SETTINGS
                                      if setting.values() not in ("text", "a JSON object")],
                         ids=str)
def test_a_value_a_rule_refuses_is_named_with_its_variable(variable):
    with pytest.raises(EvaluationError, match=rf"^{variable.name}='x1' is not "):
        variable.value({variable.name: "x1"})
    with pytest.raises(EvaluationError, match=rf"^{variable.attribute}='x1' is not "):
        variable.given("x1")


def test_each_variable_reads_as_pydantic_settings_reads_them_all(deployment):
    values = {settings.ALPHA: "0.2", settings.BACKFILL_NIGHTS: "0", settings.ENGINE: "spark",
              settings.STORAGE_OPTIONS: '{"anon": true}', settings.LOCK_TIMEOUT: "2.5",
              settings.NIGHTLY_TIMEZONE: "Europe/Berlin", settings.INCREMENTAL: "0",
              settings.MEMORY_LIMIT: "", settings.SPEC: "spec.toml"}
    for variable, text in values.items():
        deployment.setenv(variable.name, text)
    everything = settings.Settings()
    for variable in settings.SETTINGS:
        assert variable.value() == getattr(everything, variable.attribute), variable
    assert (everything.alpha, everything.backfill_nights, everything.storage_options,
            everything.memory_limit) == (0.2, 0, {"anon": True}, "2GB")
    assert (settings.lock_timeout(), settings.backfill_nights(), settings.incremental()) == (
        2.5, 0, False)


def test_the_defaults_keep_their_own_rules(deployment):
    for variable in settings.SETTINGS:
        deployment.delenv(variable.name, raising=False)
    everything = settings.Settings()  # pydantic-settings checks the defaults too
    assert everything.lock_timeout == 1800 and settings.LOCK_TIMEOUT.default == "1800"
    assert settings.STORAGE_OPTIONS.default == "{}" and settings.ENGINE.default == "auto"

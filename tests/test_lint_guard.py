"""False-positive guard: RLlib's own examples, written for the pinned Ray, give no fail findings.

The installed package ships `ray/rllib/examples/` (the Ray 2.60 wheel has no
`tuned_examples/`; it is linted too when present). Warnings there are expected
and right (RLlib's examples still call the deprecated `config.build()`). A fail
finding that is right about RLlib's own code stays a finding: it is named below
with its reason, and the test fails if it goes away (fixed upstream) or a new
one appears.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from conftest import lint_paths

RLLIB = Path(importlib.util.find_spec("ray.rllib").submodule_search_locations[0])
RIGHT_ABOUT_RLLIB = {
    ("examples/multi_agent/pettingzoo_parameter_sharing.py", "kwarg-training-model"):
        "the new API stack ignores .training(model={'vf_share_layers': True}); the "
        "MultiRLModuleSpec's RLModuleSpec() gets model_config vf_share_layers=False, so the value "
        "and policy nets are not shared as written",
    ("examples/envs/classes/recommender_system_envs_with_recsim.py", "import-missing-in-ray"):
        "the wheel has no ray.rllib.env.wrappers.recsim: importing this example raises "
        "ModuleNotFoundError (checked with importlib on 2.60)",
    ("examples/multi_agent/self_play_footsies.py", "import-missing-in-ray"):
        "the wheel has no ray.rllib.examples.algorithms.ppo package: the example's own import of "
        "multi_agent_footsies_ppo raises ModuleNotFoundError (checked with importlib on 2.60)",
}


@pytest.fixture(scope="module")
def rllib_lint(tmp_path_factory):
    paths = [p for p in (RLLIB / "examples", RLLIB / "tuned_examples") if p.exists()]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLDOCTOR_CACHE_DIR", str(tmp_path_factory.mktemp("rldoctor-cache")))
        return lint_paths([str(p) for p in paths])


def test_rllib_examples_lint_without_fail_findings(rllib_lint):
    report, problems, doc = rllib_lint
    assert problems == [], problems
    assert report.errored == []
    assert len(doc["lint"]["files"]) >= 150
    fails = {(str(Path(f.location["path"]).relative_to(RLLIB)), f.evidence["row"])
             for f in report.findings if f.severity.label == "fail"}
    assert fails == set(RIGHT_ABOUT_RLLIB), fails


def test_old_api_stack_code_in_the_examples_is_not_flagged(rllib_lint):
    report, _, _ = rllib_lint
    rows = {(Path(f.location["path"]).name, f.evidence["row"], f.location["line"]) for f in report.findings}
    # compute_single_action runs only when args.old_api_stack is set
    assert not [r for r in rows if r[1] == "algo-compute_single_action"]
    # examples/utils.py sets resources(num_gpus=args.num_gpus) only on the old stack ...
    num_gpus = sorted(r for r in rows if r[1] == "kwarg-resources-num_gpus")
    assert [r[0] for r in num_gpus] == ["utils.py"]
    # ... and resources(num_gpus=0) on the new one: ignored, harmless, a warning
    assert [f.severity.label for f in report.findings if f.evidence["row"] == "kwarg-resources-num_gpus"] == ["warn"]
    # an RLModuleSpec's, an encoder config's build() is not AlgorithmConfig.build()
    built = {r[0] for r in rows if r[1] == "method-build"}
    assert "dummy_external_client.py" not in built
    assert "mobilenet_rlm.py" in built  # config.build().train() on a PPOConfig: right

import json

from conftest import sample


def test_stages_json_for_mlp(run_cli):
    result = run_cli("stages", sample("mlp.py") + ":predict", "--shapes", sample("mlp.yaml"),
                     "--format", "json", "--runs", "3")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["cost"]["flops"] > 0

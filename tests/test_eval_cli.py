"""``r2s2r eval`` and ``r2s2r eval compare``: a group with a default subcommand, files, tables."""

import dataclasses
import json

import pytest

from r2s2r.cli import main
from r2s2r.evaluate.results import EvalResults

TWO_TRIALS = ["--nominal", "1", "--lighting", "1", "--belt-speed", "0", "--novel-object", "0", "--combined", "0"]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "scripted"
    assert main(["eval", "--policy", "scripted", "--lab", "2", "--batch", "2", *TWO_TRIALS, "--out", str(out)]) == 0
    return out


def _variant(src, dst, name, flips):
    """The same trials with some outcomes flipped: another policy's results, as files."""
    res = EvalResults.load(src)
    outcomes = tuple(
        dataclasses.replace(o, success=not o.success, failure=None if not o.success else "missed")
        if o.index in flips
        else o
        for o in res.outcomes
    )
    dataclasses.replace(res, policy=name, outcomes=outcomes).save(dst)
    return dst


def test_eval_writes_results_and_a_table(evaluated):
    obj = json.loads((evaluated / "results.json").read_text())
    assert obj["policy"] == "scripted" and obj["lab"] == 2
    assert [t["condition"]["kind"] for t in obj["trial_list"]["trials"]] == ["nominal", "lighting"]
    assert obj["summary"]["overall"]["trials"] == 2
    assert {"success", "failure", "duration", "safety", "trace"} <= set(obj["outcomes"][0])
    table = (evaluated / "results.md").read_text()
    assert "95% Wilson CI" in table and "| **overall** |" in table


def test_eval_compare_prints_paired_comparisons_and_a_2x2_design(evaluated, tmp_path, capsys):
    b = _variant(evaluated, tmp_path / "b", "flip-first", {0})
    c = _variant(evaluated, tmp_path / "c", "flip-both", {0, 1})
    capsys.readouterr()
    assert main(["eval", "compare", str(evaluated), str(b), str(c), "--out", str(tmp_path / "cmp.md")]) == 0
    text = capsys.readouterr().out
    assert "| policy | nominal | lighting | overall |" in text
    assert "Paired against scripted" in text and "exact McNemar p" in text
    assert (tmp_path / "cmp.md").read_text() == text
    assert (
        main(["eval", "compare", str(evaluated), str(b), str(c), str(evaluated), "--factors", "world", "behavior"]) == 0
    )
    text = capsys.readouterr().out
    assert "world x behavior" in text and "MOVER-Wilson" in text


def test_eval_bad_input_names_the_problem(evaluated, tmp_path, capsys):
    assert main(["eval", "comapre", str(evaluated)]) == 2
    assert "Did you mean 'compare'" in capsys.readouterr().err
    assert main(["eval", "--policy", "no/such/ckpt", "--out", str(tmp_path / "x")]) == 2
    assert "expected 'scripted', 'random', 'hold' or a checkpoint directory" in capsys.readouterr().err
    assert main(["eval", "compare", str(tmp_path)]) == 2
    assert "results.json" in capsys.readouterr().err
    assert main(["eval", "--policy", "scripted", "--replan", "4", "--out", str(tmp_path / "y")]) == 2
    assert "--replan 4: applies to a checkpoint policy" in capsys.readouterr().err
    assert main(["eval", "--policy", "random", "--inpaint", "--out", str(tmp_path / "z")]) == 2
    assert "--inpaint: applies to a checkpoint policy" in capsys.readouterr().err
    assert main(["eval", "--policy", "scripted", "--inpaint", "--ensemble", "0.1", "--out", str(tmp_path / "z")]) == 2
    assert "choose one" in capsys.readouterr().err
    other = tmp_path / "other"
    assert (
        main(["eval", "--policy", "scripted", "--lab", "3", *TWO_TRIALS, "--max-duration", "0.3", "--out", str(other)])
        == 0
    )
    capsys.readouterr()
    assert main(["eval", "compare", str(evaluated), str(other)]) == 2
    assert "different trials" in capsys.readouterr().err
    assert main(["eval", "compare", str(evaluated), str(evaluated), "--factors", "a", "b"]) == 2
    assert "expected 4 results" in capsys.readouterr().err


def test_eval_help_shows_the_default_command_and_the_group(capsys):
    with pytest.raises(SystemExit) as e:
        main(["eval", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--policy" in out and "eval compare" in out
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "eval compare" in out and "\n  eval  " in out

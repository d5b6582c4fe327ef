"""Fuzz suite: bad inputs to every command, each answered with a clear error and no traceback.

Every case runs the ``r2s2r`` CLI in-process on one bad input: a params JSON (empty, ``{}``, a
section missing, wrong types, NaN, a folder, missing), a dataset (manifest or shard missing, extra,
truncated, corrupt, checksum mismatch), a checkpoint (files missing, corrupt weights, mismatched
config), a CLI value out of range, or an output path that is a file, inside a file or unwritable. Each
must exit non-zero, print no traceback, and name the culprit (the path or option) and what was
expected. The fixtures are tiny (16 px, three short episodes, an untrained 30 k-parameter policy).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from r2s2r.cli import main
from r2s2r.data import Dataset
from r2s2r.errors import R2S2RError
from r2s2r.world.params import WorldParams

from .fuzz_helpers import (
    SHARD0,
    SHARD2,
    UNWRITABLE,
    Fx,
    build_inputs,
    cell_argv,
    corrupt_sha,
    edit_ckpt,
    edit_config,
    edit_manifest,
    edit_shard,
    eval_argv,
    flip,
    folder_manifest,
    garbage_manifest,
    gen_argv,
    list_manifest,
    make_dir,
    replace_by_folder,
    short_stats,
    study_argv,
    train_argv,
    truncate,
    unreadable_weights,
    with_latest,
    world_json,
    write_dataset,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> dict[str, Path]:
    return build_inputs(tmp_path_factory.mktemp("fuzz"))


@pytest.fixture
def fx(base, tmp_path) -> Fx:
    return Fx(base["world"], base["real"], base["sim"], base["run"], tmp_path)


def test_the_intact_fixtures_are_valid(fx):
    """The cases below break one thing each: the inputs they start from must be accepted."""
    from r2s2r.data import check_dataset
    from r2s2r.policy import load_policy

    assert WorldParams.load(fx.world) == WorldParams.nominal()
    assert check_dataset(fx.real).ok and len(check_dataset(fx.real).shards) == 2
    with Dataset(fx.real) as ds:
        assert ds.episode(2).num_samples == 10
    assert load_policy(fx.run).config.image_size == 16


# ---- edits ---------------------------------------------------------------------------------------


PARAMS = {  # a WorldParams file -> (how to make it, what the message must hold)
    "empty": (world_json(""), ["world.json", "is empty", "expected a WorldParams JSON file"]),
    "braces": (world_json("{}"), ["world.json", "missing section(s)", "cameras", "lighting"]),
    "list": (world_json("[]"), ["world.json", "JSON array", "expected a WorldParams"]),
    "null": (world_json("null"), ["world.json", "JSON null", "expected a WorldParams"]),
    "garbage": (world_json("{cameras: 1"), ["world.json", "is not valid JSON", "expected"]),
    "not-utf8": (lambda fx: fx.file("world.json", b"\xff\xfe{\x00"), ["world.json", "not UTF-8", "expected"]),
    "no-cameras": (
        lambda fx: fx.world_with(lambda d: d.pop("cameras")),
        ["world.json", "missing section(s) ['cameras']", "every section"],
    ),
    "no-physics-render": (
        lambda fx: fx.world_with(lambda d: [d.pop("physics"), d.pop("render")]),
        ["world.json", "'physics'", "'render'", "missing section"],
    ),
    "no-nested-field": (
        lambda fx: fx.world_with(lambda d: d["cameras"][0].pop("lens")),
        ["world.json", "cameras[0]", "missing field ['lens']"],
    ),
    "wrong-type": (
        lambda fx: fx.world_with(lambda d: d["physics"].update(timestep="fast")),
        ["world.json", "physics.timestep", "expected a finite number"],
    ),
    "nan": (
        lambda fx: fx.file("world.json", fx.world.read_text().replace('"timestep": 0.002', '"timestep": NaN')),
        ["world.json", "physics.timestep", "expected a finite number", "nan"],
    ),
    "infinity": (
        lambda fx: fx.world_with(lambda d: d["conveyor"].update(speed_scale=1e999)),
        ["world.json", "conveyor.speed_scale", "expected a finite number"],
    ),
    "unknown-field": (
        lambda fx: fx.world_with(lambda d: d["lighting"].update(sun=1.0)),
        ["world.json", "lighting", "unknown field", "'sun'"],
    ),
    "short-vector": (
        lambda fx: fx.world_with(lambda d: d["right_arm"].update(kp=[1.0] * 6)),
        ["world.json", "right_arm", "kp", "expected 7 values"],
    ),
    "bad-quaternion": (
        lambda fx: fx.world_with(lambda d: d["conveyor"]["pose"].update(quat=[1.0, 1.0, 0.0, 0.0])),
        ["world.json", "unit quaternion"],
    ),
    "old-schema": (
        lambda fx: fx.world_with(lambda d: d.update(schema_version=1)),
        ["world.json", "schema_version", "expected 2"],
    ),
    "one-bin": (lambda fx: fx.world_with(lambda d: d["bins"].pop()), ["world.json", "bins", "one red and one blue"]),
    "folder": (lambda fx: fx.tmp, ["is a folder", "expected a WorldParams JSON file"]),
    "missing": (lambda fx: fx.tmp / "nope.json", ["nope.json", "does not exist", "expected a WorldParams"]),
}

CASES = {
    # ---- params JSON, through every command that reads one
    **{f"cell-world-{k}": (lambda fx, m=m: cell_argv(m(fx), fx), ["--world", *n]) for k, (m, n) in PARAMS.items()},
    **{
        f"generate-world-{k}": (lambda fx, m=m: gen_argv(fx, world=m(fx)), ["--world-file", *n])
        for k, (m, n) in PARAMS.items()
        if k in ("braces", "no-cameras", "folder", "nan", "garbage")
    },
    "generate-one-world-folder": (
        lambda fx: ["generate-one", "--behavior", "planner", "--world", str(fx.tmp)],
        ["--world", "is a folder", "expected a WorldParams JSON file"],
    ),
    "generate-one-world-section": (
        lambda fx: ["generate-one", "--behavior", "planner", "--world", str(fx.world_with(lambda d: d.pop("objects")))],
        ["--world", "world.json", "missing section(s) ['objects']"],
    ),
    "generate-calibration-world-missing-section": (
        lambda fx: [
            *["generate", "--out", str(fx.tmp / "gen"), "--world", "grounded", "--behavior", "ungrounded"],
            *["--calibration", str(fx.world_with(lambda d: d.pop("lighting")).parent), "--workers", "1"],
        ],
        ["--calibration", "world.json", "missing section(s) ['lighting']"],
    ),
    # ---- datasets
    "data-check-no-manifest": (
        lambda fx: ["data", "check", str(fx.tmp)],
        ["manifest.json", "no manifest", "expected a dataset folder"],
    ),
    "data-check-a-file": (
        lambda fx: ["data", "check", str(fx.file("notes.txt", "x"))],
        ["notes.txt", "is a file", "expected a dataset folder"],
    ),
    "data-check-manifest-garbage": (
        lambda fx: ["data", "check", str(garbage_manifest(fx.copy("real")))],
        ["manifest.json", "is not valid JSON", "expected a dataset manifest"],
    ),
    "data-check-manifest-folder": (
        lambda fx: ["data", "check", str(folder_manifest(fx.copy("real")))],
        ["manifest.json", "is a folder", "expected a dataset manifest"],
    ),
    "data-check-manifest-list": (
        lambda fx: ["data", "check", str(list_manifest(fx.copy("real")))],
        ["manifest.json", "expected a JSON object"],
    ),
    "data-check-schema": (
        lambda fx: ["data", "check", str(edit_manifest(fx.copy("real"), lambda d: d.update(schema_version=9)))],
        ["manifest.json", "schema_version 9", "expected 1"],
    ),
    "data-check-checksum": (
        lambda fx: ["data", "check", str(edit_manifest(fx.copy("real"), corrupt_sha))],
        [SHARD2, "sha256 differs", "episodes 2"],
    ),
    "data-check-corrupt-shard": (
        lambda fx: ["data", "check", str(edit_shard(fx.copy("real"), SHARD0, flip))],
        [SHARD0, "sha256 differs", "episodes 0-1"],
    ),
    "data-check-truncated-shard": (
        lambda fx: ["data", "check", str(edit_shard(fx.copy("real"), SHARD2, truncate))],
        [SHARD2, "sha256 differs", "episodes 2"],
    ),
    "data-check-missing-shard": (
        lambda fx: ["data", "check", str(edit_shard(fx.copy("real"), SHARD0, Path.unlink))],
        [SHARD0, "missing", "episodes 0-1"],
    ),
    "data-check-extra-shard": (
        lambda fx: [
            "data",
            "check",
            str(edit_manifest(fx.copy("real"), lambda d: d["shards"].update({"shard_000009.h5": "a" * 64}))),
        ],
        ["manifest.json", "shard_000009.h5", "hold no episode"],
    ),
    "data-check-episode-gap": (
        lambda fx: ["data", "check", str(edit_manifest(fx.copy("real"), lambda d: d["episodes"].pop(0)))],
        ["manifest.json", "episodes[0]", "expected index 0"],
    ),
    "data-show-checksum": (
        lambda fx: ["data", "show", str(edit_manifest(fx.copy("real"), corrupt_sha))],
        [SHARD2, "sha256 differs from the manifest", "expected the bytes"],
    ),
    "data-show-missing-shard": (
        lambda fx: ["data", "show", str(edit_shard(fx.copy("real"), SHARD2, Path.unlink))],
        [SHARD2, "cannot open shard", "episodes 2"],
    ),
    "train-checksum": (
        lambda fx: train_argv(fx, edit_manifest(fx.copy("real"), corrupt_sha)),
        [SHARD2, "sha256 differs from the manifest", "data check"],
    ),
    "train-corrupt-shard": (
        lambda fx: train_argv(fx, edit_shard(fx.copy("real"), SHARD0, flip)),
        [SHARD0, "sha256 differs from the manifest", "episodes 0-1"],
    ),
    "train-truncated-shard": (
        lambda fx: train_argv(fx, edit_shard(fx.copy("real"), SHARD2, truncate)),
        [SHARD2, "sha256 differs from the manifest"],
    ),
    "train-shard-is-a-folder": (
        lambda fx: train_argv(fx, edit_shard(fx.copy("real"), SHARD2, replace_by_folder)),
        [SHARD2, "cannot open shard", "episodes 2"],
    ),
    "train-no-manifest": (lambda fx: train_argv(fx, fx.tmp), ["manifest.json", "no manifest", "expected a dataset"]),
    "train-real-missing": (lambda fx: train_argv(fx, fx.tmp / "nope"), ["--real", "nope", "no such dataset folder"]),
    "train-sim-as-real": (lambda fx: train_argv(fx, fx.sim), ["sim", "given as a real dataset", "'sim'"]),
    "train-no-episodes": (
        lambda fx: train_argv(fx, write_dataset(fx.tmp / "empty", [], "real")),
        ["empty", "no episodes to train on"],
    ),
    "generate-grounded-checksum": (
        lambda fx: gen_argv(fx, "--demos", str(edit_manifest(fx.copy("real"), corrupt_sha)), behavior="grounded"),
        [SHARD2, "sha256 differs from the manifest"],
    ),
    "generate-one-mimic-corrupt-shard": (
        lambda fx: [
            *["generate-one", "--behavior", "mimic", "--world", str(fx.world)],
            *["--demos", str(edit_shard(fx.copy("real"), SHARD0, flip))],
        ],
        [SHARD0, "sha256 differs from the manifest"],
    ),
    "generate-grounded-no-demos": (
        lambda fx: gen_argv(fx, behavior="grounded"),
        ["--behavior grounded", "--demos DIR"],
    ),
    "generate-demos-not-a-dataset": (
        lambda fx: gen_argv(fx, "--demos", str(fx.tmp)),
        ["--demos", "not a dataset folder"],
    ),
    # ---- checkpoints
    "eval-ckpt-no-weights": (
        lambda fx: eval_argv(fx, edit_ckpt(fx, lambda c: (c / "model.safetensors").unlink())),
        ["model.safetensors", "missing from the checkpoint"],
    ),
    "eval-ckpt-no-stats": (
        lambda fx: eval_argv(fx, edit_ckpt(fx, lambda c: (c / "stats.json").unlink())),
        ["stats.json", "missing from the checkpoint"],
    ),
    "eval-ckpt-no-config": (
        lambda fx: eval_argv(fx, edit_ckpt(fx, lambda c: (c / "config.json").unlink())),
        ["step_00000001", "not a checkpoint folder", "config.json"],
    ),
    "eval-ckpt-corrupt-weights": (
        lambda fx: eval_argv(fx, edit_ckpt(fx, lambda c: flip(c / "model.safetensors"))),
        ["model.safetensors", "SHA-256 differs", "config.json"],
    ),
    "eval-ckpt-unreadable-weights": (
        lambda fx: eval_argv(fx, edit_ckpt(fx, unreadable_weights)),
        ["model.safetensors", "not a readable safetensors file"],
    ),
    "eval-ckpt-mismatched-config": (
        lambda fx: eval_argv(fx, edit_ckpt(fx, lambda c: edit_config(c, lambda m: m["policy"].update(width=48)))),
        ["model.safetensors", "weights do not match the configured model"],
    ),
    "eval-ckpt-config-wrong-type": (
        lambda fx: eval_argv(fx, edit_ckpt(fx, lambda c: edit_config(c, lambda m: m["policy"].update(width="wide")))),
        ["config.json", "policy.width", "expected an integer"],
    ),
    "eval-ckpt-config-garbage": (
        lambda fx: eval_argv(fx, edit_ckpt(fx, lambda c: (c / "config.json").write_text("{"))),
        ["config.json", "is not valid JSON", "expected the checkpoint config"],
    ),
    "eval-ckpt-foreign-format": (
        lambda fx: eval_argv(fx, edit_ckpt(fx, lambda c: edit_config(c, lambda m: m.update(format="other")))),
        ["config.json", "not an r2s2r policy checkpoint", "expected format"],
    ),
    "eval-ckpt-stats-wrong-dims": (
        lambda fx: eval_argv(fx, edit_ckpt(fx, short_stats)),
        ["stats.json"],
    ),
    "eval-ckpt-bad-latest": (
        lambda fx: eval_argv(fx, with_latest(fx.copy("run"), "../../etc\n")),
        ["latest", "expected a checkpoint name like step_"],
    ),
    "eval-ckpt-latest-names-nothing": (
        lambda fx: eval_argv(fx, with_latest(fx.copy("run"), "step_00000099\n")),
        ["step_00000099", "not a checkpoint folder"],
    ),
    "eval-policy-a-file": (lambda fx: eval_argv(fx, fx.file("ckpt.bin", "x")), ["--policy", "ckpt.bin", "expected"]),
    "train-resume-other-settings": (
        lambda fx: train_argv(fx, fx.real, out=fx.copy("run")),
        ["run", "holds a run with other settings"],
    ),
    # ---- CLI values out of range
    "cell-size": (lambda fx: ["cell", "show", "--size", "5", "--out", str(fx.tmp / "x.png")], ["--size", "expected 0"]),
    "cell-lab": (lambda fx: ["cell", "show", "--lab", "-1", "--out", str(fx.tmp / "x.png")], ["lab seed", "expected"]),
    "cell-condition": (
        lambda fx: ["cell", "show", "--condition", "lightning", "--out", str(fx.tmp / "x.png")],
        ["condition kind 'lightning'", "Did you mean 'lighting'"],
    ),
    "demos-n": (lambda fx: ["demos", "collect", "--n", "0", "--out", str(fx.tmp / "d")], ["--n", "expected >= 1"]),
    "demos-workers": (
        lambda fx: ["demos", "collect", "--workers", "0", "--out", str(fx.tmp / "d")],
        ["--workers", "expected >= 1"],
    ),
    "demos-image-size": (
        lambda fx: ["demos", "collect", "--image-size", "4", "--out", str(fx.tmp / "d")],
        ["image_size", "expected 16..1024"],
    ),
    "demos-max-attempts": (
        lambda fx: ["demos", "collect", "--n", "5", "--max-attempts", "2", "--out", str(fx.tmp / "d")],
        ["--max-attempts", "expected >= --n"],
    ),
    "generate-workers-0": (lambda fx: gen_argv(fx, "--workers", "0"), ["--workers", "expected", ">= 1", "got 0"]),
    "generate-n-0": (lambda fx: gen_argv(fx, "--n", "0"), ["--n", "expected >= 1"]),
    "generate-mix": (lambda fx: gen_argv(fx, "--mix.nominal", "2"), ["condition mix", "expected fractions in [0, 1]"]),
    "generate-mix-nan": (lambda fx: gen_argv(fx, "--mix.lighting", "nan"), ["condition mix", "expected fractions"]),
    "generate-executor": (lambda fx: gen_argv(fx, "--executor", "slurm"), ["executor 'slurm'", "expected one of"]),
    "generate-world-name": (
        lambda fx: ["generate", "--out", str(fx.tmp / "g"), "--world", "groundd", "--behavior", "ungrounded"],
        ["world configuration 'groundd'", "Did you mean 'grounded'"],
    ),
    "train-ratio": (
        lambda fx: train_argv(fx, fx.real, "--ratio", "1.5"),
        ["ratio", "expected the real share in (0, 1]"],
    ),
    "train-steps": (lambda fx: train_argv(fx, fx.real, "--steps", "0"), ["steps", "expected a positive integer"]),
    "train-threads": (
        lambda fx: train_argv(fx, fx.real, "--threads", "0"),
        ["--threads", "expected a positive integer"],
    ),
    "train-device": (lambda fx: train_argv(fx, fx.real, "--device", "tpu"), ["device 'tpu'", "expected"]),
    "train-preset": (
        lambda fx: train_argv(fx, fx.real, "--preset", "tinny"),
        ["preset 'tinny'", "Did you mean 'tiny'"],
    ),
    "eval-batch": (lambda fx: eval_argv(fx, "scripted", "--batch", "0"), ["--batch", "expected an integer >= 1"]),
    "eval-trials": (lambda fx: eval_argv(fx, "scripted", "--nominal", "-1"), ["nominal trials", "expected"]),
    "eval-duration": (lambda fx: eval_argv(fx, "scripted", "--max-duration", "0"), ["--max-duration", "expected"]),
    "eval-shadows-no-world": (lambda fx: eval_argv(fx, "scripted", "--shadows"), ["--shadows", "--world FILE"]),
    "eval-policy-name": (lambda fx: eval_argv(fx, "scriptd"), ["--policy", "expected 'scripted'"]),
    "study-workers-0": (lambda fx: study_argv(fx, "--workers", "0"), ["--workers", "expected", ">= 1", "got 0"]),
    "study-profile": (lambda fx: ["study", "run", "--profile", "smok", "--dry-run"], ["profile 'smok'", "'smoke'"]),
    "study-n-real": (lambda fx: study_argv(fx, "--n-real", "0"), ["n_real", "expected >= 1"]),
    "study-design": (lambda fx: study_argv(fx, "--design", "full"), ["design 'full'", "expected one of"]),
    "study-anchor": (lambda fx: study_argv(fx, "--anchors", "scriptd"), ["anchor policy 'scriptd'", "'scripted'"]),
    "study-anchor-steps": (
        lambda fx: study_argv(fx, "--anchor-steps", "10", "5"),
        ["anchor_steps", "increasing training steps", "(10, 5)"],
    ),
    "world-ungrounded-seed": (
        lambda fx: ["world", "ungrounded", "--seed", "-1", "--out", str(fx.tmp / "u.json")],
        ["seed", "expected a non-negative integer"],
    ),
    "calibrate-lab": (lambda fx: ["calibrate", "--lab", "-1", "--out", str(fx.tmp / "c")], ["lab seed", "expected"]),
    # ---- output paths: files, inside files, unwritable, wrong kind
    "cell-out-in-a-file": (
        lambda fx: ["cell", "show", "--out", str(fx.file("f", "x") / "x.png")],
        ["--out", "is a file", "cannot be written under it"],
    ),
    "cell-out-a-folder": (
        lambda fx: ["cell", "show", "--out", str(make_dir(fx.tmp / "x.png"))],
        ["--out", "x.png", "is a folder", "expected a contact sheet image"],
    ),
    "cell-out-suffix": (lambda fx: ["cell", "show", "--out", str(fx.tmp / "x.jpg")], ["--out", "expected a .png file"]),
    "cell-out-unwritable": (
        lambda fx: ["cell", "show", "--out", str(UNWRITABLE / "x.png")],
        ["--out", "not writable", "expected a writable location"],
    ),
    "world-out-in-a-file": (
        lambda fx: ["world", "ungrounded", "--out", str(fx.file("f", "x") / "w.json")],
        ["--out", "is a file", "WorldParams file"],
    ),
    "world-out-a-folder": (
        lambda fx: ["world", "ungrounded", "--out", str(make_dir(fx.tmp / "w.json"))],
        ["--out", "is a folder", "expected a WorldParams file"],
    ),
    "demos-out-a-file": (
        lambda fx: ["demos", "collect", "--n", "1", "--out", str(fx.file("f", "x"))],
        ["--out", "is a file", "expected a dataset folder"],
    ),
    "demos-out-in-a-file": (
        lambda fx: ["demos", "collect", "--n", "1", "--out", str(fx.file("f", "x") / "demos")],
        ["--out", "is a file", "a dataset folder cannot be written under it"],
    ),
    "demos-out-unwritable": (
        lambda fx: ["demos", "collect", "--n", "1", "--out", str(UNWRITABLE / "demos")],
        ["--out", "not writable", "dataset folder"],
    ),
    "train-out-a-file": (
        lambda fx: train_argv(fx, fx.real, out=fx.file("f", "x")),
        ["--out", "is a file", "expected a training run folder"],
    ),
    "train-out-unwritable": (
        lambda fx: train_argv(fx, fx.real, out=UNWRITABLE / "run"),
        ["--out", "not writable", "training run folder"],
    ),
    "generate-out-a-file": (
        lambda fx: [*gen_argv(fx), "--out", str(fx.file("f", "x"))],
        ["--out", "is a file", "expected a dataset folder"],
    ),
    "study-out-a-file": (
        lambda fx: [*study_argv(fx), "--out", str(fx.file("f", "x"))],
        ["--out", "is a file", "study"],
    ),
    "study-out-unwritable": (lambda fx: [*study_argv(fx), "--out", str(UNWRITABLE / "s")], ["--out", "not writable"]),
    "calibrate-out-a-file": (
        lambda fx: ["calibrate", "--out", str(fx.file("f", "x"))],
        ["--out", "is a file", "expected a calibration folder"],
    ),
    "calibrate-out-unwritable": (
        lambda fx: ["calibrate", "--out", str(UNWRITABLE / "cal")],
        ["--out", "not writable", "calibration folder"],
    ),
    "data-show-out-in-a-file": (
        lambda fx: ["data", "show", str(fx.real), "--out", str(fx.file("f", "x") / "s.png")],
        ["--out", "is a file", "PNG of sample frames"],
    ),
    "generate-one-video-in-a-file": (
        lambda fx: [
            *["generate-one", "--behavior", "planner", "--world", str(fx.world)],
            *["--video", str(fx.file("f", "x") / "v.mp4")],
        ],
        ["--video", "is a file", "MP4 video"],
    ),
    "generate-one-video-suffix": (
        lambda fx: [
            "generate-one",
            "--behavior",
            "planner",
            "--world",
            str(fx.world),
            "--video",
            str(fx.tmp / "v.avi"),
        ],
        ["--video", "expected a .mp4 file"],
    ),
}


def test_there_are_at_least_60_cases():
    assert len(CASES) >= 60


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_named_without_a_traceback(name, fx, capsys):
    make, needles = CASES[name]
    if "unwritable" in name and not Path("/sys").is_dir():
        pytest.skip("no /sys to stand for an unwritable location")
    argv = make(fx)
    try:
        code = main(argv)
    except SystemExit as e:  # argument parsing (tyro) exits by itself
        code = e.code
    out = capsys.readouterr()
    text = out.err + out.out
    assert code not in (0, None), f"{name}: accepted: {argv}\n{text}"
    assert "Traceback" not in text, text
    flat = " ".join(text.split())  # rich wraps long lines
    missing = [n for n in needles if " ".join(n.split()) not in flat]
    assert not missing, f"{name}: message lacks {missing}:\n{text}"


# ---- the root fixes, directly ----------------------------------------------------------------------


def test_an_out_inside_missing_folders_is_created(tmp_path):
    from r2s2r.calibrate.ungrounded import ungrounded_world

    out = tmp_path / "new" / "deeper" / "world.json"
    assert main(["world", "ungrounded", "--seed", "2", "--out", str(out)]) == 0
    assert WorldParams.load(out) == ungrounded_world(2)


def test_a_reader_verifies_each_shard_once(fx, monkeypatch):
    import r2s2r.data.dataset as dataset_module

    calls: list[str] = []
    real_sha = dataset_module.sha256_file
    monkeypatch.setattr(dataset_module, "sha256_file", lambda p: calls.append(Path(p).name) or real_sha(p))
    with Dataset(fx.real) as ds:
        for _ in range(3):
            for i in range(len(ds)):
                ds.episode(i)
    assert sorted(calls) == [SHARD0, SHARD2]  # first open of each shard only
    broken = edit_manifest(fx.copy("real"), corrupt_sha)
    with Dataset(broken) as ds:
        ds.episode(0)  # an intact shard still reads
        with pytest.raises(R2S2RError, match=r"shard_000002\.h5: sha256 differs"):
            ds.episode(2)
    with Dataset(broken, verify=False) as ds:
        assert ds.episode(2).num_samples == 10


def test_file_helpers_name_the_path_and_the_expectation(tmp_path):
    from r2s2r.errors import ConfigError
    from r2s2r.files import input_dir, output_dir, output_file, read_json

    with pytest.raises(R2S2RError, match=r"--x .*nope\.json: does not exist; expected a thing"):
        read_json(tmp_path / "nope.json", "a thing", "--x")
    with pytest.raises(R2S2RError, match="is a folder; expected a thing"):
        read_json(tmp_path, "a thing")
    (tmp_path / "nan.json").write_text('{"a": NaN}')
    assert np.isnan(read_json(tmp_path / "nan.json", "a thing")["a"])  # fields are checked where they are typed
    (tmp_path / "s.json").write_text('"text"')
    with pytest.raises(ConfigError, match="holds a JSON string; expected a thing"):
        read_json(tmp_path / "s.json", "a thing")
    with pytest.raises(R2S2RError, match="is a file; expected a folder of things"):
        input_dir(tmp_path / "s.json", "a folder of things")
    assert output_dir(tmp_path / "a" / "b", "a run").is_dir()
    assert not (tmp_path / "c").exists() and output_dir(tmp_path / "c", "a run", create=False) == tmp_path / "c"
    assert not (tmp_path / "c").exists()
    with pytest.raises(R2S2RError, match="s.json is a file, so a run cannot be written under it"):
        output_dir(tmp_path / "s.json" / "run", "a run")
    assert output_file(tmp_path / "d" / "x.png", "an image", suffix=".png").parent.is_dir()
    assert not [p for p in tmp_path.rglob(".r2s2r-probe-*")]  # the writability probe leaves nothing

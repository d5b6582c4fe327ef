import dataclasses
import json

import pytest

from r2s2r.errors import ConfigError, R2S2RError, UnknownNameError
from r2s2r.lab.asbuilt import draw_as_built
from r2s2r.world.params import ArmParams, Pose, WorldParams


def test_json_round_trip_is_lossless(nominal, tmp_path, rng):
    for params in (nominal, draw_as_built(nominal, rng)):
        path = params.save(tmp_path / "world.json")
        back = WorldParams.load(path)
        assert back == params
        assert back.content_hash() == params.content_hash()


def test_hash_is_stable_and_sensitive(nominal):
    assert nominal.content_hash() == WorldParams.nominal().content_hash()
    moved = nominal.replace(conveyor=dataclasses.replace(nominal.conveyor, speed_scale=1.01))
    assert moved.content_hash() != nominal.content_hash()
    # key order in the file does not matter
    data = json.loads(nominal.to_json())
    shuffled = dict(reversed(list(data.items())))
    assert WorldParams.from_dict(shuffled).content_hash() == nominal.content_hash()


def test_invalid_params_file_names_the_field(nominal, tmp_path):
    data = nominal.to_dict()
    data["right_arm"]["kp"] = [1.0] * 6
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"right_arm.*kp.*7 values"):
        WorldParams.load(tmp_path / "bad.json")
    data = nominal.to_dict()
    data["conveyor"]["speed"] = 1.0
    (tmp_path / "unknown.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"conveyor: unknown field.*'speed'"):
        WorldParams.load(tmp_path / "unknown.json")
    data = nominal.to_dict()
    data["physics"]["timestep"] = "fast"
    (tmp_path / "type.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"physics.timestep: expected a finite number"):
        WorldParams.load(tmp_path / "type.json")
    (tmp_path / "garbage.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        WorldParams.load(tmp_path / "garbage.json")
    with pytest.raises(R2S2RError, match="does not exist"):
        WorldParams.load(tmp_path / "missing.json")


def test_value_checks(nominal):
    with pytest.raises(ConfigError, match="arm.kp"):
        ArmParams(base=Pose((0, 0, 0)), kp=(-1.0,) * 7)
    with pytest.raises(ConfigError, match="delay"):
        ArmParams(base=Pose((0, 0, 0)), delay=0.5)
    with pytest.raises(ConfigError, match="unit quaternion"):
        Pose((0, 0, 0), (1.0, 1.0, 0.0, 0.0))
    with pytest.raises(ConfigError, match="dist"):
        dataclasses.replace(nominal.cameras[0].lens, dist=(0.0,) * 4)
    with pytest.raises(UnknownNameError, match="unknown camera 'head_lef'.*Did you mean 'head_left'"):
        nominal.camera("head_lef")
    with pytest.raises(UnknownNameError):
        nominal.object("green_cube")

import subprocess
import sys

import numpy as np
import pytest

from r2s2r.cli import main


def test_cell_show_writes_a_contact_sheet(tmp_path):
    import cv2

    out = tmp_path / "sheet.png"
    assert main(["cell", "show", "--lab", "2", "--size", "96", "--condition", "belt_speed", "--out", str(out)]) == 0
    img = cv2.imread(str(out))
    assert img is not None and img.shape[0] > 400 and img.shape[1] > 300
    assert float(np.std(img)) > 10


def test_bad_cli_input_names_the_problem(tmp_path, capsys):
    assert main(["cel", "show"]) == 2
    assert "Did you mean 'cell'" in capsys.readouterr().err
    assert main(["cell", "shwo"]) == 2
    assert "Did you mean 'show'" in capsys.readouterr().err
    assert main(["cell", "show", "--condition", "lightning", "--out", str(tmp_path / "x.png")]) == 2
    assert "Did you mean 'lighting'" in capsys.readouterr().err
    assert main(["cell", "show", "--out", str(tmp_path / "x.jpg")]) == 2
    assert "expected a .png file" in capsys.readouterr().err
    bad = tmp_path / "world.json"
    bad.write_text('{"cameras": 3}')
    assert main(["cell", "show", "--world", str(bad), "--out", str(tmp_path / "x.png")]) == 2
    assert "cameras" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_console_script_help_runs():
    proc = subprocess.run([sys.executable, "-m", "r2s2r.cli", "cell", "show", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "--lab" in proc.stdout and "--out" in proc.stdout


@pytest.mark.parametrize("argv", [[], ["--help"]])
def test_top_level_usage(argv, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    assert "cell" in capsys.readouterr().out


def test_world_ungrounded_writes_loadable_params(tmp_path):
    from r2s2r.calibrate.ungrounded import ungrounded_world
    from r2s2r.world.params import WorldParams

    out = tmp_path / "world.json"
    assert main(["world", "ungrounded", "--seed", "4", "--out", str(out)]) == 0
    assert WorldParams.load(out) == ungrounded_world(4)
    assert main(["world", "ungrounded", "--out", str(tmp_path / "world.txt")]) == 2

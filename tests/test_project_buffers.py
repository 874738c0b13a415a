"""An editor's open buffer of a project file answers for that file (odelint.analysis.project)."""

from __future__ import annotations

from pathlib import Path

import pytest
from odelint.analysis import project
from odelint.engine.core import lint_source

PLAIN = "class Net:\n    def __init__(self):\n        self.act = print\n"
MODULE = ("import equinox as eqx\n\n\nclass Net(eqx.Module):\n    mlp: eqx.nn.MLP\n\n    def __init__(self):\n"
          "        self.mlp = eqx.nn.MLP(2, 2, 8, 1, key=None)\n")
TRAIN = "import optax\n\nfrom model import Net\n\nnet = Net()\nopt_state = optax.adam(1e-3).init(net)\n"


@pytest.fixture
def buffers():
    yield project
    for path in project.buffered():
        project.set_buffer(path, None)


def test_a_buffer_answers_instead_of_the_saved_file_until_it_is_closed(tmp_path: Path, buffers) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "model.py").write_text(PLAIN)
    train = str(tmp_path / "train.py")
    assert lint_source(TRAIN, train).findings == []
    buffers.set_buffer(str(tmp_path / "model.py"), MODULE)
    assert [f.code for f in lint_source(TRAIN, train).findings] == ["ODL201"]
    buffers.set_buffer(str(tmp_path / "model.py"), None)
    assert lint_source(TRAIN, train).findings == []


def test_a_buffer_of_a_file_not_yet_saved_answers_and_its_stamp_is_never_a_files(tmp_path: Path, buffers) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    new = str(tmp_path / "model.py")
    buffers.set_buffer(new, MODULE)
    assert [f.code for f in lint_source(TRAIN, str(tmp_path / "train.py")).findings] == ["ODL201"]
    stamp = project.stamp(new)
    assert stamp is not None and stamp[0] == -1
    buffers.set_buffer(new, MODULE + "\n")
    assert project.stamp(new) != stamp, "an edited buffer changes what results read from it"

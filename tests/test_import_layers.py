"""The import contracts of pyproject.toml ([tool.importlinter]), checked with import-linter.

One test per contract, so a failure names the contract that broke (core's layers,
or a kernel library reaching a backend other than through its ``api`` module), and
the message is lint-imports' own report: which module imports which, at which line.
The layers themselves are described in docs/architecture.md ("Layers").
"""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
CONTRACTS = [c["id"] for c in CONFIG["contracts"]]


def _lint_imports(*args, config=None):
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.fail(f"lint-imports is not installed next to {sys.executable}: it is a dev dependency "
                    f"([tool.burn.workspace] in pyproject.toml); run `python3 dev.py setup`")
    cmd = [str(exe), "--no-logo", "--no-cache", *args]
    if config is not None:
        cmd.append(str(config))
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))


def test_every_contract_has_an_id_and_a_name():
    for c in CONFIG["contracts"]:
        assert c.get("id") and c.get("name"), c
    assert len(set(CONTRACTS)) == len(CONTRACTS)
    assert "core-layers" in CONTRACTS


@pytest.mark.parametrize("contract", CONTRACTS)
def test_import_contract_is_kept(contract):
    r = _lint_imports("--contract", contract)
    if r.returncode != 0:
        pytest.fail(f"import contract {contract!r} is broken:\n{r.stdout}\n{r.stderr}", pytrace=False)
    assert "1 kept, 0 broken" in r.stdout, r.stdout


def test_a_broken_layer_order_is_reported(tmp_path):
    # the check itself must see the code: the core order turned upside down has to fail
    cfg = tmp_path / "upside_down.toml"
    cfg.write_text('[tool.importlinter]\nroot_packages = ["burn"]\n\n'
                   '[[tool.importlinter.contracts]]\nid = "upside-down"\nname = "errors above tensor"\n'
                   'type = "layers"\nlayers = ["burn.errors", "burn.tensor"]\n')
    r = _lint_imports(config=cfg)
    assert r.returncode != 0 and "burn.tensor is not allowed to import burn.errors" in r.stdout, r.stdout

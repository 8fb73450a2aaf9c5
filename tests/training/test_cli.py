from __future__ import annotations

import subprocess
import sys


def test_cli_reports_bad_config_and_exits_2(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('[train]\nbase_model = "all-MiniLM-L6-v2"\nepochs = 3\n')
    code = "from ratio.cli import main; main()"
    r = subprocess.run(
        [sys.executable, "-c", code, "train", "--config", str(p), "--relation", "address"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2
    assert "unknown config key(s) 'epochs' in [train]" in r.stderr

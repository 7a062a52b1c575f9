"""The shell-hook guard's hand-written shortcuts agree with the library way they stand in
for: Home's location, the compiled modules of tree-sitter loaded by file, the
record's stamp, and the filters a policy can list."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import pytest

from runtime.agent import filters
from runtime.agent.settings import home_folder
from runtime.execute.auditfile import stamp
from runtime.home.layout import home_path
from runtime.plan.policy import SHELL_FILTERS


@pytest.mark.parametrize(
    "environ",
    [
        {"HOME": "/home/dev"},
        {"HOME": "/home/dev", "XDG_DATA_HOME": "/data"},
        {"HOME": "/home/dev", "XDG_DATA_HOME": ""},
        {"HOME": "/home/dev", "XDG_DATA_HOME": "relative/data"},
        {"HOME": "/home/dev", "XDG_DATA_HOME": " /data "},
        {"HOME": "/home/dev/"},
        {"HOME": "/home/dev", "RUNTIME_HOME": "/elsewhere"},
        {"HOME": "/home/dev", "RUNTIME_HOME": "~/rt"},
    ],
)
def test_home_is_where_platformdirs_puts_it(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # platformdirs reads os.environ itself, so both see the same environment
    for key in ("HOME", "XDG_DATA_HOME", "RUNTIME_HOME"):
        monkeypatch.delenv(key, raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    assert home_folder(environ) == str(home_path(environ))


def test_the_filters_a_policy_lists_are_the_ones_the_guard_knows() -> None:
    assert sorted(filters.GRAMMARS) == sorted(SHELL_FILTERS)


def test_the_grammar_loaded_by_file_parses_as_the_packages_do() -> None:
    # in a fresh interpreter: the shortcut first, then the packages' own import
    code = (
        "from runtime.agent.shell import parser\n"
        "import sys\n"
        "cmd = b'FOO=1 runtime a \"$(b)\" | jq .x > out 2>&1; c && d <<< e'\n"
        "fast = str(parser().parse(cmd).root_node)\n"
        "assert 'tree_sitter' not in sys.modules, sorted(sys.modules)\n"
        "import tree_sitter, tree_sitter_bash\n"
        "p = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))\n"
        "assert fast == str(p.parse(cmd).root_node), fast\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("t", [0.0, 1.5, 1764614400.123, 1764614400.9999, 2e9 + 0.001])
def test_the_records_stamp_is_isoformat_to_the_millisecond(t: float) -> None:
    ms = int(t * 1000)
    expected = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
    assert stamp(t) == expected

"""Registry packages find their modules by looking (core.discovery)."""

import sys

from core.discovery import import_submodules


def test_every_public_module_is_imported_in_name_order_and_private_ones_skipped(
    tmp_path, monkeypatch
):
    package = tmp_path / "toyreg"
    package.mkdir()
    (package / "__init__.py").write_text("SEEN = []\n")
    for name in ("zeta", "alpha", "_private"):
        (package / f"{name}.py").write_text(f"from toyreg import SEEN\nSEEN.append({name!r})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import_submodules("toyreg")
        assert sys.modules["toyreg"].SEEN == ["alpha", "zeta"]
    finally:
        for name in [n for n in sys.modules if n == "toyreg" or n.startswith("toyreg.")]:
            del sys.modules[name]

"""Where the course's files live, independent of the kernel's working directory."""
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent
FIXTURES = ROOT / "fixtures"
NOTEBOOKS = ROOT / "notebooks"


def fixture(*parts: str) -> Path:
    """Absolute path of a file under ``fixtures/``; fails loudly when it does not exist."""
    path = FIXTURES.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"no fixture {path.relative_to(ROOT)}")
    return path

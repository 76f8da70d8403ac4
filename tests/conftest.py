import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(params=["legacy", "2026-07-28"])
def era(request):
    """Every protocol-level test runs in both eras."""
    return request.param

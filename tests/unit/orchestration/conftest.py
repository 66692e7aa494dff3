"""The published-storage fixtures of ``test_published_hashes``, for every test of the
orchestration: a test names them as parameters without importing them into its module."""

from tests.unit.orchestration.test_published_hashes import published, two_versions

__all__ = ["published", "two_versions"]

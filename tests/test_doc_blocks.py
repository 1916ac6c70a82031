"""Every code block of README.md and docs/ is run by a named test, or says visibly why the
suite cannot run it, and that marker cannot hide a block the suite could run
(`tests/support/doc_blocks.py`)."""

from __future__ import annotations

from tests.support.doc_blocks import documented_blocks, page_blocks, problems


def test_every_block_is_run_by_a_test_or_says_why_it_cannot_be() -> None:
    blocks = documented_blocks()
    assert len(blocks) > 50
    assert [problem for block in blocks for problem in problems(block)] == []


def test_the_checker_refuses_an_unmarked_block_a_false_marker_and_a_missing_test() -> None:
    page = (
        "Unmarked:\n\n```bash\nls\n```\n\n"
        "Not run by the test suite (it says so, but it could be).\n\n"
        "```bash\ncurl -s http://127.0.0.1:2333/healthz\n```\n\n"
        "Not run by the test suite (a Kubernetes cluster).\n\n"
        "```bash\nhelm install lance helm/lance-namespace-adapter\n```\n\n"
        "<!-- run by tests/test_doc_blocks.py::no_such_test -->\n```bash\nls\n```\n\n"
        "<!-- run by tests/test_doc_blocks.py::test_every_block_is_run_by_a_test_or_says_why_it"
        "_cannot_be -->\n```bash\nls\n```\n"
    )
    found = [problems(block) for block in page_blocks(page, "page.md")]
    assert [len(each) for each in found] == [1, 1, 0, 1, 0]
    assert "neither run by a test" in found[0][0]
    assert "holds nothing the suite cannot run" in found[1][0]
    assert "does not exist" in found[3][0]


def test_a_block_right_after_another_needs_its_own_marker() -> None:
    page = ("Not run by the test suite (a cluster).\n\n```bash\nhelm list\n```\n"
            "```bash\nhelm list\n```\n")
    first, second = page_blocks(page, "page.md")
    assert problems(first) == [] and problems(second) != []

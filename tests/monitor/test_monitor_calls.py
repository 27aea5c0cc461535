"""Normalising tool calls: error signatures ignore paths, numbers and hashes, not meaning."""

from __future__ import annotations

from cortexgraph.activation.monitor.calls import (
    ToolCall,
    error_signature,
    make_call,
    normalize_text,
    similarity,
)


def test_normalize_strips_paths_numbers_hashes_and_ids():
    text = (
        "File /home/ann/proj/app/x.py, line 42: KeyError 'id' at 0x7f3a9c "
        "commit 9e8d7c6b in 3f2b8c1e-9d4a-4e7b-8f1a-2c3d4e5f6a7b"
    )
    out = normalize_text(text)
    assert "/home" not in out and "42" not in out and "9e8d7c6b" not in out
    assert "keyerror 'id'" in out
    assert out.count("<path>") == 1 and "<id>" in out


def test_same_error_elsewhere_has_the_same_signature():
    a = "E   ImportError: cannot import name 'x' from 'app' (/tmp/a1/app/__init__.py)\n1 error in 0.31s"
    b = "E   ImportError: cannot import name 'x' from 'app' (/var/b2/app/__init__.py)\n1 error in 0.29s"
    assert error_signature(a) == error_signature(b)


def test_a_different_error_has_a_different_signature():
    a = "E   ImportError: cannot import name 'x' from 'app'"
    b = "E   ImportError: cannot import name 'y' from 'app'"
    c = "E   AttributeError: module 'app' has no attribute 'x'"
    assert len({error_signature(a), error_signature(b), error_signature(c)}) == 3


def test_fixing_one_of_many_failures_changes_the_signature():
    many = "\n".join(f"FAILED tests/test_a.py::test_{n} - AssertionError" for n in "abcdef")
    fewer = "\n".join(f"FAILED tests/test_a.py::test_{n} - AssertionError" for n in "bcdef")
    assert error_signature(many) != error_signature(fewer)


def test_failure_hook_payload_becomes_a_failed_call_with_signature():
    call = make_call(
        "Bash",
        {"command": "npm  test", "description": "run the tests"},
        None,
        ts=10,
        error="Exit code 1\nnpm ERR! Test failed.",
    )
    assert call.failed and call.error_sig and call.args == "npm test"
    assert "npm ERR! Test failed." in call.excerpt


def test_successful_bash_is_not_failed_and_description_is_ignored():
    a = make_call("Bash", {"command": "ls", "description": "list"}, {"stdout": "a\nb"}, ts=1)
    b = make_call("Bash", {"command": "ls", "description": "see files"}, {"stdout": "a\nb"}, ts=2)
    assert not a.failed and a.error_sig == ""
    assert (a.args, a.outcome) == (b.args, b.outcome)


def test_response_flags_mark_failures():
    assert make_call("X", {}, {"is_error": True, "content": [{"text": "boom"}]}, ts=1).failed
    assert make_call("Bash", {"command": "x"}, {"stdout": "", "exit_code": 2}, ts=1).failed
    assert not make_call("Bash", {"command": "x"}, {"stdout": "", "exit_code": 0}, ts=1).failed


def test_edits_to_different_places_are_not_near_identical():
    a = make_call(
        "Edit", {"file_path": "/p/a.py", "old_string": "x = 1", "new_string": "x = 2"}, None, ts=1
    )
    b = make_call(
        "Edit", {"file_path": "/p/a.py", "old_string": "x = 2", "new_string": "x = 3"}, None, ts=2
    )
    same = make_call(
        "Edit", {"file_path": "/p/a.py", "old_string": "x = 1", "new_string": "x = 2"}, None, ts=3
    )
    assert similarity(a.arg_tokens, b.arg_tokens) < 0.9
    assert similarity(a.arg_tokens, same.arg_tokens) == 1.0


def test_tool_call_json_round_trip():
    call = make_call("Bash", {"command": "make"}, None, ts=5.5, error="make: *** Error 2")
    assert ToolCall.from_json(call.to_json()) == call

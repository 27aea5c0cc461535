"""A JSON-RPC line the SDK cannot take is answered with its id when the id is readable (issue
30, Low): ``params`` sent as a string got -32600 with a null id."""

from __future__ import annotations

import pytest
from mcp import types
from pydantic import ValidationError

from cortexgraph.mcp_server.stdio import error_reply


def _reply(line: str):
    with pytest.raises(ValidationError) as caught:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    return error_reply(caught.value)


@pytest.mark.parametrize("params", ['"x"', "[1, 2]", "7"])
def test_a_request_with_bad_params_is_answered_with_its_id(params):
    reply = _reply('{"jsonrpc":"2.0","id":5,"method":"tools/list","params":' + params + "}")
    assert reply is not None and (reply.id, reply.error.code) == (5, -32600)


def test_a_notification_with_bad_params_gets_no_answer():
    assert _reply('{"jsonrpc":"2.0","method":"notifications/initialized","params":"x"}') is None

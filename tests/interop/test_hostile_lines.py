"""Request lines serde_json alone would refuse: lone surrogates, invalid
UTF-8, deep nesting, numbers beyond the double range, unreadable lines with
an id. Each is answered, byte for byte as the official runtime answers it,
except where README ("Compatibility") documents a deliberate difference."""

from __future__ import annotations

import json

import pytest
import zstandard

from interop_support import RawClient, first, run_bounded, session_events, text_of
from test_differential import official_bin  # noqa: F401  (fixture)

SURROGATES = "a\ud800b \udfff c \U0001F600 d\udbff"
UNKNOWN = "unknown DeepSeek Harness SDK runtime method: "


def test_sdk_prompt_with_lone_surrogates_comes_back_exactly(harness):
    session = harness.start_session("session-surrogate")
    result = run_bounded(session, SURROGATES)
    assert result.final_response == SURROGATES
    user = first(result.events, "user/message")
    assert user["data"]["content"] == [{"type": "text", "text": SURROGATES}]
    # A second turn on the same session (the history holds them too).
    again = run_bounded(session, "again \udc00")
    assert again.final_response == "again \udc00"


def test_lone_surrogates_survive_resume(raw_echo, make_raw, workspace, dsh_home):
    line = json.dumps({"jsonrpc": "2.0", "id": "p", "method": "session/prompt",
                       "params": {"sessionId": "s-keep", "contentBlocks": [{"type": "text", "text": SURROGATES}]}})
    raw_echo.send_raw(line + "\n")
    raw_echo.response_to("p")
    raw_echo.status("s-keep", "idle")
    assert raw_echo.shutdown() == 0
    again = make_raw()
    again.initialize(workspace)
    assert "result" in again.request("session/resume", {"sessionId": "s-keep"}, id="r")
    start = len(again.frames)
    again.prompt("s-keep", "second")
    again.status("s-keep", "idle", start=start)
    events = session_events(again.frames[start:], "s-keep")
    assert text_of(first(events, "assistant/message")["data"]["message"]) == "second"
    assert again.shutdown() == 0
    # On disk they are \udXXX escapes, as the official runtime writes them.
    (log,) = dsh_home.rglob("s-keep/session.v4.jsonl.zstd")
    data = zstandard.ZstdDecompressor().stream_reader(log.read_bytes(), read_across_frames=True).read()
    assert b"a\\ud800b \\udfff c \xf0\x9f\x98\x80 d\\udbff" in data
    assert "\U0010ffff".encode("utf-8") not in data


def nest(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# Lines both runtimes answer identically (measured against the official).
SAME = [
    rb'{"jsonrpc":"2.0","id":"sur","method":"nope\ud800x"}',
    rb'{"jsonrpc":"2.0","id":"sur-id\udc00","method":"nope"}',
    rb'{"jsonrpc":"2.0","id":"pair","method":"nope\ud83d\ude00 \udbff\udfff"}',
    b'{"jsonrpc":"2.0","id":"u8","method":"nope\xff\xfe"}',
    b'{"jsonrpc":"2.0","id":"u8-id\xc3","method":"nope"}',
    b'{"jsonrpc":"2.0","id":"u8-cut","method":"nope\xf0\x9f\x98"}',
    b'{"jsonrpc":"2.0","id":"deep","method":"nope","params":{"a":' + nest(200) + b"}}",
    b'{"jsonrpc":"2.0","id":"deep-512","method":"nope","params":' + nest(511) + b"}",
    b'{"jsonrpc":"2.0","id":"big","method":"nope","params":{"a":1e400,"b":-1e400,"c":' + b"9" * 400 + b"}}",
    b'{"jsonrpc":"2.0","id":1e400,"method":"nope"}',
    b'{"jsonrpc":"2.0","id":-1e400,"method":"nope"}',
    b'{"jsonrpc":"2.0","id":1.0,"method":"nope"}',
    b'{"jsonrpc":"2.0","id":1e2,"method":"nope"}',
    b'{"jsonrpc":"2.0","id":-0,"method":"nope"}',
    b'{"jsonrpc":"2.0","id":12345678901234567,"method":"nope"}',
    b'{"jsonrpc":"2.0","id":12345678901234567890123,"method":"nope"}',
]

# Lines the official runtime leaves unanswered (its JSON.parse throws) and
# dsh answers, so that a client waiting on the id does not wait forever.
ANSWERED_ONLY_BY_DSH = [
    (b'{"jsonrpc":"2.0","id":"cut","method":"nope"',
     "invalid request: EOF while parsing an object at line 1 column 43"),
    (b'{"jsonrpc":"2.0","id":"esc","method":"no\\xpe"}',
     "invalid request: invalid escape at line 1 column 42"),
    (b'{"jsonrpc":"2.0","id":"ctl","method":"no\x01pe"}',
     "invalid request: control character (\\u0000-\\u001F) found while parsing a string at line 1 column 41"),
]


def answers(binary, lines: list[bytes], base_dir, tag) -> list[bytes]:
    """Raw answer lines to `lines` then a sentinel, from a fresh runtime."""
    home = base_dir / f"{tag}-home"
    dsh_home = base_dir / f"{tag}-dsh-home"
    home.mkdir()
    dsh_home.mkdir()
    client = RawClient(binary, dsh_home=dsh_home, cwd=base_dir, home=home)
    try:
        for line in lines:
            client.send_raw(line + b"\n")
        client.request("nope", id="sentinel")
        return client.raw_lines[:-1]
    finally:
        client.kill()


def test_hostile_lines_are_answered_as_the_official_runtime_answers_them(official_bin, dsh_bin, base_dir):  # noqa: F811
    theirs = answers(official_bin, SAME, base_dir, "official")
    ours = answers(dsh_bin, SAME, base_dir, "ours")
    assert len(theirs) == len(SAME)
    assert ours == theirs
    # What the official runtime does with them, as measured.
    assert json.loads(theirs[0])["error"]["message"] == UNKNOWN + "nope\ud800x"
    assert rb"nope\ud800x" in theirs[0]
    assert "nope\ufffd\ufffd" in json.loads(theirs[3])["error"]["message"]
    assert [json.loads(line)["id"] for line in theirs[9:16]] == [
        None, None, 1, 100, 0, 12345678901234568, 1.2345678901234568e22]


def test_unreadable_lines_with_an_id_are_answered_only_by_dsh(official_bin, dsh_bin, base_dir):  # noqa: F811
    lines = [line for line, _ in ANSWERED_ONLY_BY_DSH]
    assert answers(official_bin, lines, base_dir, "official") == []
    ours = [json.loads(line) for line in answers(dsh_bin, lines, base_dir, "ours")]
    assert ours == [
        {"jsonrpc": "2.0", "id": json.loads(line[line.index(b'"id":') + 5:line.index(b',"method"')]),
         "error": {"code": -32603, "message": message}}
        for line, message in ANSWERED_ONLY_BY_DSH
    ]


@pytest.mark.parametrize("depth", [513, 100_000])
def test_nesting_beyond_512_levels_is_refused_with_an_answer(official_bin, dsh_bin, base_dir, depth):  # noqa: F811
    line = b'{"jsonrpc":"2.0","id":"deep","method":"nope","params":' + nest(depth) + b"}"
    theirs = [json.loads(x) for x in answers(official_bin, [line], base_dir, "official")]
    ours = [json.loads(x) for x in answers(dsh_bin, [line], base_dir, "ours")]
    assert theirs == [{"jsonrpc": "2.0", "id": "deep", "error": {"code": -32603, "message": UNKNOWN + "nope"}}]
    assert ours == [{"jsonrpc": "2.0", "id": "deep", "error": {
        "code": -32603, "message": "invalid request: nesting deeper than 512 levels"}}]

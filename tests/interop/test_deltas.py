"""Streaming deltas (dsh's extension, issue 28): `session.delta`
notifications for a client that declares `deltas`, carrying a reply's
reasoning, text and tool-call arguments as the provider streams them and a
`bash` call's output as the command writes it. Joined, they equal what the
step's events commit; a slow client gets fewer, larger deltas; a client
that does not ask sees the official stream unchanged."""

from __future__ import annotations

import json
import time
from collections import defaultdict

import pytest

from interop_support import clean_env, session_events
from test_sessions import KEY

SID = "deltas"
CAPS = {"protocolVersion": "dsh-1", "clientCapabilities": {"deltas": True}}


def deltas(frames: list[dict], session: str = SID) -> list[dict]:
    return [f["params"] for f in frames if f.get("method") == "session.delta" and f["params"]["sessionId"] == session]


def joined(frames: list[dict], session: str = SID) -> dict[tuple, str]:
    """Each stream's deltas joined: (turn, step, attempt, kind, index, callId) -> text."""
    out: dict[tuple, str] = defaultdict(str)
    for d in deltas(frames, session):
        out[(d["turn"], d["step"], d.get("attempt", 0), d["kind"], d["index"], d.get("callId"))] += d["delta"]
    return dict(out)


def committed_blocks(events: list[dict]) -> dict[tuple, str]:
    """What each step's assistant/message commits, keyed like `joined`."""
    out = {}
    for e in events:
        if e["type"] != "assistant/message":
            continue
        turn, step = e["data"]["turn"], e["data"]["step"]
        for index, block in enumerate(e["data"]["message"]["content"]):
            if block["type"] == "tool-call":
                out[(turn, step, 0, "tool-arguments", index, block["id"])] = block["arguments"]
            else:
                out[(turn, step, 0, block["type"], index, None)] = block["text"]
    return out


def deepseek_raw(make_raw, fake_model, dsh_home, home, workspace, replies, caps=CAPS):
    server = fake_model(replies)
    env = clean_env(dsh_home, home, DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=KEY,
                    DSH_RETRY_INITIAL_MS="5", DSH_RETRY_MAX_MS="40")
    raw = make_raw(env=env)
    raw.initialize(workspace, model="deepseek-v4-flash", provider="deepseek-official", **caps)
    return raw, server


def test_reasoning_text_and_tool_arguments_join_to_the_committed_blocks(make_raw, fake_model, dsh_home, home, workspace):
    arguments = json.dumps({"description": "d", "command": "echo " + "é" * 40})
    replies = [
        {"reasoning": ["Let me ", "think ", "about ", "it."],
         "blocks": [{"text": ["I will ", "run ", "a command."]},
                    {"tool_call": {"id": "call-1", "name": "bash", "arguments": arguments}}],
         "delta_gap_ms": 15},
        {"text": ["All ", "done, ", "ünïcödé ", "included."], "delta_gap_ms": 15},
    ]
    raw, _ = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace, replies)
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    events = session_events(raw.frames, SID)
    committed = committed_blocks(events)
    streamed = {k: v for k, v in joined(raw.frames).items() if k[3] != "tool-output"}
    assert streamed == committed
    assert len(committed) == 4
    # Paced 15 ms apart, the fragments came as several deltas, each before
    # the event that commits its block.
    assert len(deltas(raw.frames)) > len(committed)
    order = [f["params"]["event"]["type"] if f.get("method") == "session.event" else "delta"
             for f in raw.frames if f.get("method") in ("session.event", "session.delta")]
    first_message = order.index("assistant/message")
    assert "delta" in order[:first_message]


def test_bash_output_streams_before_the_call_result(make_raw, fake_model, dsh_home, home, workspace):
    command = "printf 'one\\n'; sleep 0.3; printf 'two\\n'; printf 'oops' >&2; sleep 0.1; printf 'three'"
    replies = [{"blocks": [{"tool_call": {"id": "call-b", "name": "bash",
                                           "arguments": {"description": "d", "command": command}}}]},
               {"text": "ok"}]
    raw, _ = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace, replies)
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    streams = joined(raw.frames)
    assert streams[(1, 1, 0, "tool-output", 1, "call-b")] == "one\ntwo\nthree"
    assert streams[(1, 1, 0, "tool-output", 2, "call-b")] == "oops"
    result = next(e for e in session_events(raw.frames, SID) if e["type"] == "tool/result")
    assert result["data"]["message"]["content"][0]["text"] == "one\ntwo\nthree\n[stderr]\noops"
    # The first line came out while the command still ran: before the
    # result, as its own delta.
    output = [d for d in deltas(raw.frames) if d["kind"] == "tool-output" and d["index"] == 1]
    assert output[0]["delta"] == "one\n" and len(output) >= 2
    positions = {id(f): i for i, f in enumerate(raw.frames)}
    first_output = next(f for f in raw.frames if f.get("method") == "session.delta" and f["params"]["kind"] == "tool-output")
    result_frame = next(f for f in raw.frames if f.get("method") == "session.event" and f["params"]["event"]["type"] == "tool/result")
    assert positions[id(first_output)] < positions[id(result_frame)]


def test_a_16_mib_tool_call_streams_whole(make_raw, fake_model, dsh_home, home, workspace):
    size = 16 << 20
    replies = [{"hostile": {"kind": "huge-tool-call", "name": "no_such_tool", "arguments": {"note": "n"},
                            "field": "bulk", "bytes": size}},
               {"text": "ok"}]
    raw, _ = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace, replies)
    raw.prompt(SID, "go")
    raw.status(SID, "idle", timeout=120)
    events = session_events(raw.frames, SID)
    committed = committed_blocks(events)
    streamed = joined(raw.frames)
    (key,) = [k for k in committed if k[3] == "tool-arguments"]
    assert len(streamed[key]) > size
    assert streamed[key] == committed[key]


def test_a_retried_attempt_streams_again_under_the_next_number(make_raw, fake_model, dsh_home, home, workspace):
    replies = [{"text": ["par", "tial"], "reset": True}, {"text": ["whole ", "reply"]}]
    raw, _ = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace, replies)
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    streams = joined(raw.frames)
    assert streams[(1, 1, 0, "text", 0, None)] == "par"
    assert streams[(1, 1, 1, "text", 0, None)] == "whole reply"
    message = next(e for e in session_events(raw.frames, SID) if e["type"] == "assistant/message")
    assert message["data"]["message"]["content"] == [{"type": "text", "text": "whole reply"}]


def test_a_client_that_does_not_ask_gets_no_deltas_and_the_same_events(make_raw, fake_model, dsh_home, home, workspace):
    replies = [{"text": ["a", "b", "c"], "delta_gap_ms": 5}]
    plain, _ = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace, replies, caps={})
    plain.prompt("s-plain", "go")
    plain.status("s-plain", "idle")
    streaming, _ = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace, replies)
    streaming.prompt("s-stream", "go")
    streaming.status("s-stream", "idle")
    assert deltas(plain.frames, "s-plain") == []
    assert deltas(streaming.frames, "s-stream") != []

    def shape(events):
        return [(e["type"], e["seq"]) for e in events]

    assert shape(session_events(plain.frames, "s-plain")) == shape(session_events(streaming.frames, "s-stream"))
    assert [f.get("method") for f in plain.frames if "method" in f] == \
        [f.get("method") for f in streaming.frames if "method" in f and f["method"] != "session.delta"]


def test_a_stalled_client_gets_fewer_larger_deltas_and_misses_nothing(make_raw, fake_model, dsh_home, home, workspace):
    # 4 MiB in 2000 deltas: more than the protocol pipe holds (1 MiB).
    pieces = [f"{i:05d}" + "x" * 2043 for i in range(2000)]
    replies = [{"text": pieces, "delta_gap_ms": 1}]
    fast, _ = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace, replies)
    fast.prompt("s-fast", "go")
    fast.status("s-fast", "idle", timeout=120)
    slow, _ = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace, replies)
    slow.pause_reading()
    slow.send_request("session/prompt", {"sessionId": "s-slow", "contentBlocks": [{"type": "text", "text": "go"}]})
    # Long enough for the whole reply to stream while the pipe is full.
    time.sleep(5)
    slow.resume_reading()
    slow.status("s-slow", "idle", timeout=120)
    whole = "".join(pieces)
    assert joined(fast.frames, "s-fast") == {(1, 1, 0, "text", 0, None): whole}
    assert joined(slow.frames, "s-slow") == {(1, 1, 0, "text", 0, None): whole}
    fast_sizes = [len(d["delta"]) for d in deltas(fast.frames, "s-fast")]
    slow_sizes = [len(d["delta"]) for d in deltas(slow.frames, "s-slow")]
    # Fewer deltas, and one larger than the whole pipe: only the writer's
    # lane joining the stream's waiting deltas makes one that size (how
    # many the reading client gets depends on the machine's load).
    assert len(slow_sizes) < len(fast_sizes), (len(slow_sizes), len(fast_sizes))
    assert max(slow_sizes) > 1 << 20, (max(slow_sizes), max(fast_sizes))


def test_the_official_sdk_streams_deltas_and_usage_as_the_readme_shows(dsh_bin, dsh_home, workspace, fake_model, home):
    from deepseek_harness import DeepSeekHarness
    from pydantic import BaseModel

    class Any(BaseModel, extra="allow"):
        pass

    server = fake_model([{"text": ["Streamed ", "by ", "the SDK."], "delta_gap_ms": 20,
                          "usage": {"input_tokens": 100, "output_tokens": 5, "cache_hit_tokens": 900}}])
    home.mkdir(exist_ok=True)
    harness = DeepSeekHarness(dsh_bin=str(dsh_bin), dsh_home=str(dsh_home), cwd=str(workspace),
                              base_url=server.base_url, api_key=KEY, env={"HOME": str(home)})
    harness.start()
    try:
        harness.client.request("initialize", {"cwd": str(workspace), "provider": "deepseek-official",
                                              "model": "deepseek-v4-flash",
                                              "clientCapabilities": {"deltas": True, "usage": True}},
                               response_model=Any)
        shown, costs = [], []

        def show(n):
            if n.method == "session.delta" and n.payload["kind"] == "text":
                shown.append(n.payload["delta"])
            elif n.method == "session.usage" and n.payload["turnEnded"]:
                costs.append(n.payload["turnTotal"]["costUsd"])

        result = harness.start_session("s1").run("Say it in pieces", on_notification=show)
        assert "".join(shown) == result.final_response == "Streamed by the SDK."
        assert len(shown) > 1
        expected = (900 * 0.028 + 100 * 0.28 + 5 * 0.42) / 1e6
        assert costs == [pytest.approx(expected)]
        usage = harness.client.request("session/usage", {"sessionId": "s1"}, response_model=Any)
        assert usage.total["costUsd"] == pytest.approx(expected)
    finally:
        harness.close()
